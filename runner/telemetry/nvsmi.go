package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrGone marks a source that cannot be read any more (its command hung or exited, its device
// went away for good): the sampler stops asking it and records why.
var ErrGone = errors.New("source gone")

// NvidiaSMIQuery is the --query-gpu list the fallback asks for, in this order. The throttle
// mask's older name is kept: every driver since 2014 accepts it (newer ones also as
// clocks_event_reasons.active).
var NvidiaSMIQuery = []string{"index", "power.draw", "clocks.sm", "clocks.mem", "clocks.max.sm",
	"temperature.gpu", "memory.used", "memory.total", "clocks_throttle_reasons.active", "utilization.gpu"}

// NvidiaSMIArgs is the command line of the fallback sampler: CSV without header or units, one
// line per GPU every interval (-lms), until it is stopped.
func NvidiaSMIArgs(interval time.Duration) []string {
	ms := max(interval.Milliseconds(), 1)
	return []string{"--query-gpu=" + strings.Join(NvidiaSMIQuery, ","), "--format=csv,noheader,nounits",
		"-lms", strconv.FormatInt(ms, 10)}
}

// ParseNvidiaSMILine reads one CSV line of NvidiaSMIQuery. Fields nvidia-smi cannot give print
// "[N/A]" or "[Not Supported]" (memory on unified-memory boxes such as DGX Spark): they are
// left out, and notSupported names them.
func ParseNvidiaSMILine(line string) (pts []Point, notSupported []string, err error) {
	f := strings.Split(strings.TrimSpace(line), ",")
	if len(f) != len(NvidiaSMIQuery) {
		return nil, nil, fmt.Errorf("nvidia-smi: %d fields where %d were asked for: %q", len(f), len(NvidiaSMIQuery), clip(line))
	}
	idx, err := strconv.Atoi(strings.TrimSpace(f[0]))
	if err != nil {
		return nil, nil, fmt.Errorf("nvidia-smi: no GPU index in %q", clip(line))
	}
	dev := "GPU" + strconv.Itoa(idx)
	metrics := []struct {
		name  string
		scale float64
	}{{}, {PowerW, 1}, {ClockSMMHz, 1}, {ClockMemMHz, 1}, {ClockMaxMHz, 1}, {TempC, 1},
		{MemUsedBytes, 1 << 20}, {MemTotalBytes, 1 << 20}, {Throttle, 1}, {UtilPct, 1}}
	for i := 1; i < len(f); i++ {
		v := strings.TrimSpace(f[i])
		if strings.HasPrefix(v, "[") { // [N/A], [Not Supported], [Unknown Error]
			notSupported = append(notSupported, NvidiaSMIQuery[i])
			continue
		}
		var x float64
		if metrics[i].name == Throttle {
			u, perr := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
			x, err = float64(u), perr
		} else {
			x, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("nvidia-smi: %s is not a number: %q", NvidiaSMIQuery[i], clip(v))
		}
		pts = append(pts, Point{Device: dev, Metric: metrics[i].name, Value: x * metrics[i].scale})
		if metrics[i].name == Throttle {
			pts = append(pts, thermalPoint(dev, uint64(x)))
		}
	}
	return pts, notSupported, nil
}

func thermalPoint(dev string, mask uint64) Point {
	v := 0.0
	if mask&ReasonsThermal != 0 {
		v = 1
	}
	return Point{Device: dev, Metric: ThrottleHot, Value: v}
}

// Stream is a long-running command's standard output, line by line: live starts nvidia-smi
// -lms in its own process group; tests replay recorded lines.
type Stream interface {
	Lines() <-chan string // closed when the command has ended
	Close() error         // stops the command (bounded) and waits for it
}

// NvidiaSMI is the fallback NVIDIA sampler: it keeps the latest line per GPU from a running
// `nvidia-smi --query-gpu=… -lms N`. A GPU whose last line is older than Stale is not read; when
// no line at all came within Stale the stream is taken as hung: Read reports ErrGone.
type NvidiaSMI struct {
	Stale time.Duration
	now   func() time.Time

	stream  Stream
	mu      sync.Mutex
	latest  map[string][]Point
	seen    map[string]time.Time
	last    time.Time
	badLine string
	ended   bool
	done    chan struct{}
}

// NewNvidiaSMI reads s in a goroutine of its own until it ends or Close.
func NewNvidiaSMI(s Stream, stale time.Duration, now func() time.Time) *NvidiaSMI {
	if now == nil {
		now = time.Now
	}
	n := &NvidiaSMI{Stale: stale, now: now, stream: s, latest: map[string][]Point{}, seen: map[string]time.Time{},
		last: now(), done: make(chan struct{})}
	go n.consume()
	return n
}

func (n *NvidiaSMI) consume() {
	defer close(n.done)
	for line := range n.stream.Lines() {
		if strings.TrimSpace(line) == "" {
			continue
		}
		pts, _, err := ParseNvidiaSMILine(line)
		n.mu.Lock()
		if err != nil {
			n.badLine = err.Error()
		} else if len(pts) > 0 {
			dev := pts[0].Device
			n.latest[dev], n.seen[dev], n.last, n.badLine = pts, n.now(), n.now(), ""
		}
		n.mu.Unlock()
	}
	n.mu.Lock()
	n.ended = true
	n.mu.Unlock()
}

func (n *NvidiaSMI) Name() string { return "nvidia-smi" }

// Close stops the command and the reader.
func (n *NvidiaSMI) Close() error {
	err := n.stream.Close()
	<-n.done
	return err
}

// Read returns the latest readings of every GPU seen within Stale, in index order.
func (n *NvidiaSMI) Read(context.Context) ([]Point, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	if n.ended {
		return nil, fmt.Errorf("nvidia-smi exited: %w", ErrGone)
	}
	if now.Sub(n.last) > n.Stale {
		return nil, fmt.Errorf("nvidia-smi printed nothing for %s (hung?): %w", now.Sub(n.last).Round(time.Millisecond), ErrGone)
	}
	var pts []Point
	for i := 0; i < 64; i++ {
		dev := "GPU" + strconv.Itoa(i)
		if at, ok := n.seen[dev]; ok && now.Sub(at) <= n.Stale {
			pts = append(pts, n.latest[dev]...)
		}
	}
	if n.badLine != "" {
		return pts, errors.New(n.badLine)
	}
	return pts, nil
}
