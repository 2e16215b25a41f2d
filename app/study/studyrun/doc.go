// Package studyrun runs registered throughput studies: the Engine expands a study's plan into
// legs, runs each through the runner's llama-bench queue (CV gates, canary, timeouts), streams
// every row into the notebook as it arrives and journals each prediction's verdict once the
// legs it reads are final. It is the half of the throughput kind that starts processes; the
// plans, verdicts and reports it works with are app/study's.
package studyrun
