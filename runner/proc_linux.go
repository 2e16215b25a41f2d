package runner

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr: a new session (so the pty is the controlling terminal and the child leads its
// own process group) and SIGKILL if sparkbench dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL}
}

// GroupMembers lists the live (not zombie) processes whose process group is pgid, read from
// /proc.
func GroupMembers(pgid int) []int {
	if pgid <= 0 {
		return nil
	}
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, pg, ok := procStat(pid); ok && pg == pgid && st != 'Z' && st != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// procStat reads a process's state and process group from /proc/PID/stat.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:]) // state ppid pgrp …
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}

// ProcessAlive reports whether pid exists and is not a zombie.
func ProcessAlive(pid int) bool {
	st, _, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// groupAlive: a group with no process at all (kill(-pgid, 0) says ESRCH, the usual case once
// the leader is reaped) is answered without reading every process's stat in /proc.
func groupAlive(pgid int) bool {
	if pgid <= 0 || syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	return len(GroupMembers(pgid)) > 0
}

func peakRSS(st *os.ProcessState) int64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		return ru.Maxrss * 1024 // KiB on Linux
	}
	return 0
}

func uname(m *Machine) {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return
	}
	m.OS = cstr(u.Sysname[:])
	m.Kernel = cstr(u.Release[:])
	m.KernelBuild = cstr(u.Version[:])
	m.Arch = cstr(u.Machine[:])
}

func cstr[T int8 | uint8](a []T) string {
	b := make([]byte, 0, len(a))
	for _, c := range a {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
