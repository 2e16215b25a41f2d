//go:build race

package loadgen

// raceEnabled: the race detector slows every goroutine switch several times over, so timing
// targets are logged, not held, under -race.
const raceEnabled = true
