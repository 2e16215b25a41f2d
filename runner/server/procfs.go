package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadVmHWM reads the peak resident set size (KiB) of a live process from the VmHWM line of
// /proc/PID/status: the number GNU time -v reports as "Maximum resident set size".
func ReadVmHWM(pid int) (int64, error) {
	if pid <= 0 {
		return 0, errors.New("no process")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmHWM(f)
}

func parseVmHWM(r interface{ Read([]byte) (int, error) }) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmHWM line %q: want \"VmHWM: N kB\"", sc.Text())
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmHWM line (a kernel thread, or a zombie)")
}

// listenerOwner says whether pid holds the socket listening on 127.0.0.1:port, from
// /proc/net/tcp and /proc/PID/fd. known is false when /proc could not tell (not Linux, or
// unreadable): the caller then trusts the health check alone. It guards against another
// program on the port answering /health while our llama-server failed to bind.
func listenerOwner(pid, port int) (owns, known bool) {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false, false
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	inode := ""
	for _, line := range bytes.Split(data, []byte("\n"))[1:] {
		f := strings.Fields(string(line))
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		if len(f) >= 10 && f[1] == want && f[3] == "0A" {
			inode = f[9]
			break
		}
	}
	if inode == "" {
		return false, true // nobody listens there (yet)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, true // the process is gone (reaped): it listens nowhere
	case err != nil:
		return false, false
	}
	target := "socket:[" + inode + "]"
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && l == target {
			return true, true
		}
	}
	return false, true
}

// ProcessesWithEnv lists the live processes whose environment holds the exact entry kv
// ("KEY=VALUE"), read from /proc/PID/environ (readable for this user's processes). Tests tag
// the servers they start with a unique entry (Spec.Env) and check afterwards that none
// survived, whatever became of its parent.
func ProcessesWithEnv(kv string) []int {
	d, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte(kv)
	var out []int
	for _, e := range d {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, entry := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(entry, needle) {
				if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !zombie(st) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}
