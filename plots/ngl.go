package plots

import (
	"strings"

	"gonum.org/v1/plot"
)

// KindNGL is throughput against the number of layers offloaded to a device (-ngl).
const KindNGL Kind = "ngl"

// NGLChart is the input of the offload chart: a llama-bench metric against -ngl, one series
// per model and configuration. Each point's Depth field holds the -ngl value (-1, llama-bench's
// "auto", is not drawn: it has no place on the axis).
type NGLChart struct {
	Meta      Meta          `json:"meta"`
	Metric    string        `json:"metric"`
	Interval  IntervalKind  `json:"interval,omitempty"`
	Series    []DepthSeries `json:"series"`
	MaxPoints int           `json:"max_points,omitempty"`
}

func (c NGLChart) Kind() Kind                { return KindNGL }
func (c NGLChart) Plot() (*plot.Plot, error) { return NGL(c) }
func (c NGLChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// NGL draws throughput against -ngl with the depth chart's lines, error bars and notes.
func NGL(c NGLChart) (*plot.Plot, error) {
	p, err := Depth(DepthChart{Meta: c.Meta, Metric: c.Metric, Interval: c.Interval, Series: c.Series, MaxPoints: c.MaxPoints})
	if err != nil {
		return nil, err
	}
	metric := strings.TrimSpace(c.Metric)
	if metric == "" {
		metric = "throughput"
	}
	p.Title.Text = metric + " throughput vs layers offloaded (-ngl)"
	p.X.Label.Text = "layers offloaded to the device (-ngl)"
	return p, nil
}
