package canon

import (
	"reflect"

	"sparkbench/runner/jsonlex"
)

// UnknownKeyOffset finds where the key that strict decoding of data into a value of type t
// refused begins (jsonlex.UnknownKeyOffset: the one key walk, which jsonlex.DecodeStrict now
// uses itself to place an unknown field).
func UnknownKeyOffset(data []byte, t reflect.Type) (off int64, key string, ok bool) {
	return jsonlex.UnknownKeyOffset(data, t)
}

// JSONFields maps a struct's JSON names (as encoding/json reads them) to their types.
func JSONFields(t reflect.Type) map[string]reflect.Type { return jsonlex.JSONFields(t) }
