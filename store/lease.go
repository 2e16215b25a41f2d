package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// One run per study at a time (docs/notebook.md "One run per study at a time"). Every kind's
// run takes its study's run lease before it records anything and gives it back when it ends;
// the notebook decides who holds it, inside one BEGIN IMMEDIATE transaction, so two processes
// that start the same study together cannot both run it. A lease left by a process that no
// longer exists (killed, crashed) is taken over by the next run and journaled.

// KindLeaseTakenOver is the journal kind of a run lease taken over from a dead holder.
const KindLeaseTakenOver = "lease.taken_over"

// LeaseHolder is the process that holds a study's run lease.
type LeaseHolder struct {
	Host  string
	PID   int
	Token string // the process's start time (/proc/PID/stat field 22): a reused pid is not it
	Since time.Time
}

// goneFrom reports whether the holder is a process of host (this one's) that no longer exists:
// a holder on another host is never judged dead from here.
func (h LeaseHolder) goneFrom(host string) bool {
	return h.Host == host && !processAlive(h.PID, h.Token)
}

// LeaseHeldError refuses a run: a live process holds the study's run lease.
type LeaseHeldError struct {
	StudyID int64
	Holder  LeaseHolder
	// Here: the holder is a process of this host; Self: it is this very process (a second run
	// of the same study from one window).
	Here, Self bool
}

func (e *LeaseHeldError) Error() string {
	since := FormatTime(e.Holder.Since)
	switch {
	case e.Self:
		return fmt.Sprintf("this process (pid %d) has been running study %d since %s; wait for that run to end", e.Holder.PID, e.StudyID, since)
	case e.Here:
		return fmt.Sprintf("process %d has been running study %d since %s (it holds the study's run lease); wait for that run to end, or stop it (kill -INT %d)",
			e.Holder.PID, e.StudyID, since, e.Holder.PID)
	default:
		return fmt.Sprintf("process %d on host %s has held study %d's run lease since %s; this host cannot tell whether it still runs: wait for that run to end, or stop it there",
			e.Holder.PID, e.Holder.Host, e.StudyID, since)
	}
}

// RunLease is a study's run lease, held by this process until Release.
type RunLease struct {
	n       *Notebook
	StudyID int64
	Holder  LeaseHolder
	// TakenOver is the dead holder whose lease this run took over (nil: the lease was free).
	TakenOver *LeaseHolder
	at        string
}

// AcquireRunLease takes study studyID's run lease for this process. A live holder refuses it
// (*LeaseHeldError, nothing written); a holder of this host that no longer exists has its
// lease taken over, journaled as lease.taken_over (with the dead holder) in the same
// transaction. A holder on another host is never judged dead from here (as legs left running
// are not, docs/notebook.md).
func (n *Notebook) AcquireRunLease(ctx context.Context, studyID int64) (*RunLease, error) {
	host, pid, token := ownerIdentity()
	l := &RunLease{n: n, StudyID: studyID, Holder: LeaseHolder{Host: host, PID: pid, Token: token}}
	err := n.write(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRow("SELECT COUNT(*) FROM studies WHERE id = ?", studyID).Scan(&exists); err != nil {
			return err
		} else if exists == 0 {
			return fmt.Errorf("study %d does not exist", studyID)
		}
		var old LeaseHolder
		var since string
		err := tx.QueryRow("SELECT holder_host, holder_pid, holder_token, acquired_at FROM run_leases WHERE study_id = ?", studyID).
			Scan(&old.Host, &old.PID, &old.Token, &since)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("study %d's run lease: %w", studyID, err)
		default:
			old.Since = mustParseTime(since)
			here := old.Host == host
			self := here && old.PID == pid && old.Token == token
			if self || !old.goneFrom(host) {
				return &LeaseHeldError{StudyID: studyID, Holder: old, Here: here, Self: self}
			}
			if err := n.takeOverTx(tx, studyID, old, since, host, pid); err != nil {
				return err
			}
			l.TakenOver = &old
		}
		l.at = n.nowText()
		if _, err := tx.Exec("INSERT INTO run_leases (study_id, holder_host, holder_pid, holder_token, acquired_at) VALUES (?, ?, ?, ?, ?)",
			studyID, host, pid, token, l.at); err != nil {
			return fmt.Errorf("study %d's run lease: %w", studyID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.Holder.Since = mustParseTime(l.at)
	return l, nil
}

// Release gives the lease back (only this lease: a lease taken over since is not touched).
// It is safe to call more than once, and runs whatever ctx says: a run stopped by a signal
// still gives its lease back.
func (l *RunLease) Release() error {
	if l == nil {
		return nil
	}
	return l.n.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec("DELETE FROM run_leases WHERE study_id = ? AND holder_host = ? AND holder_pid = ? AND holder_token = ? AND acquired_at = ?",
			l.StudyID, l.Holder.Host, l.Holder.PID, l.Holder.Token, l.at)
		return err
	})
}

