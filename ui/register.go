package ui

import (
	"context"
	"fmt"
	"strings"

	"sparkbench/app"
)

// modelHashes hashes model files through the library (cached in the notebook), each path once.
// A file the library calls MISMATCH is refused, naming both hashes. Without a library nothing
// is hashed (the plan's own SHA-256s stand).
func modelHashes(ctx context.Context, lib app.ModelLibrary, paths []string) (map[string]string, error) {
	sums := map[string]string{}
	if lib == nil {
		return sums, nil
	}
	for _, path := range paths {
		if _, done := sums[path]; done {
			continue
		}
		st, err := lib.Hash(ctx, path, nil)
		if err != nil {
			return nil, fmt.Errorf("hash %s: %w", path, err)
		}
		if st.Status == "MISMATCH" {
			return nil, fmt.Errorf("%s is MISMATCH: its SHA-256 %s differs from the expected %s; download it again, or fix the expected hash in Models", path, st.SHA256, st.Expected)
		}
		sums[path] = st.SHA256
	}
	return sums, nil
}

// registerInBackground is Register without the confirmation: the form's plan (or its parse
// errors), prepared and registered off the UI goroutine; done runs on the UI goroutine.
func registerInBackground[P, R any](plan P, errs []string, prepare func(context.Context, P) (P, string, error),
	register func(context.Context, P, string) (R, error), done func(R, error)) {
	var none R
	if len(errs) > 0 {
		done(none, fmt.Errorf("%s", strings.Join(errs, "; ")))
		return
	}
	go func() {
		ctx := context.Background()
		p, sum, err := prepare(ctx, plan)
		reg := none
		if err == nil {
			reg, err = register(ctx, p, sum)
		}
		onUI(func() { done(reg, err) })
	}()
}

// errNoRegistrar says registering is unavailable: the window has no notebook.
var errNoRegistrar = fmt.Errorf("registering is unavailable: the notebook is not open (see the Bench section)")

// checkRegistered is the error when the notebook registered another SHA-256 than the one the
// confirmation showed (nil when they are the same).
func checkRegistered(got, shown string, id int64) error {
	if got == shown {
		return nil
	}
	return fmt.Errorf("the notebook registered plan SHA-256 %s, not the %s shown before registering: study %d holds the registered plan; report this", got, shown, id)
}
