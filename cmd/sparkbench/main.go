// Command sparkbench is the workbench: with no arguments it opens the window; its
// sub-commands do the same work headless.
package main

import (
	"io"
	"os"

	_ "sparkbench/cmd/sparkbench/localefix" // first: before Fyne reads the locale
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a sub-command and returns the exit status: 0 ok, 1 failed, 2 bad usage or input.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return cmdGUI(nil, stdout, stderr)
	}
	name, rest := args[0], args[1:]
	for _, c := range commands() {
		if c.name == name {
			if len(rest) > 0 && isHelpFlag(rest[0]) && groupHelp(c, stdout) {
				return 0
			}
			return c.run(rest, stdout, stderr)
		}
	}
	switch name {
	case "-h", "-help", "--help":
		return cmdHelp(nil, stdout, stderr)
	case "-version", "--version":
		return cmdVersion(rest, stdout, stderr)
	}
	if len(name) > 0 && name[0] == '-' { // flags for the window, e.g. sparkbench --llama-dir D
		return cmdGUI(args, stdout, stderr)
	}
	return unknownCommand(name, stderr)
}
