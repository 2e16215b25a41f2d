package study

import (
	"errors"
	"fmt"
	"os"
	"regexp"
)

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckFileRef checks a file a plan names at JSON path at (what says what it is: "the quality
// corpus"): a path; a SHA-256 of the right form (a missing one is a ProblemUnhashed, which the
// window fills in at Register); and, when hash is given, the file itself (relative paths start
// at planDir): there, not a folder, and hashing to that SHA-256.
func CheckFileRef(at, path, sha, what, planDir string, hash HashFunc) []Problem {
	errf := func(p, format string, a ...any) []Problem {
		return []Problem{{Path: p, Severity: SevError, Msg: fmt.Sprintf(format, a...)}}
	}
	if path == "" {
		return errf(at+".path", "empty; give %s's path", what)
	}
	switch {
	case sha == "":
		probs := errf(at+".sha256", "missing; put %s's SHA-256 here (`sparkbench model verify FILE` prints it)", what)
		probs[0].Code = ProblemUnhashed
		return probs
	case !sha256RE.MatchString(sha):
		return errf(at+".sha256", "%q is not a SHA-256 (want 64 lowercase hex digits)", sha)
	}
	if hash == nil {
		return nil
	}
	full := ResolvePath(planDir, path)
	st, err := os.Stat(full)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errf(at+".path", "%s does not exist; check the path (relative paths start at the plan's folder)", full)
	case err != nil:
		return errf(at+".path", "%v", err)
	case st.IsDir():
		return errf(at+".path", "%s is a folder; give %s file", full, what)
	}
	got, err := hash(full)
	if err != nil {
		return errf(at+".sha256", "hash %s: %v", full, err)
	}
	if got != sha {
		return errf(at+".sha256", "MISMATCH: %s hashes to %s, the plan expects %s; the file differs from the one you registered: fetch it again, or fix the expected hash", full, got, sha)
	}
	return nil
}
