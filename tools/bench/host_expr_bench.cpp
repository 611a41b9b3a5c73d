// Host expressions against Eigen Tensor on the same machine, in the same run, with the same flags:
//   Fused:      y = a * x + b * exp(z) over 2^24 floats (2 reads + 1 write per element)
//   RowLse:     logsumexp of each row of a [4096, 32000] float matrix (Eigen: max, then exp-sum,
//               as one tensor expression and as a per-row Array loop)
//   Copy:       y = x over 2^24 floats (memcpy per thread): this machine's memory bandwidth
//   Softmax:    y = softmax(x) by rows of (128, 1000) and (512, 32000) floats, one thread, against
//               the plain loop a user would write (max, exp and sum, scale)
// Each at 1 and 2 threads (Eigen: ThreadPoolDevice with that many threads; tessel:
// exec::OpenMP{.threads = n}); tessel's Fused and Copy also with streaming stores off and on
// (stream:0 / stream:1, exec::set_streaming_store_bytes). Run with
//   --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// and compare medians; bytes_per_second counts every byte the expression reads or writes once
// (not the destination's read-for-ownership that ordinary stores add).
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include <tessel/tessel.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using namespace tessel;

constexpr index_t fused_n = index_t{1} << 24;
constexpr index_t lse_rows = 4096;
constexpr index_t lse_cols = 32000;

std::vector<float> random_floats(index_t n, float lo, float hi, unsigned seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (auto& x : v) x = dist(gen);
  return v;
}

struct FusedData {
  std::vector<float> x = random_floats(fused_n, -1, 1, 1);
  std::vector<float> z = random_floats(fused_n, -4, 4, 2);
  std::vector<float> y = std::vector<float>(static_cast<std::size_t>(fused_n), 0.0f);
};
FusedData& fused_data() {
  static FusedData d;
  return d;
}

struct LseData {
  std::vector<float> x = random_floats(lse_rows * lse_cols, -8, 8, 3);
  std::vector<float> out = std::vector<float>(static_cast<std::size_t>(lse_rows), 0.0f);
  std::vector<float> max = std::vector<float>(static_cast<std::size_t>(lse_rows), 0.0f);
};
LseData& lse_data() {
  static LseData d;
  return d;
}

constexpr float a = 0.5f;
constexpr float b = 1.5f;

// Streaming stores as the benchmark's second argument asks, for the benchmark's duration.
struct StreamingFor {
  index_t saved;
  explicit StreamingFor(benchmark::State const& state)
      : saved(exec::set_streaming_store_bytes(state.range(1) != 0 ? 0 : -1)) {}
  ~StreamingFor() { exec::set_streaming_store_bytes(saved); }
};

void BM_Fused_tessel(benchmark::State& state) {
  auto& d = fused_data();
  int const threads = static_cast<int>(state.range(0));
  StreamingFor const streaming(state);
  auto x = make_tensor(d.x.data(), make_shape(fused_n));
  auto z = make_tensor(d.z.data(), make_shape(fused_n));
  auto y = make_tensor(d.y.data(), make_shape(fused_n));
  for (auto _ : state) {
    assign(y, a * x + b * exp(z), exec::OpenMP{.threads = threads});
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * fused_n * 3 * index_t(sizeof(float)));
}

void BM_Fused_eigen(benchmark::State& state) {
  auto& d = fused_data();
  int const threads = static_cast<int>(state.range(0));
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> x(d.x.data(), fused_n);
  Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> z(d.z.data(), fused_n);
  Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> y(d.y.data(), fused_n);
  for (auto _ : state) {
    y.device(device) = a * x + b * z.exp();
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * fused_n * 3 * index_t(sizeof(float)));
}

void BM_RowLse_tessel(benchmark::State& state) {
  auto& d = lse_data();
  int const threads = static_cast<int>(state.range(0));
  auto x = make_tensor(d.x.data(), make_shape(lse_rows, lse_cols));
  auto out = make_tensor(d.out.data(), make_shape(lse_rows));
  for (auto _ : state) {
    assign(out, logsumexp(x, mode<1>), exec::OpenMP{.threads = threads});
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * lse_rows * lse_cols * index_t(sizeof(float)));
}

