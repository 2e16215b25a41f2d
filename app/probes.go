package app

import (
	"context"

	"sparkbench/runner/hashing"
	"sparkbench/runner/membw"
)

// The window reaches the file hasher and the memory-bandwidth probe through these names, so
// that ui imports nothing under runner/ (the architecture test holds it to that).
type (
	// HashProgress is how far a file's SHA-256 has got.
	HashProgress = hashing.Progress
	// HashStatus is a file's hash compared with the one its source publishes.
	HashStatus = hashing.Status
	// BandwidthOptions sizes the memory-bandwidth probe (zero: 3 x 256 MiB arrays, every core,
	// best of 10 trials).
	BandwidthOptions = membw.Options
	// BandwidthResult is what the probe measured (copy and STREAM-triad GB/s).
	BandwidthResult = membw.Result
)

// The hash statuses the window tells apart.
const (
	HashVerified = hashing.Verified
	HashMismatch = hashing.Mismatch
)

// HashFile streams path through SHA-256 (no cache); progress may be nil.
func HashFile(ctx context.Context, path string, progress func(HashProgress)) (string, error) {
	return hashing.File(ctx, path, progress)
}

// MeasureBandwidth runs the in-process memory-bandwidth probe (no process is started).
func MeasureBandwidth(ctx context.Context, o BandwidthOptions) (BandwidthResult, error) {
	return membw.Measure(ctx, o)
}

// CompareHash is the status of a computed hash against the expected one (PENDING when either
// is empty).
func CompareHash(computed, expected string) HashStatus { return hashing.Compare(computed, expected) }
