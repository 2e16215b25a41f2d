// Command fakellama behaves like llama-bench -o jsonl closely enough for the runner's fault
// tests, and misbehaves on request. The tests build it with go build into a temporary folder.
//
// It reads -m, -p, -n, -d, -r and --progress like llama-bench (Cartesian product: models x
// depths x (pp values > 0, then tg values > 0)), prints progress lines on stderr and one jsonl
// row per test on stdout. FAKELLAMA_MODE picks a misbehaviour:
//
//	segv:N        SIGSEGV (default action) after N rows
//	devicelost:N  after N rows print a Vulkan DeviceLost line, then abort (SIGABRT)
//	oom           print allocation failures, exit 1
//	hang:N        after N rows print nothing more and sleep
//	forkterm      fork a child that ignores SIGTERM and SIGHUP (prints "child pid N"), then run
//	malformed:N   print row N cut in half (invalid JSON), then carry on
//	flood:BYTES   print BYTES of log lines and a 16 MiB line without a break first, then run
//	short:N       stop after N rows, exit 0
//	exit:N        print the rows, exit with status N
//
// FAKELLAMA_DELAY (default 20ms) is the time per test; FAKELLAMA_TS the mean t/s (default
// 1000); FAKELLAMA_CV the stddev/mean (default 0.01); FAKELLAMA_LOG a file to which it appends
// "start PID UNIXNANO" and "end PID UNIXNANO". FAKELLAMA_GPU_INFO, FAKELLAMA_BACKENDS,
// FAKELLAMA_NGL and FAKELLAMA_DEVICES replace the rows' gpu_info (default ""), backends
// ("CPU"), n_gpu_layers (-1) and devices ("auto"): where the row says it ran, for the device
// gates. -dev, -ctk and -ctv are accepted and ignored, as -ngl is. FAKELLAMA_DEVICE_LIST is printed under
// --list-devices' "Available devices:" (e.g. "  Vulkan0: Fake GPU (24576 MiB, 23000 MiB free)").
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Long on purpose: a test fake's script, one case per FAKELLAMA_MODE and flag, read top to bottom.
func main() {
	mode, arg := splitMode(os.Getenv("FAKELLAMA_MODE"))
	if mode == "child" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("child ready")
		time.Sleep(time.Hour)
		return
	}
	logEvent("start")
	defer logEvent("end")
	fmt.Fprintln(os.Stderr, "load_backend: loaded CPU backend from /fake/libggml-cpu-fake.so")
	var models []string
	var pp, tg, depths []int
	reps, progress := 5, false
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr, "error: invalid parameter for argument: %s\n", a)
				os.Exit(1)
			}
			i++
			return args[i]
		}
		switch a {
		case "--version":
			fmt.Println("version: 0.7.0 (build 11669, commit Debian)\nbuilt with fake for Linux x86_64")
			return
		case "--list-devices":
			fmt.Println("Available devices:")
			if d := os.Getenv("FAKELLAMA_DEVICE_LIST"); d != "" {
				fmt.Println(d)
			}
			return
		case "-m":
			models = append(models, strings.Split(val(), ",")...)
		case "-p":
			pp = append(pp, ints(val())...)
		case "-n":
			tg = append(tg, ints(val())...)
		case "-d":
			depths = append(depths, ints(val())...)
		case "-r":
			reps = ints(val())[0]
		case "-o", "-t", "-ngl", "-dev", "-b", "-ub", "-fa", "-ctk", "-ctv":
			val()
		case "--progress":
			progress = true
		default:
			fmt.Fprintf(os.Stderr, "error: invalid parameter for argument: %s\n", a)
			os.Exit(1)
		}
	}
	if len(models) == 0 {
		models = []string{"models/7B/ggml-model-q4_0.gguf"}
	}
	if pp == nil {
		pp = []int{512}
	}
	if tg == nil {
		tg = []int{128}
	}
	if depths == nil {
		depths = []int{0}
	}
	type test struct{ p, n, d int }
	var tests []struct {
		m string
		test
	}
	for _, m := range models {
		for _, d := range depths {
			for _, p := range pp {
				if p > 0 {
					tests = append(tests, struct {
						m string
						test
					}{m, test{p, 0, d}})
				}
			}
			for _, n := range tg {
				if n > 0 {
					tests = append(tests, struct {
						m string
						test
					}{m, test{0, n, d}})
				}
			}
		}
	}
	delay := 20 * time.Millisecond
	if v := os.Getenv("FAKELLAMA_DELAY"); v != "" {
		delay, _ = time.ParseDuration(v)
	}
	ts := envFloat("FAKELLAMA_TS", 1000)
	cv := envFloat("FAKELLAMA_CV", 0.01)

	switch mode {
	case "forkterm":
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "FAKELLAMA_MODE=child")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fork:", err)
			os.Exit(3)
		}
		fmt.Printf("child pid %d\n", c.Process.Pid)
	case "flood":
		flood(arg)
	}
	for i, t := range tests {
		if progress {
			fmt.Fprintf(os.Stderr, "llama-bench: benchmark %d/%d: starting\n", i+1, len(tests))
			kind := "prompt"
			if t.n > 0 {
				kind = "generation"
			}
			fmt.Fprintf(os.Stderr, "llama-bench: benchmark %d/%d: warmup %s run\n", i+1, len(tests), kind)
			for r := 1; r <= reps; r++ {
				time.Sleep(delay / time.Duration(reps+1))
				fmt.Fprintf(os.Stderr, "llama-bench: benchmark %d/%d: %s run %d/%d\n", i+1, len(tests), kind, r, reps)
			}
		} else {
			time.Sleep(delay)
		}
		row := jsonRow(t.m, t.p, t.n, t.d, reps, ts, cv)
		switch {
		case mode == "malformed" && i+1 == arg:
			fmt.Println(row[:len(row)/2])
			continue
		}
		fmt.Println(row)
		done := i + 1
		switch {
		case mode == "segv" && done == arg:
			raise(syscall.SIGSEGV)
		case mode == "devicelost" && done == arg:
			fmt.Fprintln(os.Stderr, "ggml_vulkan: Device memory allocation of size 4096 failed.")
			fmt.Fprintln(os.Stderr, "terminate called after throwing an instance of 'vk::DeviceLostError'")
			fmt.Fprintln(os.Stderr, "  what():  vk::Queue::submit: ErrorDeviceLost")
			raise(syscall.SIGABRT)
		case mode == "hang" && done == arg:
			time.Sleep(time.Hour)
		case mode == "short" && done == arg:
			return
		}
	}
	switch mode {
	case "oom":
		fmt.Fprintln(os.Stderr, "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 17179869184")
		fmt.Fprintln(os.Stderr, "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers")
		fmt.Fprintln(os.Stderr, "main: error: failed to create context with model 'x.gguf'")
		logEvent("end")
		os.Exit(1)
	case "exit":
		logEvent("end")
		os.Exit(arg)
	case "forkterm":
		time.Sleep(time.Hour) // wait to be stopped
	}
}

