// DistributedShampoo's step on the Shampoo MLP benchmark (1024x4096 and 4096x1024,
// max_preconditioner_dim 1024: eight 1024x1024 blocks, Adam grafting), run under mpirun with any
// number of ranks: step time and bytes exchanged per step, against the single-process
// Shampoo<float> step measured in the same run (on rank 0 while the other ranks wait). "regular" is
// a step before preconditioning starts (factor updates and the grafted direction; no roots are
// computed or applied), "amortized" one that recomputes every inverse root; each rank computes
// those of its own blocks only.
//
//   mpirun --oversubscribe -np 3 build-bench/bin/tessel_bench_dshampoo
//
// Iteration counts are fixed (every rank must run the same number of collective steps); only rank
// 0 reports. Figures and commands are in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <random>
#include <span>
#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/shampoo/distributed.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

dist::MpiCommunicator* world = nullptr;

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

Plan mlp_plan(index_t ranks) {
  return make_plan(PlanOptions<index_t, index_t>{1024, 1, ranks, DType::f32},
                   std::vector<std::vector<index_t>>{{1024, 4096}, {4096, 1024}});
}

Options mlp_options(bool amortized) {
  Options o;
  o.grafting = adam_grafting();
  o.epsilon = 1e-8;
  o.precondition_frequency = amortized ? 1 : 100;
  o.start_preconditioning_step = amortized ? 1 : 1000000;
  return o;
}

// range(0): 1 amortized, 0 regular; range(1): the communication dtype (DType as an integer).
void BM_DistributedStep(benchmark::State& state) {
  bool const amortized = state.range(0) == 1;
  DistributedOptions d;
  d.communication_dtype = static_cast<DType>(state.range(1));
  Mlp mlp;
  DistributedShampoo<float> opt(*world, mlp_plan(world->size()), mlp_options(amortized), d);
  auto ps = mlp.params();
  auto gs = mlp.grads();
  opt.step(ps, gs);  // warm-up: allocations, first factors
  world->barrier();
  for (auto _ : state) {
    opt.step(ps, gs);
    benchmark::DoNotOptimize(mlp.w1.data());
  }
  state.counters["ranks"] = world->size();
  state.counters["exchanged_MiB"] = static_cast<double>(opt.exchanged_bytes()) / (1 << 20);
  state.counters["received_MiB"] =
      static_cast<double>(opt.exchanged_bytes() - opt.sent_bytes()) / (1 << 20);
  state.counters["owned_blocks"] = static_cast<double>(opt.owned_blocks().size());
  state.SetLabel(std::string(amortized ? "amortized" : "regular") + ", " +
                 std::string(dtype_name(d.communication_dtype)));
}
BENCHMARK(BM_DistributedStep)
    ->Args({0, static_cast<int>(DType::f32)})
    ->Args({0, static_cast<int>(DType::bf16)})
    ->Iterations(5)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DistributedStep)
    ->Args({1, static_cast<int>(DType::f32)})
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The baseline: Shampoo<float> on rank 0 alone; the other ranks wait at a barrier.
void BM_SingleProcessStep(benchmark::State& state) {
  bool const amortized = state.range(0) == 1;
  Mlp mlp;
  Shampoo<float> opt(mlp_plan(1), mlp_options(amortized));
  auto ps = mlp.params();
  auto gs = mlp.grads();
  if (world->rank() == 0) opt.step(ps, gs);
  for (auto _ : state) {
    if (world->rank() == 0) opt.step(ps, gs);
    benchmark::DoNotOptimize(mlp.w1.data());
  }
  world->barrier();
  state.SetLabel(amortized ? "amortized" : "regular");
}
BENCHMARK(BM_SingleProcessStep)
    ->Arg(0)
    ->Iterations(5)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SingleProcessStep)
    ->Arg(1)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Ranks other than 0 run every benchmark (they take part in the collectives) but print nothing.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(Context const&) override { return true; }
  void ReportRuns(std::vector<Run> const&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  dist::MpiSession session(&argc, &argv);
  dist::MpiCommunicator comm;
  world = &comm;
  benchmark::Initialize(&argc, argv);
  if (comm.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
