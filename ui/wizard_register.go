package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
)

// prepareFiles hashes the plan's models (cached in the notebook) and fills their SHA-256 in,
// then the defaults: the plan exactly as it will be frozen, and its SHA-256. It runs off the
// UI goroutine.
func (v *WizardView) prepareFiles(ctx context.Context, p *study.Plan) (*study.Plan, string, error) {
	paths := make([]string, len(p.Models))
	for i, m := range p.Models {
		paths[i] = m.Path
	}
	sums, err := modelHashes(ctx, v.lib, paths)
	if err != nil {
		return nil, "", err
	}
	for i := range p.Models {
		if sum, ok := sums[p.Models[i].Path]; ok {
			p.Models[i].SHA256 = sum
		}
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	return p, sum, err
}

// Register prepares the plan (models hashed) and registers it without asking: the Register…
// button asks first, showing the plan and its SHA-256. It runs in the background; done
// reports on the UI goroutine.
func (v *WizardView) Register(done func(study.Registration, error)) {
	p, errs := v.Plan()
	registerInBackground(p, errs, v.prepareFiles, v.registerPrepared, done)
}

func (v *WizardView) registerPrepared(ctx context.Context, p *study.Plan, sum string) (study.Registration, error) {
	if v.reg == nil {
		return study.Registration{}, errNoRegistrar
	}
	reg, err := v.reg.Register(ctx, p)
	if err == nil {
		err = checkRegistered(reg.PlanSHA256, sum, reg.StudyID)
	}
	return reg, err
}

func (v *WizardView) confirmRegister() {
	p, errs := v.Plan()
	if len(errs) > 0 {
		showErrorLines(v.win, errs)
		return
	}
	msg := fmt.Sprintf("This freezes exactly this plan and its %d prediction(s) in the notebook; nothing registered can be edited afterwards (changes are amendments, or deviations once legs ran).", len(p.Predictions))
	freeze(v.win, v.RegisterBtn, "hashing the models (cached in the notebook)…", msg,
		func(ctx context.Context) (any, string, error) { return v.prepareFiles(ctx, p) },
		func(ctx context.Context, plan any, sum string) (registered, error) {
			reg, err := v.registerPrepared(ctx, plan.(*study.Plan), sum)
			return registered{reg.StudyID, reg.Existing, fmt.Sprintf("%s: study %d\nplan sha256 %s\n%d legs", reg.Name, reg.StudyID, reg.PlanSHA256, reg.Legs)}, err
		}, v.onDone)
}

// registered is what a Register call says, for the dialog that follows it.
type registered struct {
	id       int64
	existing bool
	text     string
}

// freeze is the Register… button of both wizards. It prepares the plan off the UI goroutine
// (hashing its files, with a dialog that can cancel it), then shows exactly what will be
// frozen, the plan's JSON and its SHA-256, and registers that plan only when confirmed. The
// button stays disabled from the click until the registration ends or is called off.
func freeze(win fyne.Window, btn *widget.Button, preparing, msg string,
	prepare func(ctx context.Context) (plan any, sum string, err error),
	register func(ctx context.Context, plan any, sum string) (registered, error), onDone func(int64)) {
	btn.Disable()
	ctx, cancel := context.WithCancel(context.Background())
	wait := dialog.NewCustom("Preparing the plan", "Cancel", widget.NewLabel(preparing), win)
	var finished atomic.Bool // the dialog is closed by the end of the preparation, not by Cancel
	wait.SetOnClosed(func() {
		if !finished.Load() {
			cancel()
		}
	})
	wait.Show()
	go func() {
		plan, sum, err := prepare(ctx)
		var preview []byte
		if err == nil {
			preview, err = json.MarshalIndent(plan, "", "  ")
		}
		onUI(func() {
			called := ctx.Err() != nil
			finished.Store(true)
			wait.Hide()
			cancel()
			if called {
				btn.Enable()
				return
			}
			if err != nil {
				btn.Enable()
				dialog.ShowError(err, win)
				return
			}
			confirmFreeze(win, btn, preview, sum, msg, func(done func(registered, error)) {
				go func() {
					reg, err := register(context.Background(), plan, sum)
					onUI(func() { done(reg, err) })
				}()
			}, onDone)
		})
	}()
}

// confirmFreeze shows the prepared plan and its SHA-256 and registers it when confirmed.
func confirmFreeze(win fyne.Window, btn *widget.Button, preview []byte, sum, msg string, register func(done func(registered, error)), onDone func(int64)) {
	label := widget.NewLabel(msg)
	label.Wrapping = fyne.TextWrapWord
	shaLabel := widget.NewLabel("plan sha256 " + sum)
	shaLabel.TextStyle = fyne.TextStyle{Monospace: true}
	text := widget.NewMultiLineEntry()
	text.SetText(string(preview))
	text.Disable()
	content := container.NewBorder(container.NewVBox(label, shaLabel), nil, nil, nil, container.NewGridWrap(fyne.NewSize(640, 320), text))
	dialog.ShowCustomConfirm("Register this study?", "Register", "Cancel", content, func(ok bool) {
		if !ok {
			btn.Enable()
			return
		}
		register(func(reg registered, err error) {
			btn.Enable()
			if err != nil {
				dialog.ShowError(err, win)
				return
			}
			how := "registered"
			if reg.existing {
				how = "was already registered (same plan SHA-256)"
			}
			dialog.ShowInformation("Study "+how, reg.text, win)
			if onDone != nil {
				onDone(reg.id)
			}
		})
	}, win)
}
