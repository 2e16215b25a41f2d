package gguf

import (
	"fmt"
	"math/bits"
	"sort"
)

// alignment returns general.alignment, which llama.cpp requires to be a
// UINT32 power of two.
func alignment(r *reader, kvs []KV) (uint64, error) {
	for _, kv := range kvs {
		if kv.Key != "general.alignment" {
			continue
		}
		v, ok := kv.Value.(uint32)
		if !ok {
			return 0, r.fail(ErrInvalid, -1, fixRedownload,
				"key 'general.alignment' must be of type UINT32 but is %s", typeName(kv))
		}
		if v == 0 || v&(v-1) != 0 {
			return 0, r.fail(ErrInvalid, -1, fixRedownload,
				"general.alignment is %d, which is not a power of 2", v)
		}
		return uint64(v), nil
	}
	return DefaultAlignment, nil
}

func typeName(kv KV) string {
	if kv.Type == TypeArray {
		return "ARRAY/" + kv.ArrayType.String()
	}
	return kv.Type.String()
}

func (r *reader) tensors(n int64) ([]Tensor, error) {
	if err := r.charge(n * 96); err != nil {
		return nil, err
	}
	ts := make([]Tensor, 0, min(n, 4096))
	seen := make(map[string]int64, min(n, 4096))
	dims := make([]uint64, 0, min(n, 4096)*2) // shared backing array for the shapes
	for i := range n {
		r.set("the name of tensor", "", i, n)
		at := r.pos
		name, err := r.str(MaxTensorName)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[name]; dup {
			return nil, r.fail(ErrDuplicate, at, fixRedownload,
				"duplicate tensor name '%s' (tensors %d and %d)", name, j+1, i+1)
		}
		seen[name] = i
		t := Tensor{Name: name}

		r.set("the dimension count of tensor", name, 0, 0)
		at = r.pos
		nd, err := r.u32()
		if err != nil {
			return nil, err
		}
		if nd > MaxDims {
			return nil, r.fail(ErrLimit, at, fixRedownload,
				"tensor '%s' has %d dimensions; GGUF allows at most %d", name, nd, MaxDims)
		}
		r.set("the shape of tensor", name, 0, 0)
		start := len(dims)
		for range nd {
			d, err := r.u64()
			if err != nil {
				return nil, err
			}
			dims = append(dims, d)
		}
		t.Shape = dims[start:len(dims):len(dims)]
		at = r.pos
		elems := uint64(1)
		overflow := false
		for _, d := range t.Shape {
			hi, lo := bits.Mul64(elems, d)
			if d >= 1<<63 || hi != 0 || lo >= 1<<63 {
				overflow = true
				break
			}
			elems = lo
		}
		if overflow {
			return nil, r.fail(ErrLimit, at, fixRedownload,
				"tensor '%s' has shape %v, whose element count does not fit in 63 bits", name, t.Shape)
		}

		r.set("the type of tensor", name, 0, 0)
		at = r.pos
		tt, err := r.u32()
		if err != nil {
			return nil, err
		}
		t.Type = GGMLType(tt)
		if !t.Type.Known() {
			if rm, ok := removedTypes[t.Type]; ok {
				return nil, r.fail(ErrRemovedType, at, rm.fix,
					"tensor '%s' has type %d (%s), which ggml no longer supports", name, tt, rm.name)
			}
			return nil, r.fail(ErrUnknownType, at,
				"the file may need a newer llama.cpp and sparkbench",
				"tensor '%s' has unknown ggml type %d (known: 0 to %d)", name, tt, ggmlTypeCount-1)
		}
		blck, tsize := t.Type.BlockSize(), t.Type.TypeSize()
		ne0 := uint64(1)
		if len(t.Shape) > 0 {
			ne0 = t.Shape[0]
		}
		if ne0%blck != 0 {
			return nil, r.fail(ErrInvalid, at, fixRedownload,
				"tensor '%s' of type %s has %d elements per row, not a multiple of the block size %d",
				name, t.Type, ne0, blck)
		}
		// size = ne0/blck * type_size * ne1 * ne2 * ne3 = elems/blck * type_size.
		hi, size := bits.Mul64(elems/blck, tsize)
		if hi != 0 || size >= 1<<63 {
			return nil, r.fail(ErrLimit, at, fixRedownload,
				"tensor '%s' of type %s with shape %v has a size in bytes that does not fit in 63 bits", name, t.Type, t.Shape)
		}
		t.Size = size

		r.set("the data offset of tensor", name, 0, 0)
		if t.Offset, err = r.u64(); err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// pad rounds x up to a multiple of align (a power of two).
func pad(x, align uint64) uint64 { return (x + align - 1) &^ (align - 1) }

// checkPlacement checks each tensor's data lies within the file, is
// aligned and overlaps no other tensor.
func checkPlacement(r *reader, f *File) error {
	base := uint64(f.DataOffset)
	for _, t := range f.Tensors {
		if t.Offset%f.Alignment != 0 {
			return r.fail(ErrMisaligned, -1, fixRedownload,
				"tensor '%s' has data offset %d, not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		start, c1 := bits.Add64(base, t.Offset, 0)
		end, c2 := bits.Add64(start, t.Size, 0)
		if c1 != 0 || c2 != 0 || end > uint64(f.Size) {
			endText := fmt.Sprint(end)
			if c1 != 0 || c2 != 0 {
				endText = "beyond 2^64"
			}
			return r.fail(ErrOutOfBounds, -1, fixRedownload,
				"tensor '%s' data is not within the file bounds: it ends at byte %s but the file has %d bytes",
				t.Name, endText, f.Size)
		}
	}
	order := make([]int, 0, len(f.Tensors))
	for i, t := range f.Tensors {
		if t.Size > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset
	})
	for k := 1; k < len(order); k++ {
		prev, cur := f.Tensors[order[k-1]], f.Tensors[order[k]]
		if cur.Offset < prev.Offset+prev.Size {
			return r.fail(ErrOverlap, -1, fixRedownload,
				"tensor '%s' (data bytes %d to %d) overlaps tensor '%s' (data bytes %d to %d)",
				cur.Name, cur.Offset, cur.Offset+cur.Size, prev.Name, prev.Offset, prev.Offset+prev.Size)
		}
	}
	return nil
}
