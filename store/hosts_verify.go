package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// checkHosts: every hosts row must say what its host.recorded journal entry says (name, ssh,
// llama.cpp folder, model folders, RPC address and labels; a removal is a removal), and every
// host.recorded entry must have its row. The rows are what ssh is pointed at, so a row written
// or changed outside the store breaks the notebook's verification like a changed entry does.
func (n *Notebook) checkHosts(ctx context.Context) (*BrokenEntry, error) {
	if ok, err := hasTable(ctx, n.rdb, "hosts"); err != nil || !ok {
		return nil, err
	}
	rows, err := n.rdb.QueryContext(ctx, `SELECT h.name, h.ssh, h.llama_dir, h.model_dirs_json, h.rpc_address, h.labels_json, h.removed,
		h.journal_seq, COALESCE(j.kind, ''), COALESCE(j.payload, '') FROM hosts h LEFT JOIN journal j ON j.seq = h.journal_seq ORDER BY h.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seen := map[int64]bool{}
	for rows.Next() {
		var name, ssh, llama, dirsJSON, rpc, labelsJSON, kind, payload string
		var removed int
		var seq int64
		if err := rows.Scan(&name, &ssh, &llama, &dirsJSON, &rpc, &labelsJSON, &removed, &seq, &kind, &payload); err != nil {
			return nil, err
		}
		broken := func(reason string) *BrokenEntry {
			return &BrokenEntry{Seq: seq, Kind: KindHostRecorded, Reason: fmt.Sprintf("hosts row for %q: %s", name, reason)}
		}
		if kind != KindHostRecorded || seen[seq] {
			return broken(fmt.Sprintf("its journal entry %d is not its own host.recorded entry (the row was written outside the store)", seq)), nil
		}
		seen[seq] = true
		var p struct {
			Action     string            `json:"action"`
			Name       string            `json:"name"`
			SSH        string            `json:"ssh"`
			LlamaDir   string            `json:"llama_dir"`
			ModelDirs  []string          `json:"model_dirs"`
			RPCAddress string            `json:"rpc_address"`
			Labels     map[string]string `json:"labels"`
		}
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			return broken("its journal entry does not read: " + err.Error()), nil
		}
		if (removed == 1) != (p.Action == HostRemoved) || p.Name != name {
			return broken("the row and its journal entry disagree on the name or on a removal"), nil
		}
		if removed == 1 {
			continue
		}
		var dirs []string
		var labels map[string]string
		if json.Unmarshal([]byte(dirsJSON), &dirs) != nil || json.Unmarshal([]byte(labelsJSON), &labels) != nil {
			return broken("its model folders or labels are not JSON"), nil
		}
		if p.SSH != ssh || p.LlamaDir != llama || p.RPCAddress != rpc || !slices.Equal(orEmpty(p.ModelDirs), orEmpty(dirs)) ||
			!maps.Equal(orEmptyMap(p.Labels), orEmptyMap(labels)) {
			return broken("the row differs from its journal entry (the row was changed outside the store)"), nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return n.checkHostEntriesHaveRows(ctx, seen)
}

// checkHostEntriesHaveRows: a host.recorded entry whose row is gone is a deleted row.
func (n *Notebook) checkHostEntriesHaveRows(ctx context.Context, seen map[int64]bool) (*BrokenEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT seq FROM journal WHERE kind = ? ORDER BY seq", KindHostRecorded)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		if !seen[seq] {
			return &BrokenEntry{Seq: seq, Kind: KindHostRecorded, Reason: "host.recorded entry without its hosts row (the row was deleted)"}, nil
		}
	}
	return nil, rows.Err()
}
