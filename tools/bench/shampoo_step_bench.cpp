// Host Shampoo step on a 2-layer MLP (1024x4096 and 4096x1024, max_preconditioner_dim 1024: eight
// 1024x1024 blocks, sixteen factors) against an Adam step on the same parameters, in the same
// run. Three kinds of step: "regular", before preconditioning starts (factor updates and the
// grafted direction, no roots and no preconditioning: what issue 15's comparison with Meta
// measures); "preconditioned", after it started, between two root computations (factors, the
// two inverse-root products per block, grafting: 9 of 10 steps at precondition_frequency 10);
// "amortized", a step that recomputes all roots. Shampoo's cost per step at frequency f is
//   preconditioned + (amortized - preconditioned) / f.
// Eigenvalue-corrected Shampoo (SOAP) the same way, with and without keep_rotated_filtered_grad.
// The all-roots step's largest part, its sixteen 1024x1024 eigendecompositions, is measured alone
// too. docs/benchmarks.md has the figures and the commands.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// Steps of `o` on the MLP after `warmup` steps (allocations, first factors; the steps before
// preconditioning starts), timed one by one.
void run_steps(benchmark::State& state, Options const& o, int warmup, char const* label) {
  Mlp mlp;
  Shampoo<float> opt(mlp_plan(), o);
  auto ps = mlp.params();
  auto gs = mlp.grads();
  for (int i = 0; i < warmup; ++i) opt.step(ps, gs);
  for (auto _ : state) {
    opt.step(ps, gs);
    benchmark::DoNotOptimize(mlp.w1.data());
  }
  state.SetLabel(label);
}

// The kind of step: 0 regular, 1 amortized, 2 preconditioned (above). Regular steps keep
// preconditioning from starting; preconditioned ones start it at step 10 (a root computation)
// and run steps 11 to 19 between it and the next.
struct StepKind {
  index_t frequency, start;
  int warmup;
  char const* label;
};
StepKind step_kind(std::int64_t kind) {
  switch (kind) {
    case 0:
      return {100, 1000000, 1, "regular: no roots, no preconditioning"};
    case 1:
      return {1, 1, 1, "amortized: every step computes 16 inverse roots of 1024x1024"};
    default:
      return {10, 10, 10, "preconditioned: between root computations"};
  }
}

// The MLP's options for a kind of step: Adam grafting, epsilon 1e-8, its frequency and start.
Options step_options(StepKind const& k) {
  Options o;
  o.grafting = adam_grafting();
  o.epsilon = 1e-8;
  o.precondition_frequency = k.frequency;
  o.start_preconditioning_step = k.start;
  return o;
}

void BM_ShampooStep(benchmark::State& state) {
  StepKind const k = step_kind(state.range(0));
  run_steps(state, step_options(k), k.warmup, k.label);
}
// Preconditioned steps run 5 iterations: steps 11 to 15, before step 20 computes roots again.
BENCHMARK(BM_ShampooStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ShampooStep)->Arg(2)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();

// Eigenvalue-corrected Shampoo: range(0) the kind of step (1: every step refreshes the
// eigenvectors), range(1) = 1 with keep_rotated_filtered_grad.
void BM_SoapStep(benchmark::State& state) {
  StepKind const k = step_kind(state.range(0));
  Options o = step_options(k);
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.keep_rotated_filtered_grad = state.range(1) == 1;
  run_steps(state, o, k.warmup, k.label);
}
BENCHMARK(BM_SoapStep)
    ->Args({2, 0})
    ->Args({2, 1})
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SoapStep)->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

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
