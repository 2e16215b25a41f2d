package quantfmt

import (
	"strings"
	"testing"
)

// The real llama-quantize runs of build 11669 on the medium model (captured through the pty):
// the opening line, every tensor with its sizes, the fallbacks, the model and quant sizes and
// the times, each figure tracing to the raw line that prints it.
func TestQuantizeOutput(t *testing.T) {
	cases := []struct {
		name      string
		typ       string
		dry       bool
		complete  bool
		quantMiB  float64
		quantBPW  float64
		converted map[string]int // target type -> tensors
		fallbacks int
		sizeLater int // tensors whose sizes came on a later line
	}{
		{"quantize-q4_0", "Q4_0", false, true, 13.78, 4.52, map[string]int{"q4_0": 57, "q6_K": 1, "": 17}, 0, 0},
		{"quantize-dry-run", "Q4_K_M", true, true, 15.72, 5.16, map[string]int{"q4_K": 45, "q6_K": 5, "q5_0": 4, "q8_0": 4, "": 17}, 8, 0},
		{"quantize-q4_k_m-imatrix", "Q4_K_M", false, true, 15.72, 5.16, map[string]int{"q4_K": 45, "q6_K": 5, "q5_0": 4, "q8_0": 4, "": 17}, 8, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, lines := fixture(t, c.name)
			o := ParseQuantizeOutput(text)
			if o.Complete() != c.complete || o.Total != 75 || o.Done() != 75 || len(o.Tensors) != 75 || len(o.Failures) != 0 {
				t.Fatalf("complete %v total %d done %d tensors %d failures %v", o.Complete(), o.Total, o.Done(), len(o.Tensors), o.Failures)
			}
			if o.Start == nil || o.Start.Type != c.typ || o.Start.Threads != 1 || o.Start.DryRun != c.dry ||
				!strings.HasSuffix(o.Start.Input, "medium-llama-f16.gguf") || (o.Start.Output == "") != c.dry {
				t.Errorf("start %+v", o.Start)
			}
			if o.ModelSize == nil || o.ModelSize.MiB.Value != 48.79 || o.ModelSize.BPW.Value != 16.01 {
				t.Errorf("model size %+v", o.ModelSize)
			} else {
				traces(t, lines, "model MiB", o.ModelSize.MiB)
			}
			if o.QuantSize == nil || o.QuantSize.MiB.Value != c.quantMiB || o.QuantSize.BPW.Value != c.quantBPW {
				t.Errorf("quant size %+v", o.QuantSize)
			} else {
				traces(t, lines, "quant MiB", o.QuantSize.MiB)
				traces(t, lines, "quant BPW", o.QuantSize.BPW)
			}
			if !c.dry && (o.QuantizeMs == nil || o.TotalMs == nil) {
				t.Errorf("times %v %v", o.QuantizeMs, o.TotalMs)
			}
			got := map[string]int{}
			later := 0
			for i, tn := range o.Tensors {
				got[tn.To]++
				if tn.Index != i+1 || tn.Total != 75 || len(tn.Shape) != 4 || !tn.Sized {
					t.Errorf("tensor %d: %+v", i, tn)
				}
				if raw := lines[tn.Line-1]; !strings.Contains(raw, "] "+tn.Name+" ") || !strings.Contains(raw, tn.From) {
					t.Errorf("tensor %s: line %d is %q", tn.Name, tn.Line, raw)
				}
				sl := tn.Line
				if tn.SizeLine != 0 {
					sl, later = tn.SizeLine, later+1
				}
				traces(t, lines, tn.Name+" size", Figure{Value: tn.SizeMiB, Line: sl})
				traces(t, lines, tn.Name+" new size", Figure{Value: tn.NewSizeMiB, Line: sl})
				if tn.To == "" && (tn.From != "f32" || tn.NewSizeMiB != tn.SizeMiB) {
					t.Errorf("copied tensor %+v", tn)
				}
			}
			for k, v := range c.converted {
				if got[k] != v {
					t.Errorf("%d tensors to %q, want %d (all: %v)", got[k], k, v, got)
				}
			}
			if len(o.Fallbacks) != c.fallbacks || o.FallbackTotal != c.fallbacks || later != c.sizeLater {
				t.Errorf("%d fallbacks (total line %d), %d sizes on a later line", len(o.Fallbacks), o.FallbackTotal, later)
			}
			for _, fb := range o.Fallbacks {
				if fb.Cols != 1376 || fb.Block != 256 || !strings.HasSuffix(fb.Tensor, "ffn_down.weight") || !strings.Contains(lines[fb.Line-1], fb.Used) {
					t.Errorf("fallback %+v", fb)
				}
			}
		})
	}
}

// The real failures: each is a failure line quoting the tool, and the run is not complete.
func TestQuantizeOutputFailures(t *testing.T) {
	cases := []struct {
		name  string
		total int
		want  []string
	}{
		{"quantize-bad-type", 0, []string{"invalid ftype 'Q9_9'"}},
		{"quantize-requant", 75, []string{"requantizing from type q8_0 is disabled", "failed to quantize model from"}},
		{"quantize-needs-imatrix", 0, []string{"ERROR: this quantization requires an importance matrix!", "this quantization requires an imatrix!"}},
		{"quantize-bad-imatrix", 0, []string{"failed to load imatrix"}},
		{"quantize-missing-input", 0, []string{"failed to load model", "failed to quantize model from"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, lines := fixture(t, c.name)
			o := ParseQuantizeOutput(text)
			if o.Complete() || o.Total != c.total || o.Done() != 0 || o.QuantSize != nil {
				t.Fatalf("complete %v total %d done %d quant %v", o.Complete(), o.Total, o.Done(), o.QuantSize)
			}
			all := ""
			for _, f := range o.Failures {
				if lines[f.Line-1] == "" || !strings.Contains(lines[f.Line-1], f.Text) {
					t.Errorf("failure %+v: line is %q", f, lines[f.Line-1])
				}
				all += f.Text + "\n"
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("failures %q lack %q", all, w)
				}
			}
		})
	}
}

// A tensor's line cut by another message, and its sizes on a later line, give one tensor;
// events say what each line added.
func TestQuantizeParserEvents(t *testing.T) {
	var p QuantizeParser
	steps := []struct {
		line string
		kind QuantizeEventKind
	}{
		{"llama_quantize: quantizing 'in.gguf' to 'out.gguf' as Q4_K_M using 1 threads", QuantizeStarted},
		{"[   1/   2] output.weight                        - [   512,    259,      1,      1], type =    f16, ", QuantizeTensorLine},
		{"====== llama_model_quantize_impl: did not find weights for output.weight", QuantizeNothing},
		{"converting to q6_K .. size =     0.25 MiB ->     0.10 MiB", QuantizeTensorDone},
		{"[   2/   2] output_norm.weight                   - [   512,      1,      1,      1], type =    f32, size =    0.002 MiB", QuantizeTensorLine},
		{"llama_model_quantize_impl: quant size  =     0.10 MiB (5.00 BPW)", QuantizeSizes},
	}
	for i, s := range steps {
		if ev := p.Line(i+1, s.line); ev.Kind != s.kind {
			t.Fatalf("line %d: %q, want %q", i+1, ev.Kind, s.kind)
		}
	}
	o := p.Result()
	if !o.Complete() || o.Tensors[0].To != "q6_K" || o.Tensors[0].SizeLine != 4 || o.Tensors[1].To != "" || o.Tensors[1].NewSizeMiB != 0.002 {
		t.Fatalf("%+v", o)
	}
}
