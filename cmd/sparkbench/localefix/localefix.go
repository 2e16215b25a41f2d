// Package localefix replaces the POSIX locale ("C", "C.UTF-8", "POSIX") by en_US.UTF-8 in this
// process's environment before Fyne's lang package initialises: Fyne cannot parse "C" as a
// language tag and logs an error on every start, CLI commands included. Real locales are kept.
// It has no imports besides os and strings so that it initialises early; main imports it first.
package localefix

import (
	"os"
	"strings"
)

func init() { Apply() }

// Apply rewrites LC_ALL, LC_MESSAGES and LANG where they name the POSIX locale.
func Apply() {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"} {
		v := os.Getenv(k)
		if v == "" {
			continue
		}
		base, _, _ := strings.Cut(v, ".")
		if base == "C" || base == "POSIX" {
			_ = os.Setenv(k, "en_US.UTF-8")
		}
	}
}
