// Package workbench is the service layer the CLI and the window both call, with typed
// arguments and typed results, on the process's one notebook connection. It holds today the
// receipt export (ExportReceipt: a notebook study or a capacity run folder to a folder or a
// .tar.gz, assembled in memory and written at once, cancellable until the write) and bundle
// verification (VerifyBundle); the other verbs (register, run, show, amend, verdict, finding,
// import) still live in cmd/sparkbench and move here one by one.
package workbench
