// Package workbench is the service layer the CLI and the window both call, with typed
// arguments and typed results, on the process's one notebook connection. Its calls print
// nothing: cmd/sparkbench turns flags into requests and results into its lines and exit codes,
// and the window's services (cmd/sparkbench/gui_*.go) hand the results to ui.
//
//   - throughput (throughput.go): ValidateThroughput, RegisterThroughput (a plan file, or a plan
//     built in the window, written to DATA/plans first), RunThroughput (run or resume; a
//     cancelled ctx stops it), ShowThroughput, CompareThroughput (CompareThroughputWith: the
//     statistics, the A/A control; AAControlThroughput: one study against itself);
//   - capacity and concurrency (capacity.go): ValidateCapacity, RegisterCapacity, CapacityEngine and RunCapacity
//     (run or resume; --fresh; a cancelled ctx stops it), ShowCapacity, CapacityPlan;
//   - on a registered throughput study (annotate.go): FindThroughput, Amend, RecordVerdict
//     (VerdictRequest checks the flags), AddFinding;
//   - the notebook (notebook.go): VerifyNotebook (chain, anchor, an expected head), Import,
//     ReadImportFiles; file hashes through its cache (hash.go: CachedHash, RegistrationHash);
//   - receipts (receipt.go, verify.go): ExportReceipt (a folder or .tar.gz, cancellable until
//     the write), VerifyBundle;
//   - the registry of study kinds (kinds.go: Kind, RegisterKind), through which the CLI's shared
//     verbs take a kind registered in its own package.
//
// Errors are typed where the caller decides by them: *RequestError (bad input as given: the
// CLI exits 2), *FlagsRefusedError, *NotStartedError, ErrCancelled, and the study packages'
// *study.RefusedError, study.ErrStopped, study.ErrAmendmentRefused.
//
// The built-in kinds register with the registry (builtin_kinds.go) over these calls: throughput
// validates, registers, runs, shows and exports through Kind (the `study` verbs' default kind),
// capacity validates, registers, runs (CapacityRunOptions), shows and exports (the `capacity`
// verbs').
package workbench
