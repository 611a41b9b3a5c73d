// Causal attention on the host, forward + backward, f32, GPT-2 small's heads (12 x 64) at B 4 and
// T 64 / 256: tessel's nn::attention_forward/backward (static plan) against a naive
// implementation that keeps the (B, heads, T, T) probabilities between the passes, the way
// llm.c's CPU attention does (written here from the formulas, not copied). Each benchmark is one
// forward and one backward. The thread count is the executor's (OpenMP team, TESSEL_BENCH_THREADS
// or all cores); the naive one is single-threaded, so compare it with --threads 1 figures.
// docs/attention.md has the figures and the PyTorch comparison (tools/bench/attention_torch.py).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <tessel/exec/host.hpp>
#include <tessel/nn/attention.hpp>
#include <tessel/tensor/fill.hpp>
#include <tessel/tensor/host_tensor.hpp>

namespace {

using namespace tessel;

int bench_threads() {
  char const* env = std::getenv("TESSEL_BENCH_THREADS");
  return env != nullptr ? std::atoi(env) : 0;
}

template <index_t B, index_t T, index_t H, index_t D>
void tessel_attention(benchmark::State& state) {
  auto const shape = make_shape(Int<B>{}, Int<T>{}, Int<H>{}, Int<D>{});
  auto q = make_host_tensor<float>(shape), k = make_host_tensor<float>(shape),
       v = make_host_tensor<float>(shape), out = make_host_tensor<float>(shape),
       go = make_host_tensor<float>(shape), dq = make_host_tensor<float>(shape),
       dk = make_host_tensor<float>(shape), dv = make_host_tensor<float>(shape);
  auto lse = make_host_tensor<float>(make_shape(Int<B>{}, Int<H>{}, Int<T>{}));
  std::mt19937_64 rng(1);
  for (auto* t : {&q, &k, &v, &go}) fill_normal(*t, rng);
  constexpr auto plan = nn::make_attention_plan<float>(Int<B>{}, Int<H>{}, Int<T>{}, Int<D>{});
  exec::OpenMP const x{.threads = bench_threads()};
  for (auto _ : state) {
    nn::attention_forward(plan, q, k, v, out, lse, x);
    nn::attention_backward(plan, nn::AttentionSaved{q, k, v, out, lse}, go,
                           nn::AttentionGrads{dq, dk, dv}, x);
    benchmark::DoNotOptimize(dv.data());
  }
}

// The tile budget's effect (docs/attention.md, "The plan"): the run-time plan of B 4, 12 heads,
// head_dim 64 at T = range(0) with a budget of range(1) KiB.
void tessel_attention_budget(benchmark::State& state) {
  index_t const t = state.range(0);
  auto const shape = make_shape(index_t{4}, t, index_t{12}, index_t{64});
  auto q = make_host_tensor<float>(shape), k = make_host_tensor<float>(shape),
       v = make_host_tensor<float>(shape), out = make_host_tensor<float>(shape),
       go = make_host_tensor<float>(shape), dq = make_host_tensor<float>(shape),
       dk = make_host_tensor<float>(shape), dv = make_host_tensor<float>(shape);
  auto lse = make_host_tensor<float>(make_shape(index_t{4}, index_t{12}, t));
  std::mt19937_64 rng(1);
  for (auto* x : {&q, &k, &v, &go}) fill_normal(*x, rng);
  auto const plan = nn::make_attention_plan<float>(4, 12, t, 64, state.range(1) << 10);
  state.SetLabel(std::to_string(plan.q_tile) + " x " + std::to_string(plan.kv_tile));
  exec::OpenMP const x{.threads = bench_threads()};
  for (auto _ : state) {
    nn::attention_forward(plan, q, k, v, out, lse, x);
    nn::attention_backward(plan, nn::AttentionSaved{q, k, v, out, lse}, go,
                           nn::AttentionGrads{dq, dk, dv}, x);
    benchmark::DoNotOptimize(dv.data());
  }
}

// The naive pair: probabilities (B, H, T, T) kept from the forward, the backward through them.
template <index_t B, index_t T, index_t H, index_t D>
void naive_attention(benchmark::State& state) {
  constexpr index_t n = B * T * H * D;
  std::vector<float> q(n), k(n), v(n), out(n), go(n), dq(n), dk(n), dv(n);
  std::vector<float> att(B * H * T * T), datt(T);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  for (auto* x : {&q, &k, &v, &go})
    for (auto& e : *x) e = normal(rng);
  auto at = [](index_t b, index_t t, index_t h) { return ((b * T + t) * H + h) * D; };
  float const scale = 1.0f / std::sqrt(float(D));
  for (auto _ : state) {
    for (index_t b = 0; b < B; ++b)
      for (index_t t = 0; t < T; ++t)
        for (index_t h = 0; h < H; ++h) {
          float* a = &att[((b * H + h) * T + t) * T];
          float m = -INFINITY;
          for (index_t j = 0; j <= t; ++j) {
            float s = 0;
            for (index_t c = 0; c < D; ++c) s += q[at(b, t, h) + c] * k[at(b, j, h) + c];
            a[j] = s * scale;
            m = std::max(m, a[j]);
          }
          float sum = 0;
          for (index_t j = 0; j <= t; ++j) sum += (a[j] = std::exp(a[j] - m));
          float* o = &out[at(b, t, h)];
          for (index_t c = 0; c < D; ++c) o[c] = 0;
          for (index_t j = 0; j <= t; ++j) {
            a[j] /= sum;
            for (index_t c = 0; c < D; ++c) o[c] += a[j] * v[at(b, j, h) + c];
          }
        }
    std::fill(dq.begin(), dq.end(), 0.0f);
    std::fill(dk.begin(), dk.end(), 0.0f);
    std::fill(dv.begin(), dv.end(), 0.0f);
    for (index_t b = 0; b < B; ++b)
      for (index_t t = 0; t < T; ++t)
        for (index_t h = 0; h < H; ++h) {
          float const* a = &att[((b * H + h) * T + t) * T];
          float const* g = &go[at(b, t, h)];
          float rowsum = 0;
          for (index_t j = 0; j <= t; ++j) {
            float s = 0;
            for (index_t c = 0; c < D; ++c) {
              s += g[c] * v[at(b, j, h) + c];
              dv[at(b, j, h) + c] += a[j] * g[c];
            }
            datt[j] = s;
            rowsum += a[j] * s;
          }
          for (index_t j = 0; j <= t; ++j) {
            float const ds = a[j] * (datt[j] - rowsum) * scale;
            for (index_t c = 0; c < D; ++c) {
              dq[at(b, t, h) + c] += ds * k[at(b, j, h) + c];
              dk[at(b, j, h) + c] += ds * q[at(b, t, h) + c];
            }
          }
        }
    benchmark::DoNotOptimize(dv.data());
  }
}

BENCHMARK(tessel_attention<4, 64, 12, 64>)->Unit(benchmark::kMillisecond);
BENCHMARK(naive_attention<4, 64, 12, 64>)->Unit(benchmark::kMillisecond);
BENCHMARK(tessel_attention<4, 256, 12, 64>)->Unit(benchmark::kMillisecond);
BENCHMARK(naive_attention<4, 256, 12, 64>)->Unit(benchmark::kMillisecond);
BENCHMARK(tessel_attention<4, 1024, 12, 64>)->Unit(benchmark::kMillisecond);
BENCHMARK(tessel_attention_budget)
    ->ArgsProduct({{256, 1024}, {16, 32, 64, 128, 256}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
