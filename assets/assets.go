// Package assets holds the files bundled into the sparkbench binary: the application icon
// (also named by FyneApp.toml for `fyne package`).
package assets

import (
	_ "embed"

	"fyne.io/fyne/v2"
)

//go:embed icon.png
var iconPNG []byte

// Icon is the application icon, a 256x256 PNG.
var Icon = fyne.NewStaticResource("icon.png", iconPNG)
