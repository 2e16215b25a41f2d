// Package vocab holds the words a run is written in — events, leg classes, stop causes, row
// statuses, the machine — and nothing that starts a process. The process code (package runner)
// produces these values; plans, receipts, the store and the charts read them, importing this
// package alone. runner re-exports every name here, so runner.ClassOK and vocab.ClassOK are the
// same constant and runner.Event the same type.
package vocab
