// DeviceShampoo: the Shampoo step on a CUDA device. It is Shampoo<float, RuntimePlan, exec::Cuda>,
// the host optimizer's own code (shampoo/optimizer.hpp) run by the CUDA executor: state in device
// memory (exec/cuda/memory.hpp), each elementwise stage one fused kernel per segment, the
// factor updates and preconditioning one strided-batched cuBLAS call per group and mode, the
// eigendecompositions one cusolverDnXsyevBatched call per group and mode (retried in double), and
// one stream synchronization per step where the step decides on the host (validation and the
// overflow pre-check; amortized steps wait again for the roots' verdicts). Same options, checks,
// sentences, quantized factor dtypes, state_dict keys and load_state_dict as the host optimizer.
// Include from CUDA translation units; link CUDA::cudart, CUDA::cublas and CUDA::cusolver.
// Other spellings: Shampoo<double, RuntimePlan, exec::Cuda>, Shampoo<float, static_plan<plan>,
// exec::Cuda>; pass exec::Cuda{stream} to run on a stream.
#pragma once

#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/dense.hpp>
#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/eigh.cuh>
#include <tessel/exec/cuda/qr.cuh>

#include <tessel/exec/cuda/memory.hpp>
#include "optimizer.hpp"

namespace tessel::shampoo {

using DeviceShampoo = Shampoo<float, RuntimePlan, exec::Cuda>;

}  // namespace tessel::shampoo

// Compiled once in the project's tessel_shampoo_cuda_prebuilt library
// (kernels/shampoo_cuda_prebuilt.cu), which its CUDA and NCCL tests link; other programs compile the
// step where they use it.
#if defined(TESSEL_SHAMPOO_CUDA_PREBUILT)
namespace tessel::shampoo {
extern template class StepCore<float, exec::Cuda>;
extern template class ShampooStep<float, AnyPreconditioner, exec::Cuda>;
extern template class BasicShampoo<float, AnyPreconditioner, RuntimePlan, exec::Cuda>;
}  // namespace tessel::shampoo
#endif
