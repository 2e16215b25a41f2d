package main

import (
	"context"
	"io"
	"path/filepath"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// cachedHash hashes model files through the notebook's cache, with progress on a terminal.
func cachedHash(ctx context.Context, nb *store.Notebook, stderr io.Writer) study.HashFunc {
	return workbench.CachedHash(ctx, nb, hashShow(stderr))
}

// registrationHash is workbench.RegistrationHash with progress on a terminal.
func registrationHash(ctx context.Context, nb *store.Notebook, stderr io.Writer) (hash study.HashFunc, commit func(context.Context) error) {
	return workbench.RegistrationHash(ctx, nb, hashShow(stderr))
}

// hashShow shows a file being hashed on stderr when it is a terminal (nil otherwise).
func hashShow(stderr io.Writer) workbench.HashShow {
	if !isTerminal(stderr) {
		return nil
	}
	return func(p hashing.Progress, done bool) {
		if done {
			fprintf(stderr, "\r\033[K")
			return
		}
		fprintf(stderr, "\rhashing %s: %5.1f%%", filepath.Base(p.Path), p.Fraction()*100)
	}
}
