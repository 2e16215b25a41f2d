// Package layering states sparkbench's import rules; its test checks the tree against them.
// It holds no code: the test reads the real tree's imports (`go list -deps`) and fails, naming
// the chain of imports, when one breaks a rule. The rules:
//
//   - a pure package (plans, analysis, canon, receipts, bundles, charts, plots, the run
//     vocabulary) reaches no process code: not github.com/creack/pty, not os/exec, and none of
//     runner, runner/llamacpp, runner/server, runner/loadgen, runner/quality;
//   - the store reaches no process code either (the same list);
//   - ui imports nothing under runner/ and not the store: it gets both through app and the
//     services cmd wires in;
//   - only cmd/... imports Fyne's app package (the GL driver).
package layering
