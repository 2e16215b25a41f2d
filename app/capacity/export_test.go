package capacity

import "testing"

// Test helpers for the external test package (capacity_test), which can import the store.

// TagForTest is an environment entry unique to the test; no process carrying it may outlive it.
func TagForTest(t *testing.T) string { return tag(t) }

// WriteRunPlanForTest writes a one-candidate plan (and its prompt plan) into dir.
func WriteRunPlanForTest(t *testing.T, dir, id, model string, flags []string, slots, clients []int, warmups, measured, nPredict int) string {
	return writeRunPlan(t, dir, []runCand{{id, model, flags, Markers{}}}, slots, clients, warmups, measured, nPredict)
}

// AssembleFromArgsForTest is what `capacity assemble ARGS…` writes.
func AssembleFromArgsForTest(t *testing.T, args []string) []byte { return assembleFromArgs(t, args) }

// RequestSpanForTest is the first send and last end (ms) of a request file.
func RequestSpanForTest(t *testing.T, path string) (float64, float64) { return requestSpan(t, path) }

// HashFileForTest is a study.HashFunc.
var HashFileForTest = hashFile

// LifetimeDirForTest is a lifetime's folder in the run folder.
var LifetimeDirForTest = lifetimeDir
