package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"sparkbench/app"
	"sparkbench/app/quant"
)

// Validate re-checks the form in the background through the kind's Validate (files are hashed
// at Register) and shows every problem and the estimate, the newest check winning.
func (v *QuantWizard) Validate() {
	if v.Problems == nil || v.RegisterBtn == nil || v.Estimate == nil || v.Maximize == nil {
		return // still being built
	}
	p, errs := v.Plan()
	ref, known := v.refEntry(p.Reference.Path)
	v.check(func(int) func() {
		lines := append([]string(nil), errs...)
		ok := len(errs) == 0
		if v.svc == nil {
			lines, ok = append(lines, "quantization ladders are unavailable: the notebook is not open (see the Bench section)"), false
		}
		estimate := ""
		if ok {
			probs, err := v.svc.ValidateQuant(context.Background(), p)
			if err != nil {
				lines, ok = append(lines, err.Error()), false
			} else {
				probLines, valid := problemLines(probs)
				lines, ok = append(lines, probLines...), valid
			}
		}
		if ok {
			estimate = v.estimate(p, ref, known)
		}
		return func() {
			showProblems(v.Problems, lines)
			v.Estimate.SetText(estimate)
			setEnabled(v.RegisterBtn, ok)
		}
	})
}

// estimate is the form's estimate: the legs, the disk the derived models take (an upper
// estimate, quant.EstimateBytes) and the duration the service estimates. Off the UI goroutine.
func (v *QuantWizard) estimate(p *quant.Plan, ref app.ModelEntry, known bool) string {
	q := *p
	q.Defaults()
	imatrix := ""
	if q.Imatrix != nil {
		imatrix = fmt.Sprintf("an importance matrix (llama-imatrix, %d chunks of %d tokens), ", q.Imatrix.Chunks, q.Imatrix.Ctx)
	}
	text := fmt.Sprintf("%d candidate(s): %sbase logits, then per candidate llama-quantize, a KLD run on %d chunks of %d tokens and %d speed leg(s) of %d repetitions",
		len(q.Quants), imatrix, q.Quality.Chunks, q.Quality.Ctx, len(q.Speed.Depths), q.Speed.Reps)
	var disk int64
	var unknown []string
	for _, typ := range q.Quants {
		n, ok := quant.EstimateBytes(ref.Size, ref.FileType, typ)
		if !known || !ok {
			unknown = append(unknown, typ)
			continue
		}
		disk += n
	}
	text += fmt.Sprintf("; disk for the derived models at most %s in the data folder's quant-cache (an upper estimate; cached ones are reused)", app.HumanBytes(disk))
	if len(unknown) > 0 {
		text += " not counting " + strings.Join(unknown, ", ") + " (no size estimate)"
	}
	if d, err := v.svc.EstimateQuant(context.Background(), p); err == nil {
		text += "; estimated duration " + d
	} else {
		text += "; no estimated duration: " + err.Error()
	}
	return text
}

// prepareFiles hashes the reference (through the library, cached in the notebook) and the
// corpus and fills their SHA-256 in, then the defaults: the plan exactly as it will be frozen,
// and its SHA-256. It runs off the UI goroutine.
func (v *QuantWizard) prepareFiles(ctx context.Context, p *quant.Plan) (*quant.Plan, string, error) {
	type planFile struct {
		what string
		ref  *quant.FileRef
	}
	files := []planFile{{"reference", &p.Reference}, {"quality corpus", &p.Quality.Corpus}}
	if p.Imatrix != nil {
		files = append(files, planFile{"calibration text", &p.Imatrix.Calibration})
	}
	for _, f := range files {
		if !filepath.IsAbs(f.ref.Path) {
			return nil, "", fmt.Errorf("%s %q: give the file's full path (the plan is written to the data folder's plans/)", f.what, f.ref.Path)
		}
	}
	if sums, err := modelHashes(ctx, v.lib, []string{p.Reference.Path}); err != nil {
		return nil, "", err
	} else if sum, ok := sums[p.Reference.Path]; ok {
		p.Reference.SHA256 = sum
	}
	for _, f := range files {
		if f.ref.SHA256 != "" {
			continue
		}
		sum, err := app.HashFile(ctx, f.ref.Path, nil)
		if err != nil {
			return nil, "", err
		}
		f.ref.SHA256 = sum
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	return p, sum, err
}

// Register prepares the plan (its files hashed) and registers it without asking: the
// Register… button asks first, showing the plan and its SHA-256. It runs in the background;
// done reports on the UI goroutine.
func (v *QuantWizard) Register(done func(QuantRegistration, error)) {
	p, errs := v.Plan()
	registerInBackground(p, errs, v.prepareFiles, v.registerPrepared, done)
}

func (v *QuantWizard) registerPrepared(ctx context.Context, p *quant.Plan, sum string) (QuantRegistration, error) {
	if v.svc == nil {
		return QuantRegistration{}, errNoRegistrar
	}
	reg, err := v.svc.RegisterQuant(ctx, p)
	if err == nil {
		err = checkRegistered(reg.PlanSHA256, sum, reg.StudyID)
	}
	return reg, err
}

func (v *QuantWizard) confirmRegister() {
	p, errs := v.Plan()
	if len(errs) > 0 {
		showErrorLines(v.win, errs)
		return
	}
	msg := fmt.Sprintf("This freezes exactly this plan, its rule and its %d prediction(s) in the notebook before anything runs; nothing registered can be edited afterwards.", len(p.Predictions))
	freeze(v.win, v.RegisterBtn, "hashing the reference (cached in the notebook), the corpus and the calibration text…", msg,
		func(ctx context.Context) (any, string, error) { return v.prepareFiles(ctx, p) },
		func(ctx context.Context, plan any, sum string) (registered, error) {
			reg, err := v.registerPrepared(ctx, plan.(*quant.Plan), sum)
			return registered{reg.StudyID, false, fmt.Sprintf("%s: study %d (quant)\nplan sha256 %s\nplan file %s", reg.Name, reg.StudyID, reg.PlanSHA256, reg.File)}, err
		}, v.onDone)
}
