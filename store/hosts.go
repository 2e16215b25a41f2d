package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// KindHostRecorded is the journal kind of a bench host added, changed or removed in the
// notebook's hosts list (schema 11); payload.action says which.
const KindHostRecorded = "host.recorded"

// Host actions, as journaled and returned by PutHost.
const (
	HostAdded     = "added"
	HostChanged   = "changed"
	HostUnchanged = "unchanged" // PutHost with what the notebook already has: nothing written
	HostRemoved   = "removed"
)

// ErrNoHost is returned by RemoveHost for a name the hosts list does not have.
var ErrNoHost = errors.New("no such host in the notebook")

// Host is a bench host as the user registered it in the notebook (the fields of a hosts file's
// host, docs/fleet.md). The store checks only that the name is not empty; the app validates
// the rest with the hosts file's rules before PutHost.
type Host struct {
	Name       string
	SSH        string
	LlamaDir   string
	ModelDirs  []string
	RPCAddress string
	Labels     map[string]string
	CreatedAt  time.Time // when the current row was recorded (set by the store)
	JournalSeq int64     // the journal entry of the current row (set by the store)
}

func (h Host) same(o Host) bool {
	return h.Name == o.Name && h.SSH == o.SSH && h.LlamaDir == o.LlamaDir && slices.Equal(h.ModelDirs, o.ModelDirs) &&
		h.RPCAddress == o.RPCAddress && maps.Equal(h.Labels, o.Labels)
}

func (h Host) payload(action string) map[string]any {
	dirs := h.ModelDirs
	if dirs == nil {
		dirs = []string{}
	}
	labels := h.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return map[string]any{"action": action, "name": h.Name, "ssh": h.SSH, "llama_dir": h.LlamaDir,
		"model_dirs": dirs, "rpc_address": h.RPCAddress, "labels": labels}
}

// PutHost records h as the current entry for its name: a new row (never an update) and a
// host.recorded journal entry. It returns HostAdded, HostChanged, or HostUnchanged when the
// notebook's current entry is already h (then nothing is written).
func (n *Notebook) PutHost(ctx context.Context, h Host) (string, error) {
	h.Name = strings.TrimSpace(h.Name)
	if h.Name == "" {
		return "", errors.New("host: name is empty")
	}
	dirs, err := json.Marshal(orEmpty(h.ModelDirs))
	if err != nil {
		return "", err
	}
	labels, err := json.Marshal(orEmptyMap(h.Labels))
	if err != nil {
		return "", err
	}
	action := HostAdded
	err = n.write(ctx, func(tx *sql.Tx) error {
		cur, ok, err := currentHost(tx, h.Name)
		if err != nil {
			return err
		}
		if ok {
			if cur.same(h) {
				action = HostUnchanged
				return nil
			}
			action = HostChanged
		}
		je, err := n.appendJournalTx(tx, KindHostRecorded, 0, h.payload(action))
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO hosts (name, ssh, llama_dir, model_dirs_json, rpc_address, labels_json, removed, created_at, journal_seq)
			VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)`, h.Name, h.SSH, h.LlamaDir, string(dirs), h.RPCAddress, string(labels), FormatTime(je.At), je.Seq)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("host %s: %w", h.Name, err)
	}
	return action, nil
}

// RemoveHost records that the named host is no longer in the list (a row with removed = 1
// and a host.recorded entry); ErrNoHost when the list does not have it.
func (n *Notebook) RemoveHost(ctx context.Context, name string) error {
	name = strings.TrimSpace(name) // as PutHost
	err := n.write(ctx, func(tx *sql.Tx) error {
		cur, ok, err := currentHost(tx, name)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoHost
		}
		je, err := n.appendJournalTx(tx, KindHostRecorded, 0, map[string]any{"action": HostRemoved, "name": name, "ssh": cur.SSH})
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO hosts (name, removed, created_at, journal_seq) VALUES (?, 1, ?, ?)`, name, FormatTime(je.At), je.Seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("host %s: %w", name, err)
	}
	return nil
}

// Hosts is the current hosts list: the latest row of each name that is not a removal, sorted
// by name. A read-only notebook older than schema 11 has none.
func (n *Notebook) Hosts(ctx context.Context) ([]Host, error) {
	if ok, err := hasTable(ctx, n.rdb, "hosts"); err != nil || !ok {
		return nil, err // a notebook older than schema 11, opened read-only: no hosts
	}
	rows, err := n.rdb.QueryContext(ctx, hostSelect+` WHERE h.id = (SELECT max(id) FROM hosts WHERE name = h.name) AND h.removed = 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Host
	for rows.Next() {
		h, _, err := scanHost(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

const hostSelect = `SELECT h.name, h.ssh, h.llama_dir, h.model_dirs_json, h.rpc_address, h.labels_json, h.removed, h.created_at, h.journal_seq FROM hosts h`

type hostScanner interface{ Scan(...any) error }

func scanHost(r hostScanner) (Host, bool, error) {
	var h Host
	var dirs, labels, at string
	var removed int64
	if err := r.Scan(&h.Name, &h.SSH, &h.LlamaDir, &dirs, &h.RPCAddress, &labels, &removed, &at, &h.JournalSeq); err != nil {
		return Host{}, false, err
	}
	if err := json.Unmarshal([]byte(dirs), &h.ModelDirs); err != nil {
		return Host{}, false, fmt.Errorf("host %s: model_dirs_json: %w", h.Name, err)
	}
	if err := json.Unmarshal([]byte(labels), &h.Labels); err != nil {
		return Host{}, false, fmt.Errorf("host %s: labels_json: %w", h.Name, err)
	}
	if len(h.ModelDirs) == 0 {
		h.ModelDirs = nil
	}
	if len(h.Labels) == 0 {
		h.Labels = nil
	}
	t, err := ParseTime(at)
	if err != nil {
		return Host{}, false, err
	}
	h.CreatedAt = t
	return h, removed == 1, nil
}

// currentHost is the name's latest row inside a writer transaction; ok is false when there is
// none or it is a removal.
func currentHost(tx *sql.Tx, name string) (Host, bool, error) {
	h, removed, err := scanHost(tx.QueryRow(hostSelect+` WHERE h.name = ? ORDER BY h.id DESC LIMIT 1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Host{}, false, nil
	}
	if err != nil {
		return Host{}, false, err
	}
	return h, !removed, nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