// RunLeaseHolder is who holds study studyID's run lease (nil: nobody).
func (n *Notebook) RunLeaseHolder(ctx context.Context, studyID int64) (*LeaseHolder, error) {
	if ok, err := hasTable(ctx, n.rdb, "run_leases"); err != nil || !ok {
		return nil, err
	}
	var h LeaseHolder
	var since string
	err := n.rdb.QueryRowContext(ctx, "SELECT holder_host, holder_pid, holder_token, acquired_at FROM run_leases WHERE study_id = ?", studyID).
		Scan(&h.Host, &h.PID, &h.Token, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h.Since = mustParseTime(since)
	return &h, nil
}

// LeaseStudy is a kind's run lease as its run takes it: the run lease of study id, released by
// the function it returns; a live holder is refused as busy (the kind's own "being run by
// another process" error, wrapping the *LeaseHeldError that names the holder).
func (n *Notebook) LeaseStudy(ctx context.Context, id int64, busy error) (release func(), err error) {
	l, err := n.AcquireRunLease(ctx, id)
	var held *LeaseHeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %w", busy, err)
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

// UnendedRun says, for a study whose status is running, when no process runs it any more: its
// run lease is held by a process of this host that no longer exists, or by no one (a run that
// could not record its end: a full disk, a crash, kill -9, or a version before leases). ""
// when the study is not running as recorded, or a live process (or one on another host, which
// this host cannot judge) holds its lease. The status stays as recorded until the next run
// takes the study over: this is what a reader says beside it.
func (n *Notebook) UnendedRun(ctx context.Context, studyID int64) (string, error) {
	var status string
	if err := n.rdb.QueryRowContext(ctx, "SELECT status FROM studies WHERE id = ?", studyID).Scan(&status); err != nil {
		return "", err
	}
	if status != StatusRunning {
		return "", nil
	}
	h, err := n.RunLeaseHolder(ctx, studyID)
	if err != nil {
		return "", err
	}
	if h == nil {
		return "no process holds its run lease: the last run ended without recording its end (a full disk, a crash or kill -9)", nil
	}
	host, _, _ := ownerIdentity()
	if !h.goneFrom(host) {
		return "", nil
	}
	return fmt.Sprintf("no process runs it: process %d, which took its run lease at %s, no longer exists and ended without recording its end (a full disk, a crash or kill -9)",
		h.PID, FormatTime(h.Since)), nil
}

// takeOverTx removes study studyID's lease of a dead holder and journals lease.taken_over.
func (n *Notebook) takeOverTx(tx *sql.Tx, studyID int64, old LeaseHolder, since, host string, pid int) error {
	if _, err := tx.Exec("DELETE FROM run_leases WHERE study_id = ?", studyID); err != nil {
		return fmt.Errorf("study %d's run lease: %w", studyID, err)
	}
	_, err := n.appendJournalTx(tx, KindLeaseTakenOver, studyID, map[string]any{
		"study":  studyID,
		"holder": map[string]any{"host": old.Host, "pid": old.PID, "since": since},
		"by":     map[string]any{"host": host, "pid": pid},
		"reason": fmt.Sprintf("process %d, which took the run lease at %s, no longer exists (killed or crashed without ending its run)", old.PID, since),
	})
	return err
}

// haltUnendedRuns, when a notebook is opened for writing: a run lease left by a process of
// this host that no longer exists (killed, crashed, or unable to record its end on a full
// disk) is taken over (lease.taken_over), and its study, still recorded as running, is marked
// halted (study.status, with the reason), so that show and the window stop saying running.
// Each in its own write that checks the lease is still the dead one's. Returns the studies
// marked halted.
func (n *Notebook) haltUnendedRuns(ctx context.Context) ([]int64, error) {
	if ok, err := hasTable(ctx, n.rdb, "run_leases"); err != nil || !ok {
		return nil, err
	}
	type left struct {
		study int64
		h     LeaseHolder
		since string
	}
	var dead []left
	host, pid, _ := ownerIdentity()
	err := func() error {
		rows, err := n.rdb.QueryContext(ctx, "SELECT study_id, holder_host, holder_pid, holder_token, acquired_at FROM run_leases ORDER BY study_id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l left
			if err := rows.Scan(&l.study, &l.h.Host, &l.h.PID, &l.h.Token, &l.since); err != nil {
				return err
			}
			if l.h.goneFrom(host) {
				dead = append(dead, l)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}
	var halted []int64
	for _, l := range dead {
		marked := false
		err := n.write(ctx, func(tx *sql.Tx) error {
			var k int
			if err := tx.QueryRow("SELECT COUNT(*) FROM run_leases WHERE study_id = ? AND holder_host = ? AND holder_pid = ? AND holder_token = ? AND acquired_at = ?",
				l.study, l.h.Host, l.h.PID, l.h.Token, l.since).Scan(&k); err != nil || k == 0 {
				return err // taken over or given back since it was read
			}
			if err := n.takeOverTx(tx, l.study, l.h, l.since, host, pid); err != nil {
				return err
			}
			var status string
			if err := tx.QueryRow("SELECT status FROM studies WHERE id = ?", l.study).Scan(&status); err != nil || status != StatusRunning {
				return err
			}
			now := n.nowText()
			if _, err := tx.Exec("UPDATE studies SET status = ?, updated_at = ? WHERE id = ?", StatusHalted, now, l.study); err != nil {
				return err
			}
			marked = true
			_, err := n.appendJournalTx(tx, KindStudyStatus, l.study, map[string]any{"study": l.study, "status": StatusHalted,
				"reason": fmt.Sprintf("the run of process %d (since %s) ended without recording its end (a full disk, a crash or kill -9); the next run resumes it", l.h.PID, l.since)})
			return err
		})
		if err != nil {
			return halted, err
		}
		if marked {
			halted = append(halted, l.study)
		}
	}
	return halted, nil
}
