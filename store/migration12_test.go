package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sparkbench/app/study"
)

// A notebook written at schema version 11 is migrated to 12: its journal still verifies, read
// only it says nobody holds a run lease, and its studies then take run leases: one holder at a
// time, a live holder refused by name, a dead holder's lease taken over and journaled, a
// release that gives back only its own lease.
func TestMigration12RunLeases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 11}))
	st := must[Study](t)(old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput}))
	old.Close()

	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	if h, err := ro.RunLeaseHolder(ctx, st.ID); err != nil || h != nil {
		t.Fatalf("schema 11, read only: %v %v", h, err)
	}
	ro.Close()

	n := must[*Notebook](t)(Open(path))
	defer n.Close()
	if stats := must[Stats](t)(n.Stats(ctx)); stats.SchemaVersion != SchemaVersion || SchemaVersion < 12 {
		t.Fatalf("schema %d (head %d)", stats.SchemaVersion, SchemaVersion)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("migrated notebook does not verify: %v", rep.Broken)
	}

	l := must[*RunLease](t)(n.AcquireRunLease(ctx, st.ID))
	if l.TakenOver != nil || l.Holder.PID != os.Getpid() {
		t.Fatalf("lease %+v", l)
	}
	// This process again (a second run from one window): refused, naming it.
	_, err := n.AcquireRunLease(ctx, st.ID)
	var held *LeaseHeldError
	if !errors.As(err, &held) || !held.Self || !strings.Contains(err.Error(), fmt.Sprintf("this process (pid %d) has been running study %d since ", os.Getpid(), st.ID)) {
		t.Fatalf("second lease in this process: %v", err)
	}
	// Through a recorder: the kind's busy error, naming the holder.
	if _, err := (StudyRecorder{n}).Lease(ctx, st.ID); !errors.Is(err, study.ErrBusy) || !errors.As(err, &held) {
		t.Fatalf("recorder's lease: %v", err)
	}
	if _, err := n.AcquireRunLease(ctx, 999); err == nil || err.Error() != "study 999 does not exist" {
		t.Fatalf("lease of no study: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if h := must[*LeaseHolder](t)(n.RunLeaseHolder(ctx, st.ID)); h != nil {
		t.Fatalf("released, still held by %+v", h)
	}
	l2 := must[*RunLease](t)(n.AcquireRunLease(ctx, st.ID))
	if err := l.Release(); err != nil { // the first lease, released again: the second stays
		t.Fatal(err)
	}
	if h := must[*LeaseHolder](t)(n.RunLeaseHolder(ctx, st.ID)); h == nil || h.Since != l2.Holder.Since {
		t.Fatalf("an old lease's release gave back the new one: %+v", h)
	}
	if err := l2.Release(); err != nil {
		t.Fatal(err)
	}

	host, _, _ := ownerIdentity()
	// A live process of this host (the test's parent) holds it: refused, naming its pid.
	ppid := os.Getppid()
	setLease(t, n, st.ID, host, ppid, procStartToken(ppid))
	if _, err := n.AcquireRunLease(ctx, st.ID); !errors.As(err, &held) || held.Self || !held.Here ||
		!strings.Contains(err.Error(), fmt.Sprintf("process %d has been running study %d since 2026-12-01T00:00:00.000000000Z (it holds the study's run lease); wait for that run to end, or stop it (kill -INT %d)", ppid, st.ID, ppid)) {
		t.Fatalf("a live holder: %v", err)
	}
	// Another host's process is not judged from here.
	setLease(t, n, st.ID, host+"-elsewhere", ppid, "1")
	if _, err := n.AcquireRunLease(ctx, st.ID); !errors.As(err, &held) || held.Here || !strings.Contains(err.Error(), "on host "+host+"-elsewhere") {
		t.Fatalf("another host's holder: %v", err)
	}
	// A dead holder: taken over, journaled with who held it, in the same transaction.
	dead := deadPID(t)
	setLease(t, n, st.ID, host, dead, "12345")
	before := len(must[[]JournalEntry](t)(n.JournalOfKind(ctx, KindLeaseTakenOver)))
	l3 := must[*RunLease](t)(n.AcquireRunLease(ctx, st.ID))
	if l3.TakenOver == nil || l3.TakenOver.PID != dead {
		t.Fatalf("taken over: %+v", l3.TakenOver)
	}
	es := must[[]JournalEntry](t)(n.JournalOfKind(ctx, KindLeaseTakenOver))
	if len(es) != before+1 || es[len(es)-1].StudyID != st.ID ||
		!strings.Contains(string(es[len(es)-1].Payload), fmt.Sprintf(`"holder":{"host":%q,"pid":%d,"since":"2026-12-01T00:00:00.000000000Z"}`, host, dead)) {
		t.Fatalf("takeover journal: %+v", es)
	}
	if err := l3.Release(); err != nil {
		t.Fatal(err)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("does not verify: %v", rep.Broken)
	}
}

