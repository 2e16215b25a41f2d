package benchfmt

import ()

// Value returns a known field's value as a Go value (string, int64, bool, float64, []int64,
// []float64) and whether the source carried it.
func (r *Result) Value(f Field) (any, bool) {
	known := r.Known.Has(f)
	switch f {
	case FBuildCommit:
		return r.BuildCommit, known
	case FBuildNumber:
		return r.BuildNumber, known
	case FCPUInfo:
		return r.CPUInfo, known
	case FGPUInfo:
		return r.GPUInfo, known
	case FBackends:
		return r.Backends, known
	case FModelFilename:
		return r.ModelFilename, known
	case FModelType:
		return r.ModelType, known
	case FModelSize:
		return r.ModelSize, known
	case FModelNParams:
		return r.ModelNParams, known
	case FNBatch:
		return r.NBatch, known
	case FNUbatch:
		return r.NUbatch, known
	case FNThreads:
		return r.NThreads, known
	case FCPUMask:
		return r.CPUMask, known
	case FCPUStrict:
		return r.CPUStrict, known
	case FPoll:
		return r.Poll, known
	case FTypeK:
		return r.TypeK, known
	case FTypeV:
		return r.TypeV, known
	case FNGPULayers:
		return r.NGPULayers, known
	case FNCPUMoE:
		return r.NCPUMoE, known
	case FSplitMode:
		return r.SplitMode, known
	case FMainGPU:
		return r.MainGPU, known
	case FNoKVOffload:
		return r.NoKVOffload, known
	case FFlashAttn:
		return r.FlashAttn, known
	case FDevices:
		return r.Devices, known
	case FTensorSplit:
		return r.TensorSplit, known
	case FTensorBuftOverrides:
		return r.TensorBuftOverrides, known
	case FLoadMode:
		return r.LoadMode, known
	case FLazyMode:
		return r.LazyMode, known
	case FEmbeddings:
		return r.Embeddings, known
	case FNoOpOffload:
		return r.NoOpOffload, known
	case FNoHost:
		return r.NoHost, known
	case FRepack:
		return r.Repack, known
	case FFitTarget:
		return r.FitTarget, known
	case FFitMinCtx:
		return r.FitMinCtx, known
	case FNPrompt:
		return r.NPrompt, known
	case FNGen:
		return r.NGen, known
	case FNDepth:
		return r.NDepth, known
	case FTestTime:
		return r.TestTime, known
	case FAvgNs:
		return r.AvgNs, known
	case FStddevNs:
		return r.StddevNs, known
	case FAvgTs:
		return r.AvgTs, known
	case FStddevTs:
		return r.StddevTs, known
	case FSamplesNs:
		return r.SamplesNs, known
	case FSamplesTs:
		return r.SamplesTs, known
	}
	return nil, false
}

func (r *Result) setString(f Field, v string) {
	switch f {
	case FBuildCommit:
		r.BuildCommit = v
	case FCPUInfo:
		r.CPUInfo = v
	case FGPUInfo:
		r.GPUInfo = v
	case FBackends:
		r.Backends = v
	case FModelFilename:
		r.ModelFilename = v
	case FModelType:
		r.ModelType = v
	case FCPUMask:
		r.CPUMask = v
	case FTypeK:
		r.TypeK = v
	case FTypeV:
		r.TypeV = v
	case FSplitMode:
		r.SplitMode = v
	case FDevices:
		r.Devices = v
	case FTensorSplit:
		r.TensorSplit = v
	case FTensorBuftOverrides:
		r.TensorBuftOverrides = v
	case FLoadMode:
		r.LoadMode = v
	case FLazyMode:
		r.LazyMode = v
	case FTestTime:
		r.TestTime = v
	default:
		panic("benchfmt: setString on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

func (r *Result) setInt(f Field, v int64) {
	switch f {
	case FBuildNumber:
		r.BuildNumber = v
	case FModelSize:
		r.ModelSize = v
	case FModelNParams:
		r.ModelNParams = v
	case FNBatch:
		r.NBatch = v
	case FNUbatch:
		r.NUbatch = v
	case FNThreads:
		r.NThreads = v
	case FPoll:
		r.Poll = v
	case FNGPULayers:
		r.NGPULayers = v
	case FNCPUMoE:
		r.NCPUMoE = v
	case FMainGPU:
		r.MainGPU = v
	case FFlashAttn:
		r.FlashAttn = v
	case FNoOpOffload:
		r.NoOpOffload = v
	case FFitTarget:
		r.FitTarget = v
	case FFitMinCtx:
		r.FitMinCtx = v
	case FNPrompt:
		r.NPrompt = v
	case FNGen:
		r.NGen = v
	case FNDepth:
		r.NDepth = v
	case FAvgNs:
		r.AvgNs = v
	case FStddevNs:
		r.StddevNs = v
	default:
		panic("benchfmt: setInt on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

func (r *Result) setBool(f Field, v bool) {
	switch f {
	case FCPUStrict:
		r.CPUStrict = v
	case FNoKVOffload:
		r.NoKVOffload = v
	case FEmbeddings:
		r.Embeddings = v
	case FNoHost:
		r.NoHost = v
	case FRepack:
		r.Repack = v
	default:
		panic("benchfmt: setBool on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

func (r *Result) setFloat(f Field, v float64) {
	switch f {
	case FAvgTs:
		r.AvgTs = v
	case FStddevTs:
		r.StddevTs = v
	default:
		panic("benchfmt: setFloat on " + f.Name())
	}
	r.Known = r.Known.With(f)
}