void BM_RowLse_eigen(benchmark::State& state) {
  auto& d = lse_data();
  int const threads = static_cast<int>(state.range(0));
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  using Index = Eigen::Index;
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>> x(d.x.data(), lse_rows, lse_cols);
  Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> m(d.max.data(), lse_rows);
  Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> out(d.out.data(), lse_rows);
  Eigen::array<Index, 1> const cols{1};
  Eigen::array<Index, 2> const column{lse_rows, 1};
  Eigen::array<Index, 2> const across{1, lse_cols};
  for (auto _ : state) {
    m.device(device) = x.maximum(cols);
    out.device(device) = m + (x - m.reshape(column).broadcast(across)).exp().sum(cols).log();
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * lse_rows * lse_cols * index_t(sizeof(float)));
}

// Eigen's best equivalent we found: per row, an Array map, maxCoeff, then (row - m).exp().sum()
// (vectorized; the second pass reads the row from cache), rows split by Eigen's parallelFor.
void BM_RowLse_eigen_rows(benchmark::State& state) {
  auto& d = lse_data();
  int const threads = static_cast<int>(state.range(0));
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  auto rows = [&](Eigen::Index first, Eigen::Index last) {
    for (Eigen::Index r = first; r < last; ++r) {
      Eigen::Map<Eigen::ArrayXf const> row(d.x.data() + r * lse_cols, lse_cols);
      float const m = row.maxCoeff();
      d.out[static_cast<std::size_t>(r)] = m + std::log((row - m).exp().sum());
    }
  };
  Eigen::TensorOpCost const per_row(double(lse_cols) * sizeof(float), sizeof(float),
                                    double(lse_cols) * 20);
  for (auto _ : state) {
    device.parallelFor(lse_rows, per_row, rows);
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * lse_rows * lse_cols * index_t(sizeof(float)));
}

// The memory-bandwidth baseline: memcpy of one contiguous chunk per thread.
void BM_Copy_memcpy(benchmark::State& state) {
  auto& d = fused_data();
  int const threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
    {
      index_t const t = omp_get_thread_num(), n = omp_get_num_threads();
      index_t const begin = fused_n * t / n, end = fused_n * (t + 1) / n;
      std::memcpy(d.y.data() + begin, d.x.data() + begin,
                  static_cast<std::size_t>(end - begin) * sizeof(float));
    }
#else
    (void)threads;
    std::memcpy(d.y.data(), d.x.data(), static_cast<std::size_t>(fused_n) * sizeof(float));
#endif
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * fused_n * 2 * index_t(sizeof(float)));
}

// The same copy as a tessel assignment (y = x).
void BM_Copy_tessel(benchmark::State& state) {
  auto& d = fused_data();
  int const threads = static_cast<int>(state.range(0));
  StreamingFor const streaming(state);
  auto x = make_tensor(d.x.data(), make_shape(fused_n));
  auto y = make_tensor(d.y.data(), make_shape(fused_n));
  for (auto _ : state) {
    assign(y, x, exec::OpenMP{.threads = threads});
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * fused_n * 2 * index_t(sizeof(float)));
}

struct SoftmaxData {
  index_t rows, cols;
  std::vector<float> x, y;
  SoftmaxData(index_t r, index_t c)
      : rows(r), cols(c), x(random_floats(r * c, -8, 8, 4)), y(static_cast<std::size_t>(r * c)) {}
};
SoftmaxData& softmax_data(index_t rows, index_t cols) {
  static SoftmaxData small(128, 1000), large(512, 32000);
  return rows == small.rows && cols == small.cols ? small : large;
}

