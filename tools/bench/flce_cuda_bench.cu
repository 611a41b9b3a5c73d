// CUDA FLCE, bf16 storage, mean reduction, loss + grad_input (bf16) + grad_weight (f32), at
// BT=4096 and BT=16384 with H=4096, V=128256 (Llama-3's vocabulary), with the plan's chunk size and
// larger ones. Time per call from CUDA
// events (manual time), including the one synchronization that validates the targets.
// Counters: TFLOP/s of useful work (6 BT H V flops: the logits GEMM and the two gradient GEMMs),
// scratch_peak_bytes (the stream-ordered pool's high-water mark during the calls: FLCE's scratch),
// tensor_bytes (inputs and outputs), peak_device_bytes (their sum), chunk_size.
// Without a device each benchmark reports an error and the program exits normally.
#include <benchmark/benchmark.h>

#include <cstdint>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/tensor/tensor.hpp>

namespace {

using namespace tessel;

void check(cudaError_t status, char const* what) {
  gpu::check_cuda(status, what, "the FLCE CUDA benchmark");
}

constexpr index_t hidden = 4096, vocab = 128256;

__device__ float hash_uniform(std::uint64_t i, std::uint64_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;
}

__global__ void fill(bfloat16* p, index_t n, std::uint64_t seed, float scale) {
  for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = bfloat16(scale * hash_uniform(static_cast<std::uint64_t>(i), seed));
}

__global__ void fill_targets(std::int64_t* t, index_t n, index_t classes) {
  for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float const u = 0.5f * (hash_uniform(static_cast<std::uint64_t>(i), 99) + 1.0f);
    t[i] = static_cast<std::int64_t>(u * static_cast<float>(classes - 1));
  }
}

void BM_FlceCudaBf16(benchmark::State& state) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  index_t const bt = state.range(0);
  index_t const chunk_size = state.range(1);  // 0: the plan's
  auto const x_owner = make_device_tensor<bfloat16>(make_shape(bt * hidden));
  auto const w_owner = make_device_tensor<bfloat16>(make_shape(vocab * hidden));
  auto const dx_owner = make_device_tensor<bfloat16>(make_shape(bt * hidden));
  auto const dw_owner = make_device_tensor<float>(make_shape(vocab * hidden));
  auto const y_owner = make_device_tensor<std::int64_t>(make_shape(bt));
  auto const loss_owner = make_device_tensor<float>(make_shape(1));
  bfloat16* const x = x_owner.data();
  bfloat16* const w = w_owner.data();
  fill<<<1024, 256>>>(x, bt * hidden, 1, 1.0f);
  fill<<<1024, 256>>>(w, vocab * hidden, 2, 0.02f);
  fill_targets<<<64, 256>>>(y_owner.data(), bt, vocab);
  check(cudaDeviceSynchronize(), "initialization");

  gpu::Stream const stream;
  auto call = [&] {
    return flce::forward(
        make_device_tensor(static_cast<bfloat16 const*>(x), make_shape(bt, hidden)),
        make_device_tensor(static_cast<bfloat16 const*>(w), make_shape(vocab, hidden)),
        make_device_tensor(static_cast<std::int64_t const*>(y_owner.data()), make_shape(bt)),
        {.chunk_size = chunk_size},
        {.loss = make_device_tensor(loss_owner.data(), make_shape(1)),
         .grad_input = make_device_tensor(dx_owner.data(), make_shape(bt, hidden)),
         .grad_weight = make_device_tensor(dw_owner.data(), make_shape(vocab, hidden))},
        exec::Cuda{stream});
  };
  flce::FlcePlan const plan = call();  // warm-up: cuBLAS heuristics, pool growth
  check(cudaStreamSynchronize(stream), "warm-up");

  cudaMemPool_t pool;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t zero = 0, high = 0;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), "pool reset");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  double total_seconds = 0;
  for (auto _ : state) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    call();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    state.SetIterationTime(ms / 1000.0);
    total_seconds += ms / 1000.0;
  }
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), "pool high");
  double const flops = 6.0 * double(bt) * double(hidden) * double(vocab);
  double const tensor_bytes = double(bt * hidden * 2 + vocab * hidden * 2 + bt * hidden * 2 +
                                     vocab * hidden * 4 + bt * 8 + 4);
  state.counters["TFLOP/s"] =
      total_seconds > 0 ? flops * double(state.iterations()) / total_seconds / 1e12 : 0.0;
  state.counters["scratch_peak_bytes"] = double(high);
  state.counters["scratch_bytes_planned"] = double(plan.scratch_bytes(DType::bf16));
  state.counters["tensor_bytes"] = tensor_bytes;
  state.counters["peak_device_bytes"] = tensor_bytes + double(high);
  state.counters["chunk_size"] = double(plan.chunk_size);

  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// Second argument: the chunk size (0: the plan's, Liger's heuristic); the others show what larger
// chunks (fewer passes over grad_weight's f32 accumulator) buy for their scratch.
BENCHMARK(BM_FlceCudaBf16)
    ->ArgNames({"bt", "chunk"})
    ->Args({4096, 0})
    ->Args({4096, 512})
    ->Args({4096, 1024})
    ->Args({4096, 4096})
    ->Args({16384, 0})
    ->Args({16384, 1024})
    ->Args({16384, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
