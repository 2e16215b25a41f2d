package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"sparkbench/runner/vocab"
)

// The launch wrapper's effect: once the process group runs the tool's own binary (the wrapper
// exec'd it, or started it as a child), its CPU affinity is read from /proc/PID/status.

// affinityWatch is the search for the process running ProcSpec.Target.
type affinityWatch struct {
	want os.FileInfo
	stop chan struct{} // closed by the supervisor once the group is gone
	done chan struct{} // closed by the watcher
	poke chan struct{} // output arrived: the process that wrote it is alive, look now
	aff  *vocab.Affinity
	err  string
}

// affinityPollMax bounds the watcher's waits: it looks at once, then after 1, 2, 4 … ms, at
// most every affinityPollMax, and at once whenever output arrives, and stops as soon as it has
// found the tool's process.
const affinityPollMax = 50 * time.Millisecond

// startAffinityWatch starts the watcher for the group led by pid (nil when there is no target).
func startAffinityWatch(pid int, target string) *affinityWatch {
	if target == "" {
		return nil
	}
	w := &affinityWatch{stop: make(chan struct{}), done: make(chan struct{}), poke: make(chan struct{}, 1)}
	st, err := os.Stat(target)
	if err != nil {
		w.err = fmt.Sprintf("not read: %v", err)
		close(w.done)
		return w
	}
	w.want = st
	go w.run(pid)
	return w
}

func (w *affinityWatch) run(pid int) {
	defer close(w.done)
	wait := time.Millisecond
	for {
		if a := findAffinity(pid, w.want); a != nil {
			w.aff = a
			return
		}
		select {
		case <-w.stop:
			// One last look: the group may still be there when the supervisor asks.
			if a := findAffinity(pid, w.want); a != nil {
				w.aff = a
				return
			}
			w.err = "not read: no process of the leg's group was seen running " + w.want.Name() +
				" (it ended first, or the wrapper ran something else)"
			return
		case <-w.poke:
		case <-time.After(wait):
		}
		wait = min(2*wait, affinityPollMax)
	}
}

// output tells the watcher that the group wrote output (the reader calls it for every read
// until the watcher is done): a process that writes is alive, so a tool that prints and ends
// between two timed looks is still seen. It never blocks.
func (w *affinityWatch) output() {
	if w == nil {
		return
	}
	select {
	case <-w.done:
	case w.poke <- struct{}{}:
	default:
	}
}

// end stops the watcher and waits for it (bounded: each look is a few /proc reads).
func (w *affinityWatch) end() {
	if w == nil {
		return
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// findAffinity looks at the leader first (a wrapper that exec'd the tool), then at the other
// live processes of its group (one that forked it).
func findAffinity(leader int, want os.FileInfo) *vocab.Affinity {
	if a := affinityOf(leader, want); a != nil {
		a.How = vocab.LaunchExec
		return a
	}
	for _, pid := range GroupMembers(leader) {
		if pid == leader {
			continue
		}
		if a := affinityOf(pid, want); a != nil {
			a.How = vocab.LaunchChild
			return a
		}
	}
	return nil
}

// affinityOf reads pid's affinity when it runs want's binary (the same file, by device and
// inode, so a symbolic link or another path to it still matches), checked again after the
// read: a process that exec'd in between is not counted.
func affinityOf(pid int, want os.FileInfo) *vocab.Affinity {
	exe := "/proc/" + strconv.Itoa(pid) + "/exe"
	if st, err := os.Stat(exe); err != nil || !os.SameFile(st, want) {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	a := &vocab.Affinity{PID: pid}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte{':'})
		if !ok {
			continue
		}
		switch string(k) {
		case "Cpus_allowed_list":
			a.CPUs = string(bytes.TrimSpace(v))
		case "Mems_allowed_list":
			a.Mems = string(bytes.TrimSpace(v))
		}
	}
	if st, err := os.Stat(exe); err != nil || !os.SameFile(st, want) || a.CPUs == "" {
		return nil
	}
	return a
}
