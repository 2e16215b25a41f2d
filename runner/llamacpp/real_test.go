package llamacpp_test

// Tests against the real llama.cpp binaries (scripts/install-llama.sh or --llama-dir) and the
// project's generated models. Every run passes -t 1 (see llamatest.Threads).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
)

func TestRealInspect(t *testing.T) {
	loc := llamatest.Binaries(t)
	b, err := llamacpp.Inspect(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	if b.BuildNumber <= 0 || !strings.HasPrefix(b.VersionLine, "version: ") || b.Commit == "" {
		t.Fatalf("version not parsed: %+v", b)
	}
	if len(b.Backends) == 0 || !strings.HasPrefix(b.Backends[0], "CPU") && !strings.Contains(strings.Join(b.Backends, ","), "CPU") {
		t.Errorf("no CPU backend reported: %q", b.Backends)
	}
	if len(b.Binaries) != 2 {
		t.Fatalf("want 2 hashed binaries, got %+v", b.Binaries)
	}
	for _, bin := range b.Binaries {
		if len(bin.SHA256) != 64 || bin.Size == 0 {
			t.Errorf("bad hash for %s: %+v", bin.Name, bin)
		}
	}
}

// benchRow is the part of llama-bench's jsonl this test checks.
type benchRow struct {
	ModelFilename string  `json:"model_filename"`
	NPrompt       int     `json:"n_prompt"`
	NGen          int     `json:"n_gen"`
	NThreads      int     `json:"n_threads"`
	AvgTS         float64 `json:"avg_ts"`
	StddevTS      float64 `json:"stddev_ts"`
	BuildNumber   int     `json:"build_number"`
}

func TestRealBenchEveryGeneratedModel(t *testing.T) {
	loc := llamatest.Binaries(t)
	for _, model := range llamatest.Models(t) {
		t.Run(filepath.Base(model), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, loc.Bench, "-m", model, "-t", llamatest.Threads,
				"-p", "32", "-n", "16", "-r", "2", "-o", "jsonl")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("llama-bench: %v\n%s", err, stderr.String())
			}
			var pp, tg int
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var r benchRow
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("jsonl line %q: %v", sc.Text(), err)
				}
				if r.ModelFilename != model || r.NThreads != 1 || r.BuildNumber <= 0 {
					t.Errorf("row does not describe this run: %+v", r)
				}
				if !(r.AvgTS > 0) {
					t.Errorf("t/s must be > 0: %+v", r)
				}
				switch {
				case r.NGen == 0 && r.NPrompt == 32:
					pp++
				case r.NPrompt == 0 && r.NGen == 16:
					tg++
				default:
					t.Errorf("unexpected test: %+v", r)
				}
				t.Logf("%s pp%d tg%d: %.1f ± %.1f t/s", filepath.Base(model), r.NPrompt, r.NGen, r.AvgTS, r.StddevTS)
			}
			if pp != 1 || tg != 1 {
				t.Fatalf("want one pp and one tg row, got pp=%d tg=%d from:\n%s", pp, tg, out)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// groupAlive reports whether any process of process group pgid is still alive (per /proc),
// zombies excluded.
func groupAlive(pgid int) []int {
	var alive []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			alive = append(alive, pid)
		}
	}
	return alive
}

