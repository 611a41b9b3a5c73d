// The CUDA executor against its baselines, measured in the same run (Google Benchmark, manual
// time from CUDA events):
//   Fused/*       out = x * 2 + y (two reads, one write)  vs  cudaMemcpy device-to-device of the
//                 same bytes moved (bandwidth; target >= 85%)
//   RowLse/*      logsumexp over the rows of (R, C)        vs  cub::DeviceSegmentedReduce with the
//                 same online max-and-sum operator (target within 10%)
//   FullSum/*     sum(x)                                    vs  cub::DeviceReduce::Sum on the
//                 plain array (target within 10%)
//   BroadcastNest out[512, 24, 1024] = x + y[24, 1], a three-mode nest that cannot coalesce:
//                 /static (Int<> layouts: the compile-time nest, constant divisors and strides)
//                 vs /dynamic (index_t layouts: FastDivmod and strides read from the parameters)
// Every benchmark reports bytes_per_second for the bytes it must move. Without a GPU each one
// skips with a message. Run: build-cuda/bin/bench_exec_cuda (tools/gpu-check runs it).
#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>

#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>

namespace tessel::bench {
namespace {

bool skip_without_gpu(benchmark::State& state) {
  if (gpu::device_count() > 0) return false;
  state.SkipWithError("no CUDA device: the CUDA benchmarks were built, not run");
  return true;
}

// Times f() with CUDA events on stream, one iteration per benchmark iteration.
template <class F>
void time_on_stream(benchmark::State& state, gpu::Stream const& s, F const& f) {
  cudaEvent_t start, stop;
  TESSEL_CUDA_CHECK(cudaEventCreate(&start), "creating a timing event");
  TESSEL_CUDA_CHECK(cudaEventCreate(&stop), "creating a timing event");
  f();  // warm-up (allocation pools, first-launch costs)
  s.synchronize();
  for (auto _ : state) {
    TESSEL_CUDA_CHECK(cudaEventRecord(start, s), "recording a timing event");
    f();
    TESSEL_CUDA_CHECK(cudaEventRecord(stop, s), "recording a timing event");
    TESSEL_CUDA_CHECK(cudaEventSynchronize(stop), "waiting for a timing event");
    float ms = 0;
    TESSEL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop), "reading a timing event");
    state.SetIterationTime(static_cast<double>(ms) / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

void BM_FusedExpression(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  index_t const n = state.range(0);
  gpu::Stream s;
  auto x = make_device_tensor<float>(make_shape(n));
  auto y = make_device_tensor<float>(make_shape(n));
  auto out = make_device_tensor<float>(make_shape(n));
  time_on_stream(state, s, [&] { assign(out, x * 2.0f + y, exec::Cuda{s.get()}); });
  state.SetBytesProcessed(state.iterations() * n * 3 * static_cast<index_t>(sizeof(float)));
}

void BM_MemcpyDeviceToDevice(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  index_t const n = state.range(0);
  gpu::Stream s;
  // 3n floats moved: a copy of 1.5n floats reads and writes 1.5n each.
  index_t const m = n * 3 / 2;
  auto a = make_device_tensor<float>(make_shape(m));
  auto b = make_device_tensor<float>(make_shape(m));
  time_on_stream(state, s, [&] {
    TESSEL_CUDA_CHECK(
        cudaMemcpyAsync(b.data(), a.data(), static_cast<std::size_t>(m) * sizeof(float),
                        cudaMemcpyDeviceToDevice, s),
        "copying device memory");
  });
  state.SetBytesProcessed(state.iterations() * m * 2 * static_cast<index_t>(sizeof(float)));
}

void BM_RowLogsumexp(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  index_t const rows = state.range(0), cols = state.range(1);
  gpu::Stream s;
  auto x = make_device_tensor<float>(make_shape(rows, cols));
  auto out = make_device_tensor<float>(make_shape(rows));
  time_on_stream(state, s, [&] { assign(out, logsumexp(x, mode<1>), exec::Cuda{s.get()}); });
  state.SetBytesProcessed(state.iterations() * rows * cols * static_cast<index_t>(sizeof(float)));
}

struct ToLse {
  __host__ __device__ exec::LseState<float> operator()(float v) const {
    exec::LogSumExpOp<float> const op{};
    return op.update(op.identity(), v, 0);
  }
};
struct RowOffset {
  int cols;
  __host__ __device__ int operator()(int r) const { return r * cols; }
};

void BM_CubSegmentedLogsumexp(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  index_t const rows = state.range(0), cols = state.range(1);
  gpu::Stream s;
  auto x = make_device_tensor<float>(make_shape(rows, cols));
  auto out = make_device_tensor<exec::LseState<float>>(make_shape(rows));
  auto in = thrust::make_transform_iterator(x.data(), ToLse{});
  auto offsets = thrust::make_transform_iterator(thrust::counting_iterator<int>(0),
                                                 RowOffset{static_cast<int>(cols)});
  exec::LogSumExpOp<float> const op{};
  std::size_t bytes = 0;
  cub::DeviceSegmentedReduce::Reduce(nullptr, bytes, in, out.data(), static_cast<int>(rows),
                                     offsets, offsets + 1, op, op.identity(), s.get());
  gpu::StreamBuffer temp(bytes, s);
  time_on_stream(state, s, [&] {
    TESSEL_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(temp.data(), bytes, in, out.data(),
                                                         static_cast<int>(rows), offsets,
                                                         offsets + 1, op, op.identity(), s.get()),
                      "the CUB segmented reduction");
  });
  state.SetBytesProcessed(state.iterations() * rows * cols * static_cast<index_t>(sizeof(float)));
}

void BM_FullSum(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  index_t const n = state.range(0);
  gpu::Stream s;
  auto x = make_device_tensor<float>(make_shape(n));
  auto out = make_device_tensor<float>(make_shape(index_t{1}));
  time_on_stream(state, s, [&] { assign(out, sum(x), exec::Cuda{s.get()}); });
  state.SetBytesProcessed(state.iterations() * n * static_cast<index_t>(sizeof(float)));
}

void BM_CubDeviceReduceSum(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  index_t const n = state.range(0);
  gpu::Stream s;
  auto x = make_device_tensor<float>(make_shape(n));
  auto out = make_device_tensor<float>(make_shape(index_t{1}));
  std::size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, x.data(), out.data(), n, s.get());
  gpu::StreamBuffer temp(bytes, s);
  time_on_stream(state, s, [&] {
    TESSEL_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, x.data(), out.data(), n, s.get()),
                      "the CUB sum");
  });
  state.SetBytesProcessed(state.iterations() * n * static_cast<index_t>(sizeof(float)));
}

