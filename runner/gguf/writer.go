package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"sparkbench/runner/atomicfile"
)

// TensorData is a tensor to write: its table entry and its bytes.
type TensorData struct {
	Name  string
	Type  GGMLType
	Shape []uint64 // ne0 first
	Data  []byte   // exactly the tensor's size in bytes
}

// NewKV builds a metadata entry, taking the GGUF type from the Go type of
// value: uint8 ... float64, bool, string, a slice of one of those, or
// []Array. Write rejects any other type.
func NewKV(key string, value any) KV {
	t, at := typeOfValue(value)
	return KV{Key: key, Type: t, ArrayType: at, Value: value}
}

const invalidType ValueType = 255

func typeOfValue(v any) (ValueType, ValueType) {
	switch v.(type) {
	case uint8:
		return TypeUint8, 0
	case int8:
		return TypeInt8, 0
	case uint16:
		return TypeUint16, 0
	case int16:
		return TypeInt16, 0
	case uint32:
		return TypeUint32, 0
	case int32:
		return TypeInt32, 0
	case float32:
		return TypeFloat32, 0
	case bool:
		return TypeBool, 0
	case string:
		return TypeString, 0
	case uint64:
		return TypeUint64, 0
	case int64:
		return TypeInt64, 0
	case float64:
		return TypeFloat64, 0
	case []uint8:
		return TypeArray, TypeUint8
	case []int8:
		return TypeArray, TypeInt8
	case []uint16:
		return TypeArray, TypeUint16
	case []int16:
		return TypeArray, TypeInt16
	case []uint32:
		return TypeArray, TypeUint32
	case []int32:
		return TypeArray, TypeInt32
	case []float32:
		return TypeArray, TypeFloat32
	case []bool:
		return TypeArray, TypeBool
	case []string:
		return TypeArray, TypeString
	case []uint64:
		return TypeArray, TypeUint64
	case []int64:
		return TypeArray, TypeInt64
	case []float64:
		return TypeArray, TypeFloat64
	case []Array:
		return TypeArray, TypeArray
	}
	return invalidType, 0
}

// Write encodes a GGUF version 3 little-endian file: header, kvs in the
// given order, the tensor table, then each tensor's data padded with zero
// bytes to the alignment (general.alignment if present, else 32). The
// output depends only on the arguments. It returns the bytes written.
func Write(w io.Writer, kvs []KV, tensors []TensorData) (int64, error) {
	align := uint64(DefaultAlignment)
	keys := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		if kv.Key == "" || len(kv.Key) > MaxKeyLen {
			return 0, fmt.Errorf("gguf write: key %q: empty or longer than %d bytes", kv.Key, MaxKeyLen)
		}
		if !kv.Type.Valid() {
			return 0, fmt.Errorf("gguf write: key %q: unsupported value type %T", kv.Key, kv.Value)
		}
		if keys[kv.Key] {
			return 0, fmt.Errorf("gguf write: duplicate key %q", kv.Key)
		}
		keys[kv.Key] = true
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || kv.Type != TypeUint32 || a == 0 || a&(a-1) != 0 {
				return 0, fmt.Errorf("gguf write: general.alignment must be a UINT32 power of 2, got %s %v", kv.Type, kv.Value)
			}
			align = uint64(a)
		}
	}
	names := make(map[string]bool, len(tensors))
	offsets := make([]uint64, len(tensors))
	var off uint64
	for i, t := range tensors {
		if len(t.Name) > MaxTensorName {
			return 0, fmt.Errorf("gguf write: tensor name %q is longer than %d bytes", t.Name, MaxTensorName)
		}
		if names[t.Name] {
			return 0, fmt.Errorf("gguf write: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		size, err := tensorSize(t.Type, t.Shape)
		if err != nil {
			return 0, fmt.Errorf("gguf write: tensor %q: %w", t.Name, err)
		}
		if uint64(len(t.Data)) != size {
			return 0, fmt.Errorf("gguf write: tensor %q: %d bytes of data, want %d for %s %v", t.Name, len(t.Data), size, t.Type, t.Shape)
		}
		offsets[i] = off
		off += pad(size, align)
	}

	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<16)}
	e := encoder{w: cw}
	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Type))
		if err := e.value(kv.Type, kv.ArrayType, kv.Value); err != nil {
			return cw.n, fmt.Errorf("gguf write: key %q: %w", kv.Key, err)
		}
	}
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offsets[i])
	}
	if len(tensors) > 0 {
		e.zeros(pad(uint64(cw.n), align) - uint64(cw.n))
	}
	for _, t := range tensors {
		e.bytes(t.Data)
		e.zeros(pad(uint64(len(t.Data)), align) - uint64(len(t.Data)))
	}
	if e.err != nil {
		return cw.n, e.err
	}
	return cw.n, cw.w.(*bufio.Writer).Flush()
}

