package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// The writer goroutine owns the writer connection. Everything that writes goes through it,
// in order: samples are buffered and committed in batches (at most FlushInterval after the
// first pending one, or when MaxBatch rows are pending); any other write first commits the
// pending batch, then runs in its own transaction. So a leg's FinishLeg always sees all of
// its samples, and an app crash loses at most the last uncommitted batch.

type writeReq struct {
	bench  []pendingBench
	reqs   []pendingRequest
	chunk  *pendingChunk
	fn     func(tx *sql.Tx) error
	flush  bool
	legErr int64 // ask for a leg's sticky error (with flush)
	reply  chan error
	ctx    context.Context // fn's: one that ended before fn's transaction began does not run it
}

// StoppedError is a write that did not run: its context ended (a stop signal) before its
// transaction began, so nothing of it was recorded.
type StoppedError struct{ Cause error }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped (%v) before it was written: nothing of it was recorded", e.Cause)
}

func (e *StoppedError) Unwrap() error { return context.Canceled }

func stoppedBy(ctx context.Context) error {
	if ctx == nil || ctx.Err() == nil {
		return nil
	}
	return &StoppedError{Cause: context.Cause(ctx)}
}

type writer struct {
	n        *Notebook
	db       *sql.DB
	reqs     chan writeReq
	done     chan struct{}
	interval time.Duration
	maxBatch int

	mu      sync.Mutex // guards closed
	closed  bool
	closeWG sync.WaitGroup

	// owned by the goroutine
	bench    []pendingBench
	requests []pendingRequest
	chunks   []pendingChunk
	timer    *time.Timer
	armed    bool
	cfgCache map[benchConfig]int64
	legRows  map[int64]int64
	finalErr error

	errMu   sync.Mutex
	legErrs map[int64]error // sticky commit failures, read by SampleWriters
}

func newWriter(n *Notebook) *writer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &writer{
		n:        n,
		db:       n.wdb,
		reqs:     make(chan writeReq, 256),
		done:     make(chan struct{}),
		interval: n.opts.FlushInterval,
		maxBatch: n.opts.MaxBatch,
		timer:    t,
		cfgCache: map[benchConfig]int64{},
		legErrs:  map[int64]error{},
		legRows:  map[int64]int64{},
	}
}

func (w *writer) run() {
	defer close(w.done)
	for {
		select {
		case r, ok := <-w.reqs:
			if !ok {
				w.finalErr = w.flush()
				return
			}
			w.handle(r)
		case <-w.timer.C:
			w.armed = false
			w.flush()
		}
	}
}

func (w *writer) pending() int { return len(w.bench) + len(w.requests) + len(w.chunks) }

func (w *writer) handle(r writeReq) {
	if len(r.bench) > 0 || len(r.reqs) > 0 || r.chunk != nil {
		w.bench = append(w.bench, r.bench...)
		w.requests = append(w.requests, r.reqs...)
		if r.chunk != nil {
			w.chunks = append(w.chunks, *r.chunk)
		}
		if w.pending() >= w.maxBatch {
			w.flush()
		} else if !w.armed {
			w.timer.Reset(w.interval)
			w.armed = true
		}
	}
	if r.fn == nil && !r.flush {
		return
	}
	err := w.flush()
	if r.legErr != 0 {
		err = w.legErr(r.legErr)
	}
	if r.fn != nil && err == nil {
		if err = stoppedBy(r.ctx); err == nil {
			err = w.runTxCtx(r.ctx, r.fn)
		}
	}
	r.reply <- err
}

func (w *writer) runTx(fn func(tx *sql.Tx) error) error { return w.runTxCtx(nil, fn) }

// runTxCtx is runTx for a request whose ctx may end while BEGIN waits for the lock: then the
// transaction is given back unused.
func (w *writer) runTxCtx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := w.db.Begin() // BEGIN IMMEDIATE
	if err != nil {
		if stop := stoppedBy(ctx); stop != nil {
			return stop // stopped while waiting for the lock: nothing was written either way
		}
		return diskFull(w.n.path, err)
	}
	if err := stoppedBy(ctx); err != nil {
		tx.Rollback()
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		w.cfgCache = map[benchConfig]int64{} // ids cached inside the failed tx are gone
		return diskFull(w.n.path, err)
	}
	if err := tx.Commit(); err != nil { // the driver rolls back a COMMIT that failed
		w.cfgCache = map[benchConfig]int64{}
		return diskFull(w.n.path, err)
	}
	return nil
}

// flush commits pending samples in one transaction. A failure is remembered per leg and
// reported by that leg's SampleWriter.
func (w *writer) flush() error {
	if w.armed {
		if !w.timer.Stop() {
			select {
			case <-w.timer.C:
			default:
			}
		}
		w.armed = false
	}
	if w.pending() == 0 {
		return nil
	}
	start := time.Now()
	bench, requests, chunks := w.bench, w.requests, w.chunks
	w.bench, w.requests, w.chunks = nil, nil, nil
	err := w.runTx(func(tx *sql.Tx) error {
		if err := insertBench(tx, w.cfgCache, bench); err != nil {
			return err
		}
		if err := insertRequests(tx, requests); err != nil {
			return err
		}
		return insertChunks(tx, chunks)
	})
	legs := map[int64]int64{}
	for _, b := range bench {
		legs[b.legID]++
	}
	for _, r := range requests {
		legs[r.legID]++
	}
	for _, c := range chunks {
		if _, ok := legs[c.legID]; !ok {
			legs[c.legID] = 0
		}
	}
	if err != nil {
		err = fmt.Errorf("commit %d samples: %w", len(bench)+len(requests), err)
		w.errMu.Lock()
		for leg := range legs {
			if w.legErrs[leg] == nil {
				w.legErrs[leg] = err
			}
		}
		w.errMu.Unlock()
		return err
	}
	for leg, c := range legs {
		w.legRows[leg] += c
		legs[leg] = w.legRows[leg]
	}
	if w.n.opts.OnCommit != nil {
		w.n.opts.OnCommit(CommitInfo{BenchRows: len(bench), RequestRows: len(requests), TranscriptChunks: len(chunks), Legs: legs, Took: time.Since(start)})
	}
	return nil
}

func (w *writer) send(ctx context.Context, r writeReq) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closeWG.Add(1)
	w.mu.Unlock()
	defer w.closeWG.Done()
	select {
	case w.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs fn in a writer transaction and waits for it.
func (w *writer) do(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return w.call(ctx, writeReq{fn: fn, ctx: ctx})
}

// call sends req and waits for its reply. A request with a transaction (fn) is waited for
// even when ctx ends: it is then given back unrun unless its transaction had begun, so the
// reply says what happened. Other requests stop the wait when ctx ends.
func (w *writer) call(ctx context.Context, req writeReq) error {
	reply := make(chan error, 1)
	req.reply = reply
	if err := w.send(ctx, req); err != nil {
		if req.fn != nil && ctx.Err() != nil {
			return stoppedBy(ctx)
		}
		return err
	}
	if req.fn != nil {
		return <-reply
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushLeg commits everything pending and returns the leg's sticky error, if any.
func (w *writer) flushLeg(ctx context.Context, leg int64) error {
	return w.call(ctx, writeReq{flush: true, legErr: leg})
}

func (w *writer) close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	w.closeWG.Wait() // no sender is mid-send
	close(w.reqs)
	<-w.done
	return w.finalErr
}

// legErr is the first commit failure of a leg's samples, if any.
func (w *writer) legErr(leg int64) error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.legErrs[leg]
}