func splitMode(s string) (string, int) {
	m, a, _ := strings.Cut(s, ":")
	n, _ := strconv.Atoi(a)
	return m, n
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: invalid parameter for argument: %s\n", s)
			os.Exit(1)
		}
		out = append(out, n)
	}
	return out
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func envFloat(k string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return def
}

func jsonRow(model string, p, n, d, reps int, ts, cv float64) string {
	tokens := p + n
	avgNs := int64(float64(tokens) / ts * 1e9)
	var sns, sts []string
	for r := 0; r < reps; r++ {
		f := 1.0
		if reps > 1 {
			f = 1 + cv*(2*float64(r)/float64(reps-1)-1)*1.2
		}
		sts = append(sts, strconv.FormatFloat(ts*f, 'f', 3, 64))
		sns = append(sns, strconv.FormatInt(int64(float64(avgNs)/f), 10))
	}
	return fmt.Sprintf(`{"build_commit": "Debian", "build_number": 11669, "cpu_info": "Fake CPU", "gpu_info": %q, "backends": %q, "model_filename": %q, "model_type": "llama ?B (guessed) all F32", "model_size": 658176, "model_n_params": 164544, "n_batch": 2048, "n_ubatch": 512, "n_threads": 1, "cpu_mask": "0x0", "cpu_strict": false, "poll": 50, "type_k": "f16", "type_v": "f16", "n_gpu_layers": %s, "n_cpu_moe": 0, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": false, "flash_attn": -1, "devices": %q, "tensor_split": "0.00", "tensor_buft_overrides": "none", "load_mode": "auto", "lazy_mode": "auto", "embeddings": false, "no_op_offload": 0, "no_host": false, "repack": true, "fit_target": 0, "fit_min_ctx": 0, "n_prompt": %d, "n_gen": %d, "n_depth": %d, "test_time": "2026-12-02T12:18:28Z", "avg_ns": %d, "stddev_ns": %d, "avg_ts": %f, "stddev_ts": %f, "samples_ns": [ %s ],"samples_ts": [ %s ]}`,
		envOr("FAKELLAMA_GPU_INFO", ""), envOr("FAKELLAMA_BACKENDS", "CPU"), model, envOr("FAKELLAMA_NGL", "-1"),
		envOr("FAKELLAMA_DEVICES", "auto"), p, n, d, avgNs, int64(float64(avgNs)*cv), ts, ts*cv, strings.Join(sns, ", "), strings.Join(sts, ", "))
}

// flood prints n bytes of log lines, then one 16 MiB line without a line break in between.
func flood(n int) {
	line := []byte(strings.Repeat("flood flood flood flood flood flood flood flood flood flood ", 16) + "\n")
	buf := make([]byte, 0, 64<<10)
	for len(buf)+len(line) <= cap(buf) {
		buf = append(buf, line...)
	}
	for written := 0; written < n; written += len(buf) {
		os.Stdout.Write(buf)
	}
	long := []byte(strings.Repeat("x", 64<<10))
	for i := 0; i < 256; i++ {
		os.Stdout.Write(long)
	}
	os.Stdout.Write([]byte("\n"))
}

// raise dies by sig with the kernel's default action, as a C program would (the Go runtime
// would otherwise turn it into a panic or ignore it).
func raise(sig syscall.Signal) {
	logEvent("end")
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	var sa [4]uint64 // struct sigaction: SIG_DFL, no flags, no mask
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(10 * time.Second)
	os.Exit(99)
}

func logEvent(what string) {
	p := os.Getenv("FAKELLAMA_LOG")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %d %d\n", what, os.Getpid(), time.Now().UnixNano())
	f.Close()
}
