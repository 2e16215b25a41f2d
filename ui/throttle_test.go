package ui

import (
	"sync"

	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

func TestThrottleCoalescesAndKeepsTheLatest(t *testing.T) {
	var mu sync.Mutex
	var got []int
	var times []time.Time
	th := &Throttle{interval: 50 * time.Millisecond, run: func(f func()) { f() }}
	for i := 1; i <= 200; i++ {
		i := i
		th.Submit(func() {
			mu.Lock()
			got = append(got, i)
			times = append(times, time.Now())
			mu.Unlock()
		})
		time.Sleep(time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	// 200 submissions over ~200 ms at 50 ms: a handful of deliveries, not 200.
	if len(got) < 2 || len(got) > 12 {
		t.Fatalf("%d deliveries: %v", len(got), got)
	}
	if got[len(got)-1] != 200 {
		t.Fatalf("the last update was lost: %v", got)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 45*time.Millisecond {
			t.Fatalf("deliveries %v apart, want >= 50 ms: %v", gap, times)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("out of order: %v", got)
		}
	}
}

func TestThrottleStop(t *testing.T) {
	var calls atomic.Int32
	th := &Throttle{interval: 20 * time.Millisecond, run: func(f func()) { f() }}
	th.Submit(func() { calls.Add(1) }) // delivered at once (nothing before it)
	time.Sleep(5 * time.Millisecond)
	th.Submit(func() { calls.Add(1) }) // pending: dropped by Stop
	th.Stop()
	th.Submit(func() { calls.Add(1) }) // refused
	time.Sleep(60 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d deliveries, want only the one before Stop", n)
	}
}

// build runs a constructor under the UI lock: background jobs of earlier tests may still be
// updating widgets (Fyne's caches are shared), and the lock keeps them one at a time.
func build[T any](f func() T) T {
	var v T
	Locked(func() { v = f() })
	return v
}

// newTestApp is test.NewTempApp under the UI lock: creating (and, at cleanup, replacing) the
// test app resets Fyne's shared font and theme caches, which an earlier test's background job
// may still be using.
func newTestApp(t *testing.T) fyne.App {
	var a fyne.App
	Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { Locked(func() { test.NewApp() }) })
	return a
}
