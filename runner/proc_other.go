//go:build !linux

package runner

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true}
}

// GroupMembers returns a placeholder member while signal 0 reaches the group (no /proc here).
func GroupMembers(pgid int) []int {
	if pgid > 0 && syscall.Kill(-pgid, 0) == nil {
		return []int{pgid}
	}
	return nil
}

// ProcessAlive reports whether signal 0 reaches pid.
func ProcessAlive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func groupAlive(pgid int) bool { return len(GroupMembers(pgid)) > 0 }

func peakRSS(st *os.ProcessState) int64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		return ru.Maxrss // bytes on macOS
	}
	return 0
}

func uname(m *Machine) {}