func TestRealServerCompletion(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	port := freePort(t)
	cmd := exec.Command(loc.Server, "-m", model, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"-t", llamatest.Threads, "-c", "512", "--parallel", "1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
	}
	defer stop()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("llama-server exited before it was healthy: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("llama-server not healthy within 60 s\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	const nPredict = 24
	body, _ := json.Marshal(map[string]any{
		"prompt": "Once upon a time", "n_predict": nPredict, "ignore_eos": true,
		"temperature": 0, "seed": 42, "cache_prompt": false, "stream": false,
	})
	resp, err := client.Post(base+"/completion", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("completion: HTTP %d: %s", resp.StatusCode, raw)
	}
	var got struct {
		TokensPredicted int `json:"tokens_predicted"`
		Timings         struct {
			PromptN            int     `json:"prompt_n"`
			PredictedN         int     `json:"predicted_n"`
			PredictedPerSecond float64 `json:"predicted_per_second"`
		} `json:"timings"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("completion body: %v: %s", err, raw)
	}
	if got.Timings.PredictedN != nPredict || got.TokensPredicted != nPredict {
		t.Fatalf("want %d predicted tokens, got timings.predicted_n=%d tokens_predicted=%d", nPredict, got.Timings.PredictedN, got.TokensPredicted)
	}
	if !(got.Timings.PredictedPerSecond > 0) || got.Timings.PromptN <= 0 {
		t.Fatalf("timings not plausible: %+v", got.Timings)
	}
	t.Logf("completion: %d tokens at %.0f t/s (server timings)", got.Timings.PredictedN, got.Timings.PredictedPerSecond)

	stop()
	if alive := groupAlive(pgid); len(alive) > 0 {
		t.Fatalf("processes of the server's group survive: %v", alive)
	}
}

// TestRealCountTokens counts the project corpus with the medium model's tokenizer, and reads
// a missing file as an error that names the tool.
func TestRealCountTokens(t *testing.T) {
	loc := llamatest.Binaries(t)
	tool, err := llamacpp.TokenizeToolPath(loc)
	if err != nil {
		t.Fatal(err)
	}
	model := llamatest.Model(t, "medium-llama-f16.gguf")
	corpus := filepath.Join(llamatest.RepoRoot(), "assets", "corpus", "sparkbench-corpus-v1.txt")
	n, err := llamacpp.CountTokens(context.Background(), tool, model, corpus, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(corpus)
	if err != nil {
		t.Fatal(err)
	}
	// the generated models' vocabulary falls back to bytes (a space is the three bytes of
	// U+2581): at least one token per four bytes, at most three per byte (+BOS)
	if n < int(st.Size())/4 || n > 3*int(st.Size())+1 {
		t.Errorf("%d tokens of a %d-byte corpus", n, st.Size())
	}
	short := filepath.Join(t.TempDir(), "short.txt")
	if err := os.WriteFile(short, []byte("one two three"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := llamacpp.CountTokens(context.Background(), tool, model, short, nil); err != nil || m < 4 || m > 3*13+1 {
		t.Errorf("short text: %d tokens, %v", m, err)
	}
	if _, err := llamacpp.CountTokens(context.Background(), tool, model, filepath.Join(t.TempDir(), "absent.txt"), nil); err == nil || !strings.Contains(err.Error(), llamacpp.TokenizeTool) {
		t.Errorf("missing file: %v", err)
	}
}

// TestRealProjectMemory: llama-fit-params projects the medium Q4_0 model's memory on this
// CPU-only build as host memory, more at a longer context (the KV cache grows), and a missing
// model is an error naming the tool.
func TestRealProjectMemory(t *testing.T) {
	loc := llamatest.Binaries(t)
	tool, err := llamacpp.FitParamsTool(loc)
	if err != nil {
		t.Fatal(err)
	}
	model := llamatest.Model(t, "medium-llama-q4_0.gguf")
	small, err := llamacpp.ProjectMemory(context.Background(), tool, model, nil, 1024)
	if err != nil {
		t.Fatal(err)
	}
	large, err := llamacpp.ProjectMemory(context.Background(), tool, model, nil, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if small.Of != "host" || small.MiB <= 0 || large.MiB <= small.MiB || !strings.Contains(large.Line, "projected to use") {
		t.Errorf("projections %+v %+v", small, large)
	}
	if _, err := llamacpp.ProjectMemory(context.Background(), tool, filepath.Join(t.TempDir(), "absent.gguf"), nil, 1024); err == nil || !strings.Contains(err.Error(), llamacpp.FitTool) {
		t.Errorf("missing model: %v", err)
	}
}
