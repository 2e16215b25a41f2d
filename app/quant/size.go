package quant

import "strings"

// typeBits are the bits per weight of llama-quantize's types: a block type's bytes × 8 over
// its weights (Q4_0: 18 bytes per 32 weights = 4.5); a mix (the K-quants' _S, _M, _L and the
// IQ mixes) counts as its largest part, so that an estimate made from it is an upper bound.
var typeBits = map[string]float64{
	"F32": 32, "F16": 16, "BF16": 16,
	"Q8_0": 8.5, "Q6_K": 6.5625, "Q5_0": 5.5, "Q5_1": 6, "Q4_0": 4.5, "Q4_1": 5,
	"Q5_K_S": 5.5, "Q5_K_M": 6.5625, "Q4_K_S": 5.5, "Q4_K_M": 6.5625,
	"Q3_K_S": 3.4375, "Q3_K_M": 4.5, "Q3_K_L": 5.5, "Q2_K": 3.4375, "Q2_K_S": 3.4375,
	"IQ4_NL": 4.5, "IQ4_XS": 4.25, "IQ3_XXS": 3.0625, "IQ3_XS": 3.4375, "IQ3_S": 3.4375, "IQ3_M": 4.5,
	"IQ2_XXS": 2.0625, "IQ2_XS": 2.3125, "IQ2_S": 2.5, "IQ2_M": 2.5, "IQ1_S": 1.5625, "IQ1_M": 1.75,
	"TQ1_0": 1.6875, "TQ2_0": 2.0625, "MXFP4_MOE": 4.25,
}

// referenceBits are the bits per weight of an unquantized reference file type.
var referenceBits = map[string]float64{"ALL_F32": 32, "MOSTLY_F16": 16, "MOSTLY_BF16": 16}

// EstimateBytes is an upper estimate of the file llama-quantize writes of type from a
// reference of refBytes bytes and file type refType: its size scaled by the bits per weight,
// plus 10% for the tensors kept at higher precision and the header. ok is false for a type or
// reference type it does not know.
func EstimateBytes(refBytes int64, refType, quantType string) (n int64, ok bool) {
	qb, okq := typeBits[strings.ToUpper(quantType)]
	rb, okr := referenceBits[refType]
	if !okq || !okr {
		return 0, false
	}
	return int64(float64(refBytes) * qb / rb * 1.1), true
}
