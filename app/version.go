package app

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is sparkbench's release; FyneApp.toml's [Details] Version must match (a test checks).
const Version = "0.1.0"

// AppID is the Fyne application ID (also in FyneApp.toml); preferences are stored under it.
const AppID = "dev.sparkbench.app"

// VersionString is what `sparkbench version` prints: release, VCS revision when the binary
// was built from a checkout, and the Go toolchain.
func VersionString() string {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		var r, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				r = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(r) > 12 {
			r = r[:12]
		}
		if r != "" {
			rev = " (" + r + dirty + ")"
		}
	}
	return fmt.Sprintf("sparkbench %s%s %s %s/%s", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
