//go:build !linux

package quantrun

import "errors"

// freeBytes is not measured off Linux: the disk check is skipped there.
func freeBytes(string) (int64, error) { return 0, errors.New("free space not measured on this system") }
