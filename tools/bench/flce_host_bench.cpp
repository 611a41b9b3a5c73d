// Host FLCE versus the unfused host baseline at BT=2048, H=512, V=32000, f32, mean reduction,
// computing the loss, grad_input and grad_weight:
//   unfused: logits = x W^T materialized (BT, V), a softmax cross-entropy pass that turns them
//            into d loss / d logits in place, then grad_input = g W and grad_weight = g^T x
//            (Eigen GEMMs, the same OpenMP row loop and expf as FLCE);
//   flce:    flce::forward with the plan's chunking (64 rows), and with chunks of 128 and
//            BT/8 = 256 rows.
// Counters: extra_bytes (peak heap bytes the call allocated, counted by alloc_counter.cpp),
// extra_vs_logits (extra_bytes / (BT*V*4)), threads (OpenMP threads Eigen and the loops use).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <Eigen/Core>
#include <tessel/flce/forward.hpp>
#include <tessel/tensor/tensor.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "alloc_counter.hpp"

namespace {

using namespace tessel;

constexpr index_t bt = 2048, hidden = 512, vocab = 32000;

struct Data {
  std::vector<float> x, w, dx, dw;
  std::vector<std::int64_t> y;
  Data() : x(bt * hidden), w(vocab * hidden), dx(bt * hidden), dw(vocab * hidden), y(bt) {
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& e : x) e = n(rng);
    for (auto& e : w) e = 0.05f * n(rng);
    std::uniform_int_distribution<std::int64_t> c(0, vocab - 1);
    for (auto& t : y) t = c(rng);
  }
};

Data& data() {
  static Data d;
  return d;
}

int threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void report(benchmark::State& state, std::int64_t extra) {
  state.counters["extra_bytes"] = static_cast<double>(extra);
  state.counters["extra_vs_logits"] = static_cast<double>(extra) / (double(bt) * vocab * 4);
  state.counters["threads"] = threads();
}

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The unfused baseline: what a framework does without fusion.
float unfused(Data& d) {
  Eigen::Map<RowMajor const> x(d.x.data(), bt, hidden), w(d.w.data(), vocab, hidden);
  Eigen::Map<RowMajor> dx(d.dx.data(), bt, hidden), dw(d.dw.data(), vocab, hidden);
  RowMajor logits(bt, vocab);  // the (BT, V) tensor FLCE avoids
  logits.noalias() = x * w.transpose();
  float const inv_n = 1.0f / static_cast<float>(bt);
  std::vector<double> row_loss(bt);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < bt; ++i) {
    float* z = logits.data() + i * vocab;
    float m = -INFINITY;
    for (index_t j = 0; j < vocab; ++j) m = std::max(m, z[j]);
    float s = 0;
    for (index_t j = 0; j < vocab; ++j) s += ::expf(z[j] - m);
    float const lse = m + ::logf(s);
    index_t const t = d.y[i];
    row_loss[i] = lse - z[t];
    for (index_t j = 0; j < vocab; ++j) z[j] = ::expf(z[j] - lse) * inv_n;
    z[t] -= inv_n;
  }
  dw.noalias() = logits.transpose() * x;
  dx.noalias() = logits * w;
  double loss = 0;
  for (double l : row_loss) loss += l;
  return static_cast<float>(loss * inv_n);
}

float fused(Data& d, index_t chunk_size) {
  float loss = 0;
  flce::forward(make_tensor(static_cast<float const*>(d.x.data()), make_shape(bt, hidden)),
                make_tensor(static_cast<float const*>(d.w.data()), make_shape(vocab, hidden)),
                make_tensor(static_cast<std::int64_t const*>(d.y.data()), make_shape(bt)),
                {.chunk_size = chunk_size},
                {.loss = make_tensor(&loss, make_shape(1)),
                 .grad_input = make_tensor(d.dx.data(), make_shape(bt, hidden)),
                 .grad_weight = make_tensor(d.dw.data(), make_shape(vocab, hidden))});
  return loss;
}

void BM_UnfusedHost(benchmark::State& state) {
  Data& d = data();
  std::int64_t extra = 0;
  for (auto _ : state) {
    std::int64_t const before = bench::allocated_bytes();
    bench::reset_peak();
    benchmark::DoNotOptimize(unfused(d));
    extra = bench::peak_allocated_bytes() - before;
  }
  report(state, extra);
}

// range(0): rows per chunk; 0 = the plan's heuristic (64 here).
void BM_FlceHost(benchmark::State& state) {
  Data& d = data();
  std::int64_t extra = 0;
  for (auto _ : state) {
    std::int64_t const before = bench::allocated_bytes();
    bench::reset_peak();
    benchmark::DoNotOptimize(fused(d, state.range(0)));
    extra = bench::peak_allocated_bytes() - before;
  }
  report(state, extra);
  state.counters["chunk_size"] = static_cast<double>(
      state.range(0) > 0 ? state.range(0) : flce::make_plan(bt, hidden, vocab).chunk_size);
}

BENCHMARK(BM_UnfusedHost)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlceHost)->Arg(0)->Arg(128)->Arg(bt / 8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