// WriteFile writes the file atomically (mode 0644): to a temporary file in the same
// directory, then renamed over path.
func WriteFile(path string, kvs []KV, tensors []TensorData) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	if _, err := Write(f, kvs, tensors); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// tensorSize returns ne0/blck * type_size * ne1 * ne2 * ne3.
func tensorSize(t GGMLType, shape []uint64) (uint64, error) {
	if !t.Known() {
		return 0, fmt.Errorf("unknown tensor type %s", t)
	}
	if len(shape) > MaxDims {
		return 0, fmt.Errorf("%d dimensions, at most %d", len(shape), MaxDims)
	}
	n := uint64(1)
	for _, d := range shape {
		if d != 0 && n > math.MaxInt64/d {
			return 0, errors.New("too many elements")
		}
		n *= d
	}
	ne0 := uint64(1)
	if len(shape) > 0 {
		ne0 = shape[0]
	}
	if ne0%t.BlockSize() != 0 {
		return 0, fmt.Errorf("ne0 %d is not a multiple of the %s block size %d", ne0, t, t.BlockSize())
	}
	return n / t.BlockSize() * t.TypeSize(), nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes little-endian values and keeps the first error.
type encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *encoder) bytes(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) zeros(n uint64) {
	var z [64]byte
	for n > 0 {
		k := min(n, uint64(len(z)))
		e.bytes(z[:k])
		n -= k
	}
}

func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.bytes(e.buf[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.bytes(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.bytes(e.buf[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.bytes([]byte(s)) }

func (e *encoder) value(t, at ValueType, v any) error {
	if t == TypeArray {
		e.u32(uint32(at))
		e.u64(uint64(arrayLen(v)))
		return e.array(at, v)
	}
	return e.scalar(t, v)
}

func (e *encoder) scalar(t ValueType, v any) error {
	if got, _ := typeOfValue(v); got != t {
		return fmt.Errorf("value %T does not match type %s", v, t)
	}
	switch x := v.(type) {
	case uint8:
		e.bytes([]byte{x})
	case int8:
		e.bytes([]byte{byte(x)})
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.bytes([]byte{b})
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	}
	return nil
}

func (e *encoder) array(at ValueType, v any) error {
	if got, gotElem := typeOfValue(v); got != TypeArray || gotElem != at {
		return fmt.Errorf("value %T does not match ARRAY/%s", v, at)
	}
	switch a := v.(type) {
	case []Array:
		for i, item := range a {
			if err := e.value(TypeArray, item.Type, item.Value); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	case []string:
		for _, s := range a {
			e.str(s)
		}
		return nil
	case []uint8:
		e.bytes(a)
		return nil
	}
	var err error
	forEachValue(v, func(x any) {
		if err == nil {
			err = e.scalar(at, x)
		}
	})
	return err
}

// forEachValue calls fn with every item of a numeric or bool slice.
func forEachValue(v any, fn func(any)) {
	switch a := v.(type) {
	case []float32:
		for _, x := range a {
			fn(x)
		}
	case []float64:
		for _, x := range a {
			fn(x)
		}
	case []bool:
		for _, x := range a {
			fn(x)
		}
	default:
		forEachItem(v, fn)
	}
}

// F16 converts f to IEEE 754 half precision, rounding to nearest even
// (as numpy and ggml's ggml_fp32_to_fp16 do). Integer arithmetic only, so
// the result is the same on every platform.
func F16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp > 127+15: // overflow
		return sign | 0x7c00
	case exp >= 127-14: // normal half
		h := uint32(exp-127+15)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, up to Inf: correct
		}
		return sign | uint16(h)
	case exp >= 127-25: // subnormal half
		m := mant | 0x800000
		shift := uint32(126 - exp) // value = M * 2^(exp-150) = h * 2^-24: drop 14..24 bits
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign // underflow to zero
}

// F16ToFloat32 converts IEEE half precision to float32 (exact).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// subnormal: mant * 2^-24
	f := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}
