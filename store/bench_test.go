package store

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
)

// Benchmarks for `make bench`:
//
//	go test -run '^$' -bench 'InsertSamples|PlotSeriesQuery' -benchtime 1x ./store/   (insert, bytes)
//	go test -run '^$' -bench 'PlotSeriesQuery' ./store/                                (query timing)

const benchTotalRows = 1_000_000

var benchModels = []string{"qwen3moe 30B.A3B Q4_K - Medium", "gpt-oss 20B MXFP4 MoE", "deepseek2 30B.A3B Q4_K - Medium", "qwen3 14B Q4_K - Medium"}

var benchDepths = []int64{0, 2048, 4096, 8192, 16384, 32768}

// benchRowPool returns k realistic llama-bench rows (complete jsonl rows, 5 repetitions each)
// cycling through models, pp512/tg128 and the default depth sweep.
func benchRowPool(tb testing.TB, k int) []benchfmt.Result {
	tb.Helper()
	line, err := os.ReadFile(filepath.Join("..", "runner", "benchfmt", "testdata", "tput-t2.stdout"))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl, err := benchfmt.ParseJSONLLine(line[:indexByte(line, '\n')])
	if err != nil {
		tb.Fatal(err)
	}
	pool := make([]benchfmt.Result, k)
	for i := range pool {
		r := tmpl
		r.ModelType = benchModels[(i/12)%len(benchModels)]
		r.ModelFilename = "/srv/models/" + r.ModelType + ".gguf"
		r.NDepth = benchDepths[(i/2)%len(benchDepths)]
		if i%2 == 0 {
			r.NPrompt, r.NGen = 512, 0
		} else {
			r.NPrompt, r.NGen = 0, 128
		}
		// values printed as llama-bench prints them: %f for the means, 6 significant digits
		// for samples_ts
		r.AvgTs = round(50+float64(i%997)*1.37123, 1e6)
		r.StddevTs = round(r.AvgTs/100, 1e6)
		r.AvgNs = int64(1e9 / r.AvgTs * 128)
		r.SamplesTs = []float64{sig6(r.AvgTs * 0.99), sig6(r.AvgTs * 1.01), sig6(r.AvgTs), sig6(r.AvgTs * 0.995), sig6(r.AvgTs * 1.005)}
		r.SamplesNs = []int64{r.AvgNs, r.AvgNs + 1000, r.AvgNs - 1000, r.AvgNs + 17, r.AvgNs - 17}
		pool[i] = r
	}
	return pool
}

func round(v, scale float64) float64 { return math.Round(v*scale) / scale }

func sig6(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return f
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return len(b)
}

// BenchmarkInsertSamples streams 1,000,000 llama-bench rows through a SampleWriter (batched
// commits) into a fresh notebook and reports rows/s and the file size per million rows.
func BenchmarkInsertSamples(b *testing.B) {
	pool := benchRowPool(b, 4096)
	var rate, size float64
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		path := filepath.Join(dir, "nb.db")
		n, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := n.CreateStudy(ctx, Study{Name: "insert", Kind: StudyThroughput})
		legs := make([]*SampleWriter, 10)
		for i := range legs {
			_, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: fmt.Sprint("leg ", i)})
			if err != nil {
				b.Fatal(err)
			}
			legs[i] = sw
		}
		b.StartTimer()
		start := time.Now()
		const chunk = 250
		for sent := 0; sent < benchTotalRows; sent += chunk {
			off := sent % len(pool)
			if off+chunk > len(pool) {
				off = 0
			}
			if err := legs[(sent/chunk)%len(legs)].AddBench(pool[off : off+chunk]...); err != nil {
				b.Fatal(err)
			}
		}
		for _, sw := range legs {
			if err := sw.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		el := time.Since(start)
		b.StopTimer()
		rate = benchTotalRows / el.Seconds()
		var count int64
		n.rdb.QueryRow("SELECT COUNT(*) FROM bench_samples").Scan(&count)
		if count != benchTotalRows {
			b.Fatalf("%d rows stored", count)
		}
		if err := n.Close(); err != nil { // checkpoints the WAL into the main file
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		size = float64(fi.Size()) * 1e6 / benchTotalRows
		b.StartTimer()
	}
	b.ReportMetric(rate, "rows/s")
	b.ReportMetric(size/(1<<20), "MiB/1M-samples")
	b.ReportMetric(size, "bytes/1M-samples")
}

type plotNotebook struct {
	n          *Notebook
	dir        string
	smallStudy int64 // 10,000 rows
	bigStudy   int64 // 500,000 rows
	err        error
}

var (
	plotOnce sync.Once
	plotNB   plotNotebook
)

// plotNotebookFor builds, once per test binary, a notebook of 1,000,000 samples: one study of
// 500,000 rows and 50 studies of 10,000 rows (10 legs each).
func plotNotebookFor(b *testing.B) *plotNotebook {
	plotOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sparkbench-plot-bench-")
		if err != nil {
			plotNB.err = err
			return
		}
		plotNB.dir = dir
		n, err := Open(filepath.Join(dir, "nb.db"))
		if err != nil {
			plotNB.err = err
			return
		}
		plotNB.n = n
		pool := benchRowPool(b, 10000)
		addStudy := func(name string, rows int) int64 {
			st, err := n.CreateStudy(ctx, Study{Name: name, Kind: StudyThroughput})
			if err != nil {
				plotNB.err = err
				return 0
			}
			perLeg := rows / 10
			for l := 0; l < 10; l++ {
				leg, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: fmt.Sprint("leg ", l)})
				if err != nil {
					plotNB.err = err
					return 0
				}
				for sent := 0; sent < perLeg; sent += 1000 {
					sw.AddBench(pool[sent%len(pool) : sent%len(pool)+1000]...)
				}
				if _, _, err := n.FinishLeg(ctx, leg.ID, LegOutcome{}); err != nil {
					plotNB.err = err
					return 0
				}
			}
			return st.ID
		}
		start := time.Now()
		plotNB.bigStudy = addStudy("big", 500_000)
		for i := 0; i < 50 && plotNB.err == nil; i++ {
			id := addStudy(fmt.Sprint("study ", i), 10_000)
			if i == 25 {
				plotNB.smallStudy = id
			}
		}
		b.Logf("built a 1,000,000-sample notebook in %v", time.Since(start).Round(time.Millisecond))
	})
	if plotNB.err != nil {
		b.Fatal(plotNB.err)
	}
	return &plotNB
}

// BenchmarkPlotSeriesQuery: the metric-by-depth series of one study on a 1M-sample notebook.
func BenchmarkPlotSeriesQuery(b *testing.B) {
	nb := plotNotebookFor(b)
	for _, c := range []struct {
		name  string
		study int64
		rows  int
	}{{"study-10k-rows", nb.smallStudy, 10_000}, {"study-500k-rows", nb.bigStudy, 500_000}} {
		b.Run(c.name, func(b *testing.B) {
			var series []BenchSeries
			for b.Loop() {
				var err error
				series, err = nb.n.BenchSeries(ctx, c.study, LegFilter{})
				if err != nil {
					b.Fatal(err)
				}
			}
			points := 0
			for _, s := range series {
				for _, p := range s.Points {
					points += p.N
				}
			}
			if len(series) != 8 || points != c.rows {
				b.Fatalf("%d series covering %d rows", len(series), points)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/query")
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if plotNB.n != nil {
		plotNB.n.Close()
	}
	if plotNB.dir != "" {
		os.RemoveAll(plotNB.dir)
	}
	os.Exit(code)
}
