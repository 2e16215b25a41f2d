package runner

// ParseMachine reads a machine from the text of /proc/cpuinfo and /proc/meminfo and uname's
// fields, the way the local fingerprint reads its own (a host's, read over ssh, has the same
// shape); logical is used when cpuinfo lists no processor.
func ParseMachine(cpuinfo, meminfo string, logical int, sysname, release, version, arch, hostname string) Machine {
	m := Machine{OS: sysname, Kernel: release, KernelBuild: version, Arch: arch, Hostname: hostname}
	m.CPUModel, m.LogicalCPUs, m.Cores = parseCPUInfo(cpuinfo, logical)
	m.MemBytes = parseMemTotal(meminfo)
	return m
}
