// Sparsity on the host at a typical size: a 4096x4096 f32 weight (an (out, in) projection).
//   NMMask          nm_mask(w, 2:4) along the rows, static and run-time pattern
//   ApplyKeepMask   apply_keep_mask(w, keep) with that element-level mask
//   BlockScores     block_scores(w, (64, 64)) as L2 norms and L1 norms
//   TopkScopes      topk_mask over those 64x64 block scores, 16 of every (1, 64) scope
//   ApplyMask       apply_mask(w, grid, (64, 64)) with a random half of the blocks masked
//   Satisfies       satisfies(w, 2:4) on a 2:4-pruned weight (the whole check runs)
// Every call uses its default executor, so this source builds against the pre-executor headers
// too (tessel is header-only), e.g.
//   g++ -O3 -DNDEBUG -fopenmp -std=gnu++20 -I<checkout>/include -isystem /usr/include/eigen3 \
//       tools/bench/sparsity_bench.cpp -o sparsity_bench -lbenchmark -lpthread
// Run with --benchmark_repetitions=5 --benchmark_report_aggregates_only=true; compare medians of
// runs interleaved with the other build (docs/benchmarks.md, "Sparsity").
#include <benchmark/benchmark.h>

#include <random>

#include <tessel/tessel.hpp>

namespace {

using namespace tessel;

constexpr index_t n = 4096;
constexpr NMPattern<Int<2>, Int<4>> p24{};

auto random_weight(unsigned seed) {
  auto w = make_host_tensor<float>(make_shape(n, n));
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (index_t i = 0; i < n * n; ++i) w[i] = normal(gen);
  return w;
}

auto& weight() {
  static auto w = random_weight(1);
  return w;
}

void BM_NMMask_static(benchmark::State& state) {
  auto const& w = weight();
  for (auto _ : state) {
    auto keep = nm_mask(w, p24);
    benchmark::DoNotOptimize(keep.data());
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

void BM_NMMask_runtime(benchmark::State& state) {
  auto const& w = weight();
  for (auto _ : state) {
    auto keep = nm_mask(w, NMPattern{2, 4});
    benchmark::DoNotOptimize(keep.data());
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

void BM_ApplyKeepMask(benchmark::State& state) {
  auto w = random_weight(2);
  auto keep = nm_mask(w, p24);
  for (auto _ : state) {
    apply_keep_mask(w, keep);  // idempotent: every iteration does the same work
    benchmark::DoNotOptimize(w.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

void BM_BlockScores_L2(benchmark::State& state) {
  auto const& w = weight();
  for (auto _ : state) {
    auto s = block_scores(w, make_shape(64, 64));
    benchmark::DoNotOptimize(s.data());
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

void BM_BlockScores_L1(benchmark::State& state) {
  auto const& w = weight();
  for (auto _ : state) {
    auto s = block_scores(w, make_shape(64, 64), L1Norm{});
    benchmark::DoNotOptimize(s.data());
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

void BM_TopkScopes(benchmark::State& state) {
  auto const scores = block_scores(weight(), make_shape(64, 64));
  for (auto _ : state) {
    auto keep = topk_mask(scores, make_shape(1, 64), 16);
    benchmark::DoNotOptimize(keep.data());
  }
  state.SetItemsProcessed(state.iterations() * 64 * 64);
}

void BM_ApplyMask(benchmark::State& state) {
  auto w = random_weight(3);
  auto grid = make_host_tensor<bool>(make_shape(64, 64));
  std::mt19937 gen(4);
  for (index_t i = 0; i < 64 * 64; ++i) grid[i] = (gen() & 1) != 0;
  for (auto _ : state) {
    apply_mask(w, grid, make_shape(64, 64));
    benchmark::DoNotOptimize(w.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

void BM_Satisfies(benchmark::State& state) {
  auto w = random_weight(5);
  (void)apply_nm(w, p24);
  for (auto _ : state) {
    bool ok = satisfies(w, p24);
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

}  // namespace

BENCHMARK(BM_NMMask_static)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NMMask_runtime)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ApplyKeepMask)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BlockScores_L2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BlockScores_L1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TopkScopes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ApplyMask)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Satisfies)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
