package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"sparkbench/app"
)

// SetDerived makes the derived-model cache (the quantization ladders' derived models, listed
// by src) part of the Models list, and lists it now.
func (v *ModelsView) SetDerived(src func(ctx context.Context) ([]DerivedModel, error)) {
	v.derivedSrc = src
	v.LoadDerived()
}

// LoadDerived lists the derived-model cache again in the background (each file's header read
// like the other rows'); a listing that fails is said in the progress line.
func (v *ModelsView) LoadDerived() {
	src := v.derivedSrc
	if src == nil {
		return
	}
	go func() {
		list, err := src(context.Background())
		entries := make([]app.ModelEntry, 0, len(list))
		for _, d := range list {
			entries = append(entries, app.InspectModel(d.Path))
		}
		onUI(func() {
			if err != nil {
				v.ProgressMsg.SetText("the derived models could not be listed: " + err.Error())
				v.signal()
				return
			}
			v.derived = map[string]DerivedModel{}
			for _, d := range list {
				v.derived[d.Path] = d
			}
			v.derivedRows = entries
			v.refreshRows()
			v.loadStatuses()
			v.showProvenance()
			v.signal()
		})
	}()
}

// Derived is the provenance of a row of the derived-model cache (ok false for other files).
func (v *ModelsView) Derived(path string) (DerivedModel, bool) {
	d, ok := v.derived[path]
	return d, ok
}

// derivedText is the Derived from column: TYPE of the parent (its file when the Models list
// has a file of that SHA-256, else the SHA-256's first digits); "—" for other files.
func (v *ModelsView) derivedText(path string) string {
	d, ok := v.derived[path]
	if !ok {
		return "—"
	}
	return fmt.Sprintf("derived: %s of %s", d.Type, v.parentName(d.Parent))
}

// fileText is the File column: the file's name, or for a derived model (named by its cache
// key) its type and parent.
func (v *ModelsView) fileText(path string) string {
	d, ok := v.derived[path]
	if !ok {
		return filepath.Base(path)
	}
	return fmt.Sprintf("%s of %s (derived)", d.Type, v.parentName(d.Parent))
}

// parentName is the file of the Models list whose SHA-256 is sha, else "parent " and the
// SHA-256's first digits.
func (v *ModelsView) parentName(sha string) string {
	for _, m := range v.rows {
		if st, ok := v.status[m.Path]; ok && st.SHA256 == sha && sha != "" {
			return filepath.Base(m.Path)
		}
	}
	return "parent " + short(sha)
}

// showProvenance shows the selected row's provenance when it is a derived model.
func (v *ModelsView) showProvenance() {
	path := ""
	if v.selected >= 0 && v.selected < len(v.rows) {
		path = v.rows[v.selected].Path
	}
	d, ok := v.derived[path]
	if !ok {
		v.Provenance.Hide()
		return
	}
	imatrix := "none"
	if d.Imatrix != "" {
		imatrix = d.Imatrix
	}
	v.Provenance.SetText(fmt.Sprintf("%s is derived: %s of %s (parent sha256 %s), importance matrix %s, quantized by %s on %s; sha256 when made %s (%s); argv: %s",
		filepath.Base(d.Path), d.Type, v.parentName(d.Parent), d.Parent, imatrix, d.Build, d.CreatedAt, d.SHA256, app.HumanBytes(d.Bytes), strings.Join(d.Argv, " ")))
	v.Provenance.Show()
}