// setLease writes study id's lease row as another process would have.
func setLease(t *testing.T, n *Notebook, id int64, host string, pid int, token string) {
	t.Helper()
	if _, err := n.wdb.Exec("DELETE FROM run_leases WHERE study_id = ?", id); err != nil {
		t.Fatal(err)
	}
	if _, err := n.wdb.Exec("INSERT INTO run_leases (study_id, holder_host, holder_pid, holder_token, acquired_at) VALUES (?, ?, ?, ?, '2026-12-01T00:00:00.000000000Z')",
		id, host, pid, token); err != nil {
		t.Fatal(err)
	}
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// Notebook handles on one file (as processes are) taking one study's lease at the same time:
// exactly one holds it, every other is refused naming it.
func TestRunLeaseOneHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	n := must[*Notebook](t)(Open(path))
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: "s", Kind: StudyThroughput}))
	n.Close()
	const handles = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got, refused int
	for i := 0; i < handles; i++ {
		h := must[*Notebook](t)(Open(path))
		defer h.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.AcquireRunLease(ctx, st.ID)
			mu.Lock()
			defer mu.Unlock()
			var held *LeaseHeldError
			switch {
			case err == nil:
				got++
			case errors.As(err, &held):
				refused++
			default:
				t.Errorf("lease: %v", err)
			}
		}()
	}
	wg.Wait()
	if got != 1 || refused != handles-1 {
		t.Fatalf("%d held, %d refused; want 1 and %d", got, refused, handles-1)
	}
}

// Registrations of one plan from notebook handles on one file at the same time (as processes
// are) make one study: the lookup by plan SHA-256 is inside the registration's transaction.
func TestRegisterSamePlanAtOnceMakesOneStudy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	must[*Notebook](t)(Open(path)).Close()
	p := testPlan(t)
	sum, canon, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	const handles = 6
	var wg sync.WaitGroup
	ids := make([]int64, handles)
	existing := make([]bool, handles)
	start := make(chan struct{})
	for i := 0; i < handles; i++ {
		h := must[*Notebook](t)(Open(path))
		defer h.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var err error
			ids[i], existing[i], err = StudyRecorder{h}.Register(ctx, study.NewStudy{Name: p.Name, PlanSHA256: sum, PlanJSON: canon, Predictions: p.Predictions})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	n := must[*Notebook](t)(Open(path))
	defer n.Close()
	studies := must[[]StudySummary](t)(n.Studies(ctx))
	var fresh int
	for i := range ids {
		if !existing[i] {
			fresh++
		}
		if ids[i] != ids[0] {
			t.Errorf("registration %d made study %d, registration 0 study %d", i, ids[i], ids[0])
		}
	}
	if len(studies) != 1 || fresh != 1 {
		t.Fatalf("%d studies, %d registrations made one; want 1 and 1: %+v", len(studies), fresh, studies)
	}
}
