package study

import "fmt"

// CheckKVTypes checks a list of KV cache type pairs (-ctk/-ctv) at JSON path at: known type
// names, no pair twice. The throughput axes and the quantization ladder share it.
func CheckKVTypes(at string, kvs []KVType) []Problem {
	var out []Problem
	errf := func(path, format string, a ...any) {
		out = append(out, Problem{Path: path, Severity: SevError, Msg: fmt.Sprintf(format, a...)})
	}
	seen := map[KVType]bool{}
	for i, kv := range kvs {
		path := fmt.Sprintf("%s[%d]", at, i)
		for _, t := range []string{kv.K, kv.V} {
			if !kvTypeNames[t] {
				errf(path, "%q is not a KV cache type; want one of %s", t, sortedKeys(kvTypeNames))
			}
		}
		if seen[kv] {
			errf(path, "%s/%s is listed twice: duplicate legs", kv.K, kv.V)
		}
		seen[kv] = true
	}
	return out
}

// KVTypeNames are the KV cache types -ctk/-ctv take (llama-bench's and llama-server's
// "allowed values"), f32 and f16 first, then the quantized ones as llama.cpp lists them.
func KVTypeNames() []string {
	return []string{"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}
}