// out = x + y with y broadcast along modes 0 and 2: both divisions per element stay.
template <class Shape3, class ShapeY>
void broadcast_nest(benchmark::State& state, Shape3 const& shape, ShapeY const& yshape) {
  if (skip_without_gpu(state)) return;
  gpu::Stream s;
  auto x = make_device_tensor<float>(shape);
  auto y = make_device_tensor<float>(yshape);
  auto out = make_device_tensor<float>(shape);
  time_on_stream(state, s, [&] { assign(out, x + y, exec::Cuda{s.get()}); });
  index_t const n = to_index(size(out.layout()));
  state.SetBytesProcessed(state.iterations() * n * 2 * static_cast<index_t>(sizeof(float)));
}
void BM_BroadcastNestStatic(benchmark::State& state) {
  broadcast_nest(state, make_shape(Int<512>{}, Int<24>{}, Int<1024>{}),
                 make_shape(Int<24>{}, Int<1>{}));
}
void BM_BroadcastNestDynamic(benchmark::State& state) {
  broadcast_nest(state, make_shape(index_t{512}, index_t{24}, index_t{1024}),
                 make_shape(index_t{24}, index_t{1}));
}

BENCHMARK(BM_FusedExpression)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemcpyDeviceToDevice)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RowLogsumexp)
    ->Args({4096, 32000})
    ->Args({65536, 512})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CubSegmentedLogsumexp)
    ->Args({4096, 32000})
    ->Args({65536, 512})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FullSum)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CubDeviceReduceSum)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BroadcastNestStatic)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BroadcastNestDynamic)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessel::bench

BENCHMARK_MAIN();
