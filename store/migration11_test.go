package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A notebook written at schema version 10 is migrated to 11: its journal still verifies, read
// only it lists no hosts, and it then keeps a hosts list: append-only, the latest row of a name
// wins, a removal is a row, each change is journaled, and UPDATE and DELETE are refused.
func TestMigration11Hosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 10}))
	must[Study](t)(old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput}))
	old.Close()

	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	if hs, err := ro.Hosts(ctx); err != nil || len(hs) != 0 {
		t.Fatalf("schema 10, read only: %v %v", hs, err)
	}
	ro.Close()

	n := must[*Notebook](t)(Open(path))
	defer n.Close()
	if stats := must[Stats](t)(n.Stats(ctx)); stats.SchemaVersion != SchemaVersion || SchemaVersion < 11 {
		t.Fatalf("schema %d (head %d)", stats.SchemaVersion, SchemaVersion)
	}
	spark := Host{Name: "spark", SSH: "lab@spark", LlamaDir: "~/llama.cpp/build/bin", ModelDirs: []string{"/models"}, Labels: map[string]string{"gpu": "gb10"}}
	for _, c := range []struct {
		h    Host
		want string
	}{{spark, HostAdded}, {spark, HostUnchanged}, {Host{Name: "box", SSH: "box", LlamaDir: "/opt/llama"}, HostAdded}} {
		if got := must[string](t)(n.PutHost(ctx, c.h)); got != c.want {
			t.Errorf("PutHost %s: %s, want %s", c.h.Name, got, c.want)
		}
	}
	changed := spark
	changed.SSH, changed.RPCAddress = "spark.lan", "10.0.0.7"
	if got := must[string](t)(n.PutHost(ctx, changed)); got != HostChanged {
		t.Errorf("change: %s", got)
	}
	hs := must[[]Host](t)(n.Hosts(ctx))
	if len(hs) != 2 || hs[0].Name != "box" || hs[1].SSH != "spark.lan" || hs[1].RPCAddress != "10.0.0.7" ||
		hs[1].Labels["gpu"] != "gb10" || len(hs[1].ModelDirs) != 1 || hs[0].ModelDirs != nil || hs[1].JournalSeq == 0 {
		t.Fatalf("hosts: %+v", hs)
	}
	if err := n.RemoveHost(ctx, "box"); err != nil {
		t.Fatal(err)
	}
	if err := n.RemoveHost(ctx, "box"); err == nil || !strings.Contains(err.Error(), ErrNoHost.Error()) {
		t.Errorf("second removal: %v", err)
	}
	if hs := must[[]Host](t)(n.Hosts(ctx)); len(hs) != 1 || hs[0].Name != "spark" {
		t.Fatalf("after removal: %+v", hs)
	}
	// added again after its removal: a new row, "added"
	if got := must[string](t)(n.PutHost(ctx, Host{Name: "box", SSH: "box2", LlamaDir: "/opt/llama"})); got != HostAdded {
		t.Errorf("re-add: %s", got)
	}
	if _, err := n.PutHost(ctx, Host{Name: " "}); err == nil {
		t.Error("a host without a name was recorded")
	}

	var rows int
	if err := n.rdb.QueryRow("SELECT count(*) FROM hosts").Scan(&rows); err != nil || rows != 5 {
		t.Errorf("%d rows (%v), want 5: every change is a row", rows, err)
	}
	for _, q := range []string{"UPDATE hosts SET ssh = 'x'", "DELETE FROM hosts"} {
		if _, err := n.wdb.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	var actions []string
	for _, e := range must[[]JournalEntry](t)(n.Journal(ctx, 0, 0, 0)) {
		if e.Kind == KindHostRecorded {
			actions = append(actions, string(e.Payload))
		}
	}
	if len(actions) != 5 || !strings.Contains(actions[3], `"action":"removed"`) || !strings.Contains(actions[2], `"action":"changed"`) {
		t.Errorf("journal: %q", actions)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("does not verify: %v", rep.Broken)
	}
	checkHostTampering(t, n)
}

// checkHostTampering: a hosts row changed, forged or deleted outside the store (its triggers
// dropped first) breaks the notebook's verification, naming what is wrong.
func checkHostTampering(t *testing.T, _ *Notebook) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct{ sql, want string }{
		{"UPDATE hosts SET ssh = 'evil@elsewhere' WHERE name = 'b'", "differs from its journal entry"},
		{"INSERT INTO hosts (name, ssh, llama_dir, created_at, journal_seq) VALUES ('forged', 'x@y', '/l', '2026-01-01T00:00:00Z', 1)", "not its own host.recorded entry"},
		{"DELETE FROM hosts WHERE name = 'a'", "without its hosts row"},
	} {
		n, err := Open(filepath.Join(t.TempDir(), "nb.db"))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []Host{{Name: "a", SSH: "lab@a", LlamaDir: "/opt/llama"}, {Name: "b", SSH: "lab@b", LlamaDir: "/opt/llama", Labels: map[string]string{"gpu": "x"}}} {
			if _, err := n.PutHost(ctx, h); err != nil {
				t.Fatal(err)
			}
		}
		if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
			t.Fatalf("before tampering: %v", rep.Broken)
		}
		for _, q := range []string{"DROP TRIGGER hosts_no_update", "DROP TRIGGER hosts_no_delete", c.sql} {
			if _, err := n.wdb.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		rep := must[VerifyReport](t)(n.Verify(ctx))
		if rep.OK() || !strings.Contains(rep.Broken.Reason, c.want) {
			t.Errorf("%s: verify %+v, want %q", c.sql, rep.Broken, c.want)
		}
		n.Close()
	}
}
