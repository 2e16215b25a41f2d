// Package workbench is the service layer the CLI and the window both call, with typed
// arguments and typed results, on the process's one notebook connection. It holds today the
// receipt export (ExportReceipt: a notebook study or a capacity run folder to a folder or a
// .tar.gz, assembled in memory and written at once, cancellable until the write), bundle
// verification (VerifyBundle), and the registry of study kinds (Kind, RegisterKind) through
// which the CLI's shared verbs take a kind registered in its own package. Throughput and
// capacity register, run and show through cmd/sparkbench still; amend, verdict, finding and
// import too; they move here one by one.
package workbench
