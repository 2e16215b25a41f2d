package bundle

import (
	"fmt"

	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
)

// Run folder files of a serving plan (app/capacity/caprun writes them).
const (
	runServingFile = "serving.jsonl"
	runHarnessFile = "harness.json"
)

// servingFiles adds a serving plan's open-loop records (one per server lifetime) and the run's
// harness floor; a plan without a serving block has none, and its bundle is unchanged.
func (rf runFolder) servingFiles(plan *capacity.Plan, dirs capacity.LifetimeDirs, ci *receipt.CapacityIndex, files receipt.Files, red *Redactor) error {
	if plan.Serving == nil {
		return nil
	}
	ci.Serving = map[string]string{}
	for _, lt := range capacity.Schedule(plan, "") {
		rel := dirs.Of(lt.Key) + "/" + runServingFile
		b, err := rf.read(rel)
		if err != nil {
			return fmt.Errorf("capacity run folder %s: lifetime %s has no serving records: %w", rf.dir, lt.Key, err)
		}
		files[rel] = red.Bytes(rel, b)
		ci.Serving[lt.Key.String()] = rel
	}
	b, err := rf.read(runHarnessFile)
	if err != nil {
		return fmt.Errorf("capacity run folder %s: no harness floor: %w", rf.dir, err)
	}
	files[runHarnessFile] = red.Bytes(runHarnessFile, b)
	ci.Harness = runHarnessFile
	return nil
}
