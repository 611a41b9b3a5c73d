// Host Shampoo step on a 2-layer MLP (1024x4096 and 4096x1024, max_preconditioner_dim 1024: eight
// 1024x1024 blocks, precondition_frequency 100) against an Adam step on the same parameters, in
// the same run. Shampoo's amortized cost per step is
//   regular + (amortized - regular) / 100,
// where "regular" is a step without inverse roots and "amortized" a step that recomputes all of
// them; both are measured here (docs/benchmarks.md has the figures and the command). The
// all-roots step's largest part, its sixteen 1024x1024 eigendecompositions, is measured alone too.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <vector>

#include <tessel/exec/dense.hpp>
#include <tessel/exec/eigh.hpp>
#include <tessel/shampoo/optimizer.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

struct Mlp {
  std::vector<float> w1, w2, g1, g2;
  Mlp() : w1(1024 * 4096), w2(4096 * 1024), g1(w1.size()), g2(w2.size()) {
    std::mt19937 rng(0);
    std::normal_distribution<float> n(0.0f, 0.02f);
    for (auto* v : {&w1, &w2, &g1, &g2})
      for (auto& x : *v) x = n(rng);
  }
  std::vector<std::span<float>> params() { return {w1, w2}; }
  std::vector<std::span<float const>> grads() { return {g1, g2}; }
};

Plan mlp_plan() {
  return make_plan(PlanOptions<index_t, index_t>{1024, 1, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{1024, 4096}, {4096, 1024}});
}

// state.range(0) = 1: every step recomputes the inverse roots; 0: none does (the 99 of 100).
void BM_ShampooStep(benchmark::State& state) {
  Mlp mlp;
  Options o;
  o.grafting = adam_grafting();
  o.epsilon = 1e-8;
  bool const amortized = state.range(0) == 1;
  o.precondition_frequency = amortized ? 1 : 100;
  o.start_preconditioning_step = amortized ? 1 : 1000000;
  Shampoo<float> opt(mlp_plan(), o);
  auto ps = mlp.params();
  auto gs = mlp.grads();
  opt.step(ps, gs);  // warm-up: allocations, first factors
  for (auto _ : state) {
    opt.step(ps, gs);
    benchmark::DoNotOptimize(mlp.w1.data());
  }
  state.SetLabel(amortized ? "every step computes 16 inverse roots of 1024x1024"
                           : "no inverse roots (99 of 100 steps)");
}
BENCHMARK(BM_ShampooStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The all-roots step's eigendecompositions: sixteen factor-like 1024x1024 matrices G G^T / 1024
// + 1e-3 I (G drawn as the MLP's gradients), one exec::eigh call on the batch.
void BM_EighFactors(benchmark::State& state) {
  index_t const batch = 16, n = 1024;
  std::vector<float> g(static_cast<std::size_t>(n * n));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto factors = make_host_tensor<float>(make_shape(batch, n, n));
  for (index_t b = 0; b < batch; ++b) {
    for (auto& x : g) x = normal(rng);
    auto gb = make_tensor(g.data(), make_shape(n, n));
    auto fb = make_tensor(factors.data() + b * n * n, make_shape(n, n));
    exec::syrk(exec::Auto{}, fb, gb, {1.0 / static_cast<double>(n), 0.0});
    for (index_t i = 0; i < n; ++i) fb(i, i) += 1e-3f;
  }
  auto q = make_host_tensor<float>(make_shape(batch, n, n));
  auto w = make_host_tensor<float>(make_shape(batch, n));
  auto info = make_host_tensor<int>(make_shape(batch));
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(factors.data(), factors.data() + batch * n * n, q.data());
    state.ResumeTiming();
    exec::eigh(exec::Auto{}, w.view(), q.view(), info.view());
    benchmark::DoNotOptimize(q.data());
  }
  state.SetLabel("16 eigendecompositions of 1024x1024");
}
BENCHMARK(BM_EighFactors)->Unit(benchmark::kMillisecond)->UseRealTime();

// Adam (torch.optim.Adam's update, bias-corrected) on the same parameters.
void BM_AdamStep(benchmark::State& state) {
  Mlp mlp;
  std::vector<float> m1(mlp.w1.size()), v1(m1.size()), m2(mlp.w2.size()), v2(m2.size());
  float const lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  int t = 0;
  auto update = [&](std::vector<float>& w, std::vector<float> const& g, std::vector<float>& m,
                    std::vector<float>& v, float c1, float c2) {
    auto const n = static_cast<std::ptrdiff_t>(w.size());
#if defined(_OPENMP)
#pragma omp parallel for simd
#endif
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
    }
  };
  for (auto _ : state) {
    ++t;
    float const c1 = 1 - std::pow(b1, static_cast<float>(t));
    float const c2 = 1 - std::pow(b2, static_cast<float>(t));
    update(mlp.w1, mlp.g1, m1, v1, c1, c2);
    update(mlp.w2, mlp.g2, m2, v2, c1, c2);
    benchmark::DoNotOptimize(mlp.w1.data());
  }
}
BENCHMARK(BM_AdamStep)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
