package main

import (
	"context"
	"strings"

	"sparkbench/app"
	"sparkbench/app/workbench"
	"sparkbench/runner/gguf"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// notebookLibrary is app.ModelLibrary over the notebook's artefacts table.
type notebookLibrary struct{ nb *store.Notebook }

var _ app.ModelLibrary = notebookLibrary{}

func statusOf(path string, a store.Artefact, fromCache bool) app.ModelStatus {
	return app.ModelStatus{Path: path, SHA256: a.SHA256, Expected: a.ExpectedSHA256,
		Status: hashing.Compare(a.SHA256, a.ExpectedSHA256), FromCache: fromCache, Source: a.Source, Revision: a.Revision}
}

// record upserts the file's artefact row under its current key, with its GGUF header fields.
func (l notebookLibrary) record(ctx context.Context, path, sum, expected string) (store.Artefact, error) {
	return l.recordAll(ctx, store.Artefact{SHA256: sum, ExpectedSHA256: strings.ToLower(expected)}, path)
}

// recordAll upserts the file's row under its current key with a's hashes and provenance.
func (l notebookLibrary) recordAll(ctx context.Context, a store.Artefact, path string) (store.Artefact, error) {
	k, err := hashing.KeyOf(path)
	if err != nil {
		return store.Artefact{}, err
	}
	a.Path, a.Size, a.MTime, a.Dev, a.Inode, a.CTime = path, k.Size, k.MTime, k.Dev, k.Inode, k.CTime
	if h, err := gguf.ReadFile(path); err == nil {
		a.Name, a.Architecture, a.Quant, a.NParams = h.Name, h.Architecture, h.FileTypeName, int64(h.ParamCount)
	}
	return l.nb.UpsertArtefact(ctx, a)
}

func (l notebookLibrary) Status(ctx context.Context, path string) (app.ModelStatus, error) {
	k, err := hashing.KeyOf(path)
	if err != nil {
		return app.ModelStatus{}, err
	}
	a, ok, err := l.nb.CachedArtefactFile(ctx, k.Path, k.Size, k.MTime, k.CTime, k.Dev, k.Inode)
	if err != nil || !ok {
		return app.ModelStatus{Path: path, Status: hashing.Pending}, err
	}
	return statusOf(path, a, true), nil
}

func (l notebookLibrary) Hash(ctx context.Context, path string, progress func(hashing.Progress)) (app.ModelStatus, error) {
	sum, cached, err := hashing.Cached(ctx, workbench.HashCache{NB: l.nb}, path, progress)
	if err != nil {
		return app.ModelStatus{}, err
	}
	a, err := l.record(ctx, path, sum, "")
	if err != nil {
		return app.ModelStatus{}, err
	}
	return statusOf(path, a, cached), nil
}

// Rehash reads the whole file whatever the cache holds and records its hash under its
// current key.
func (l notebookLibrary) Rehash(ctx context.Context, path string, progress func(hashing.Progress)) (app.ModelStatus, error) {
	sum, _, err := hashing.Cached(ctx, nil, path, progress)
	if err != nil {
		return app.ModelStatus{}, err
	}
	a, err := l.record(ctx, path, sum, "")
	if err != nil {
		return app.ModelStatus{}, err
	}
	return statusOf(path, a, false), nil
}

func (l notebookLibrary) SetExpected(ctx context.Context, path, sha256 string) (app.ModelStatus, error) {
	a, err := l.record(ctx, path, "", sha256)
	if err != nil {
		return app.ModelStatus{}, err
	}
	return statusOf(path, a, false), nil
}

func (l notebookLibrary) SetSource(ctx context.Context, path, source, revision string) (app.ModelStatus, error) {
	a, err := l.recordAll(ctx, store.Artefact{Source: strings.TrimSpace(source), Revision: strings.TrimSpace(revision)}, path)
	if err != nil {
		return app.ModelStatus{}, err
	}
	return statusOf(path, a, false), nil
}
