package store

import (
	"errors"
	"os"
	"path/filepath"
)

// EnvNotebook names the environment variable that overrides the notebook location.
const EnvNotebook = "SPARKBENCH_NOTEBOOK"

// DefaultPath returns where the notebook lives when no --notebook flag is given:
// $SPARKBENCH_NOTEBOOK if set, else ${XDG_DATA_HOME:-$HOME/.local/share}/sparkbench/notebook.db.
// It does not create anything.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvNotebook); p != "" {
		return p, nil
	}
	dataHome := os.Getenv("XDG_DATA_HOME")
	if dataHome == "" || !filepath.IsAbs(dataHome) {
		// The XDG spec says relative values are invalid and must be ignored.
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return "", errors.New("cannot find the notebook: neither XDG_DATA_HOME nor HOME is set; set " + EnvNotebook + " or pass --notebook PATH")
		}
		dataHome = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dataHome, "sparkbench", "notebook.db"), nil
}
