package loadgen

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkScheduleAccuracy offers an open-loop constant rate of 100, 1,000 and 5,000
// requests/s (half a second of requests, at most 2,500) to the fake SSE server answering at
// once with 4 tokens, and reports how late the client sent them: the p50, p99 and maximum of
// actual - scheduled send time (µs), with the achieved over the offered rate. A p99 within the
// default schedule slack (10 ms) means the client kept its schedule at that rate.
func BenchmarkScheduleAccuracy(b *testing.B) {
	for _, rate := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			f, err := StartFake(FakeConfig{Tokens: 4})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			n := min(rate/2, 2500)
			var late []float64
			var achieved float64
			for range b.N {
				rs := collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: n, NPredict: 4, Prompt: prompt,
					Schedule: constantSchedule(n, time.Second/time.Duration(rate))}))
				first, last := time.Duration(1<<62), time.Duration(0)
				for _, r := range rs {
					if !r.OK() {
						b.Fatalf("request failed: %+v", r)
					}
					late = append(late, float64(r.Send-r.Scheduled)/1e3)
					first, last = min(first, r.Send), max(last, r.Send)
				}
				achieved += float64(n-1) / (last - first).Seconds()
			}
			slices.Sort(late)
			b.ReportMetric(quantile(late, 0.5), "late-p50-us")
			b.ReportMetric(quantile(late, 0.99), "late-p99-us")
			b.ReportMetric(late[len(late)-1], "late-max-us")
			b.ReportMetric(achieved/float64(b.N)/float64(rate), "achieved/offered")
		})
	}
}
