package quantrun

import (
	"fmt"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/runner/hashing"
)

// fileID is a candidate's file as the run hashed it: its identity (path, size, mtime, device,
// inode, ctime) and the tensor bytes its GGUF header holds (llama-bench's model_size).
type fileID struct {
	key         hashing.Key
	tensorBytes int64
}

// noteFile keeps path's identity right after the run hashed it (derive).
func (e *engine) noteFile(path string) {
	k, err := hashing.KeyOf(path)
	if err != nil {
		return // the bench leg's own start says what is wrong with the file
	}
	id := fileID{key: k}
	if h, err := gguf.ReadFile(path); err == nil {
		id.tensorBytes = int64(h.TensorBytes())
	}
	if e.files == nil {
		e.files = map[string]fileID{}
	}
	e.files[path] = id
}

// fileChanged says how path is no longer the file the run hashed ("" when it is): a stat, and
// the model_size of each llama-bench row given against the header's tensor bytes.
func (e *engine) fileChanged(path string, rows []benchfmt.Result) string {
	id, ok := e.files[path]
	if !ok {
		return ""
	}
	d, err := hashing.Moved(id.key)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	if d != "" {
		return fmt.Sprintf("%s changed since this run hashed it (%s)", path, d)
	}
	for _, r := range rows {
		if id.tensorBytes > 0 && r.ModelSize > 0 && r.ModelSize != id.tensorBytes {
			return fmt.Sprintf("llama-bench loaded %d bytes of tensors (model_type %q) from %s, the file this run hashed holds %d", r.ModelSize, r.ModelType, path, id.tensorBytes)
		}
	}
	return ""
}

// codeModelChanged: a bench leg on another file than the candidate's (the same code as a
// throughput leg's and a capacity lifetime's).
const codeModelChanged = study.CodeModelChanged
