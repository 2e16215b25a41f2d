package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

func (r *reader) kvs(n int64) ([]KV, error) {
	if err := r.charge(n * 64); err != nil {
		return nil, err
	}
	// Grow with what is actually read: a sparse file can declare many
	// entries that are only zeros.
	kvs := make([]KV, 0, min(n, 1024))
	seen := make(map[string]int64, min(n, 1024))
	for i := range n {
		r.set("the key of metadata entry", "", i, n)
		at := r.pos
		key, err := r.str(MaxKeyLen)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, r.fail(ErrInvalid, at, fixRedownload, "metadata entry %d of %d has an empty key", i+1, n)
		}
		if j, dup := seen[key]; dup {
			return nil, r.fail(ErrDuplicate, at, fixRedownload,
				"duplicate key '%s' (metadata entries %d and %d)", key, j+1, i+1)
		}
		seen[key] = i
		r.set("the type of key", key, 0, 0)
		at = r.pos
		t, err := r.u32()
		if err != nil {
			return nil, err
		}
		vt := ValueType(t)
		if !vt.Valid() {
			return nil, r.fail(ErrInvalid, at, fixRedownload,
				"key '%s' has invalid value type %d (valid: 0 to 12)", key, t)
		}
		kv := KV{Key: key, Type: vt}
		r.set("the value of key", key, 0, 0)
		if vt == TypeArray {
			kv.ArrayType, kv.Value, err = r.array(1)
		} else {
			kv.Value, err = r.scalar(vt)
		}
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, kv)
	}
	return kvs, nil
}

func (r *reader) scalar(t ValueType) (any, error) {
	if t == TypeString {
		return r.str(MaxStringLen)
	}
	n := t.fixedSize()
	if err := r.read(r.buf[:n]); err != nil {
		return nil, err
	}
	return decodeScalar(t, r.buf[:n]), nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeBool:
		return b[0] != 0
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	return nil
}

// array reads an array's element type, count and items.
func (r *reader) array(depth int) (ValueType, any, error) {
	savedItem, savedItems := r.item, r.items
	at := r.pos
	t, err := r.u32()
	if err != nil {
		return 0, nil, err
	}
	et := ValueType(t)
	if !et.Valid() {
		return 0, nil, r.fail(ErrInvalid, at, fixRedownload,
			"%s has invalid array element type %d (valid: 0 to 12)", r.where(), t)
	}
	if et == TypeArray && depth >= MaxArrayDepth {
		return 0, nil, r.fail(ErrLimit, at, fixRedownload,
			"%s nests arrays more than %d deep", r.where(), MaxArrayDepth)
	}
	at = r.pos
	count, err := r.u64()
	if err != nil {
		return 0, nil, err
	}
	if count > MaxArrayLen {
		return 0, nil, r.fail(ErrLimit, at, fixRedownload,
			"%s has %d items, more than the limit of %d", r.where(), count, MaxArrayLen)
	}
	if need := count * uint64(et.minSize()); need > uint64(r.remaining()) {
		return 0, nil, r.fail(ErrTruncated, at, fixRedownload,
			"file ends at byte %d while reading %s: an array of %d %s items needs at least %d bytes, %d remain",
			r.size, r.where(), count, et, need, r.remaining())
	}
	n := int(count)
	memSize := int64(et.fixedSize())
	switch et {
	case TypeString:
		memSize = 16
	case TypeArray:
		memSize = 24
	}
	if err := r.charge(int64(n) * memSize); err != nil {
		return 0, nil, err
	}
	r.items = int64(n)
	var v any
	switch et {
	case TypeString:
		a := make([]string, n)
		for i := range a {
			r.item = int64(i)
			if a[i], err = r.str(MaxStringLen); err != nil {
				return 0, nil, err
			}
		}
		v = a
	case TypeArray:
		a := make([]Array, n)
		for i := range a {
			r.item = int64(i)
			if a[i].Type, a[i].Value, err = r.array(depth + 1); err != nil {
				return 0, nil, err
			}
		}
		v = a
	default:
		if v, err = r.numbers(et, n); err != nil {
			return 0, nil, err
		}
	}
	r.item, r.items = savedItem, savedItems
	return et, v, nil
}

// numbers reads n fixed-size items in bulk.
func (r *reader) numbers(t ValueType, n int) (any, error) {
	size := t.fixedSize()
	raw := make([]byte, n*size)
	if err := r.read(raw); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return raw, nil
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(raw[i])
		}
		return a, nil
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			a[i] = raw[i] != 0
		}
		return a, nil
	case TypeUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = le.Uint16(raw[2*i:])
		}
		return a, nil
	case TypeInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = int16(le.Uint16(raw[2*i:]))
		}
		return a, nil
	case TypeUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = le.Uint32(raw[4*i:])
		}
		return a, nil
	case TypeInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = le.Uint64(raw[8*i:])
		}
		return a, nil
	case TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(le.Uint64(raw[8*i:]))
		}
		return a, nil
	case TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return a, nil
	}
	return nil, fmt.Errorf("gguf: internal error: numbers(%v)", t)
}