// y = softmax(x) along rows, exec::Serial.
void BM_Softmax_tessel(benchmark::State& state) {
  auto& d = softmax_data(state.range(0), state.range(1));
  auto x = make_tensor(d.x.data(), make_shape(d.rows, d.cols));
  auto y = make_tensor(d.y.data(), make_shape(d.rows, d.cols));
  for (auto _ : state) {
    assign(y, softmax(x), exec::Serial{});
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * d.rows * d.cols);
}

// The loop a user would write: per row the maximum, exp(x - max) stored and summed, then scaled.
void BM_Softmax_loop(benchmark::State& state) {
  auto& d = softmax_data(state.range(0), state.range(1));
  for (auto _ : state) {
    for (index_t r = 0; r < d.rows; ++r) {
      float const* x = d.x.data() + r * d.cols;
      float* y = d.y.data() + r * d.cols;
      float m = -INFINITY;
      for (index_t j = 0; j < d.cols; ++j) m = std::max(m, x[j]);
      float s = 0.0f;
      for (index_t j = 0; j < d.cols; ++j) {
        y[j] = std::exp(x[j] - m);
        s += y[j];
      }
      float const inv = 1.0f / s;
      for (index_t j = 0; j < d.cols; ++j) y[j] *= inv;
    }
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * d.rows * d.cols);
}

// Where Auto should switch from serial to OpenMP: y = a * x + b over n floats.
void BM_Threshold(benchmark::State& state) {
  index_t const n = state.range(0);
  int const threads = static_cast<int>(state.range(1));
  auto x = make_host_tensor<float>(make_shape(n));
  auto y = make_host_tensor<float>(make_shape(n));
  for (auto _ : state) {
    if (threads == 1)
      assign(y, a * x + b, exec::Serial{});
    else
      assign(y, a * x + b, exec::OpenMP{.threads = threads});
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// Squared norms in double of the rows or the columns of eight row-major 1024 x 1024 float blocks
// (Shampoo's overflow pre-check along modes 0 and 1 of its benchmark's blocks): per row the
// reduced mode is contiguous; per column it is strided and the kept mode contiguous, which the
// executor reduces a tile of columns at a time (docs/design.md, "Reductions").
void BM_SquaredNorms(benchmark::State& state) {
  constexpr index_t count = 8, d = 1024;
  static std::vector<float> const g = random_floats(count * d * d, -1, 1, 4);
  std::vector<double> norms(static_cast<std::size_t>(count * d));
  bool const columns = state.range(0) == 1;
  int const threads = static_cast<int>(state.range(1));
  auto const blocks = make_tensor(g.data(), make_shape(count, d, d));
  auto const out = make_tensor(norms.data(), make_shape(count, d));
  auto const by_column = permute<0, 2, 1>(blocks);
  for (auto _ : state) {
    if (columns)
      assign(out, sum(cast<double>(by_column) * cast<double>(by_column), mode<2>),
             exec::OpenMP{.threads = threads});
    else
      assign(out, sum(cast<double>(blocks) * cast<double>(blocks), mode<2>),
             exec::OpenMP{.threads = threads});
    benchmark::DoNotOptimize(norms.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * count * d * d * index_t(sizeof(float)));
}

}  // namespace

BENCHMARK(BM_Fused_tessel)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"threads", "stream"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fused_eigen)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RowLse_tessel)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RowLse_eigen)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RowLse_eigen_rows)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Copy_memcpy)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Copy_tessel)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"threads", "stream"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax_tessel)
    ->Args({128, 1000})
    ->Args({512, 32000})
    ->ArgNames({"rows", "cols"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Softmax_loop)
    ->Args({128, 1000})
    ->Args({512, 32000})
    ->ArgNames({"rows", "cols"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Threshold)
    ->ArgsProduct({{1 << 12, 1 << 14, 1 << 15, 1 << 16, 1 << 18, 1 << 20, 1 << 22}, {1, 2}})
    ->ArgNames({"n", "threads"})
    ->UseRealTime();

BENCHMARK(BM_SquaredNorms)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->ArgNames({"columns", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
