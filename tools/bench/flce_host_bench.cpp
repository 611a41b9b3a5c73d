// Host FLCE versus the unfused host baseline at BT=2048, H=512, V=32000, f32, mean reduction,
// computing the loss, grad_input and grad_weight:
//   unfused: logits = x W^T materialized (BT, V), a softmax cross-entropy pass that turns them
//            into d loss / d logits in place, then grad_input = g W and grad_weight = g^T x
//            (Eigen GEMMs, the same OpenMP row loop and expf as FLCE);
//   flce:    flce::forward with the host plan's chunking (make_host_plan: 256 rows here), and
//            with chunks of 128 and BT/8 = 256 rows.
// BM_FlceRowPass/0 and /1: the row pass of one chunk (256 rows of V logits, mean reduction, a
// z-loss) alone: 0 the fused row body per row (what the CUDA kernel runs, and the host for calls
// with label smoothing, entropy, argmax, softcap or soft targets), 1 the host's pass for plain
// rows (flce/host_rows.hpp). The logits are restored before each timed pass.
// BM_FlceHostShape/BT/H/V is flce::forward with the host plan at other shapes: BT 4096, H 2048,
// V 32000 (an LLM-like head), and any shape given by --flce_shape=BT,H,V (repeatable; the
// comparison with PyTorch, tools/bench/compare_pytorch.py, passes its shapes that way).
// Counters: extra_bytes (peak heap bytes a call allocates with the thread's scratch cache empty,
// counted by alloc_counter.cpp over an untimed call before the timed ones),
// extra_vs_logits (extra_bytes / (BT*V*4)), threads (OpenMP threads Eigen and the loops use).
// With --rss, the FLCE benchmarks also report rss_extra_bytes: the growth of the process's peak
// resident set over one call, after a warm-up call, with tessel's kept scratch and glibc's free
// memory returned to the system (malloc_trim) and the peak reset (/proc/self/clear_refs) before
// the call; -1 where the
// kernel does not allow the reset. Timings taken with --rss include that untimed bookkeeping's
// pauses: measure time without it.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <Eigen/Core>
#include <tessel/flce/chunk_loop.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/tensor/tensor.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "alloc_counter.hpp"

namespace {

using namespace tessel;

constexpr index_t bt = 2048, hidden = 512, vocab = 32000;

struct FlceShape {
  index_t bt, hidden, vocab;
  auto key() const { return std::tuple(bt, hidden, vocab); }
};

struct Data {
  FlceShape shape;
  std::vector<float> x, w, dx, dw;
  std::vector<std::int64_t> y;
  explicit Data(FlceShape s)
      : shape(s),
        x(s.bt * s.hidden),
        w(s.vocab * s.hidden),
        dx(s.bt * s.hidden),
        dw(s.vocab * s.hidden),
        y(s.bt) {
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& e : x) e = n(rng);
    for (auto& e : w) e = 0.05f * n(rng);
    std::uniform_int_distribution<std::int64_t> c(0, s.vocab - 1);
    for (auto& t : y) t = c(rng);
  }
};

// One Data per shape, made on first use and kept for the process.
Data& data(FlceShape s = {bt, hidden, vocab}) {
  static std::map<std::tuple<index_t, index_t, index_t>, std::unique_ptr<Data>> cache;
  auto& d = cache[s.key()];
  if (!d) d = std::make_unique<Data>(s);
  return *d;
}

int threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void report(benchmark::State& state, FlceShape s, std::int64_t extra) {
  state.counters["extra_bytes"] = static_cast<double>(extra);
  state.counters["extra_vs_logits"] = static_cast<double>(extra) / (double(s.bt) * s.vocab * 4);
  state.counters["threads"] = threads();
}

// --rss: resident-set counters (see the top of the file).
bool rss_enabled = false;

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"), -1 if absent.
std::int64_t proc_status_bytes(std::string_view field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':')
      return std::stoll(line.substr(field.size() + 1)) * 1024;  // the kernel writes kB
  return -1;
}

// Returns free heap memory to the system and makes the peak resident set the current one; false
// when the kernel refuses the reset.
bool reset_peak_rss() {
  // The scratch the last call left with this thread (exec/host/scratch_cache.hpp) is resident
  // before the call and would not count: hand it back so the call allocates its scratch again.
  exec::release_scratch_cache();
  malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// Peak resident-set growth of one call of f, taken outside the timed region.
template <class F>
std::int64_t rss_growth(benchmark::State& state, F const& f) {
  state.PauseTiming();
  bool const ok = reset_peak_rss();
  std::int64_t const base = proc_status_bytes("VmRSS");
  state.ResumeTiming();
  f();
  state.PauseTiming();
  std::int64_t const peak = proc_status_bytes("VmHWM");
  state.ResumeTiming();
  return ok && base >= 0 && peak >= 0 ? peak - base : -1;
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
  index_t const n = d.shape.bt, h = d.shape.hidden, v = d.shape.vocab;
  float loss = 0;
  flce::forward(make_tensor(static_cast<float const*>(d.x.data()), make_shape(n, h)),
                make_tensor(static_cast<float const*>(d.w.data()), make_shape(v, h)),
                make_tensor(static_cast<std::int64_t const*>(d.y.data()), make_shape(n)),
                {.chunk_size = chunk_size},
                {.loss = make_tensor(&loss, make_shape(1)),
                 .grad_input = make_tensor(d.dx.data(), make_shape(n, h)),
                 .grad_weight = make_tensor(d.dw.data(), make_shape(v, h))});
  return loss;
}

// The timed loop of the FLCE benchmarks: flce::forward with chunk_size rows (0: the host plan's).
// extra_bytes is counted over an untimed call with the thread's scratch cache emptied first, so
// that the scratch a call needs (and then keeps for the next call) counts; that call also warms
// the cache, so the timed calls are the steady state of a training loop.
void run_fused(benchmark::State& state, Data& d, index_t chunk_size) {
  std::int64_t rss = 0;
  exec::release_scratch_cache();
  std::int64_t const before = bench::allocated_bytes();
  bench::reset_peak();
  benchmark::DoNotOptimize(fused(d, chunk_size));
  std::int64_t const extra = bench::peak_allocated_bytes() - before;
  for (auto _ : state) {
    if (rss_enabled)
      rss = rss_growth(state, [&] { benchmark::DoNotOptimize(fused(d, chunk_size)); });
    else
      benchmark::DoNotOptimize(fused(d, chunk_size));
  }
  report(state, d.shape, extra);
  if (rss_enabled) state.counters["rss_extra_bytes"] = static_cast<double>(rss);
  state.counters["chunk_size"] = static_cast<double>(
      chunk_size > 0 ? chunk_size
                     : flce::make_host_plan(d.shape.bt, d.shape.hidden, d.shape.vocab).chunk_size);
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
  report(state, d.shape, extra);
}

// range(0): rows per chunk; 0 = the host plan's heuristic (256 here).
void BM_FlceHost(benchmark::State& state) {
  run_fused(state, data(), state.range(0));
}

// range(0), range(1), range(2): BT, H, V; the host plan's chunks.
void BM_FlceHostShape(benchmark::State& state) {
  run_fused(state, data({state.range(0), state.range(1), state.range(2)}), 0);
}

// range(0): 0 the fused row body, 1 the host's pass for plain rows.
void BM_FlceRowPass(benchmark::State& state) {
  constexpr index_t rows = 256;
  Data& d = data();
  std::vector<float> logits(static_cast<std::size_t>(rows * vocab)), work(logits.size());
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 2.0f);
  for (auto& e : logits) e = n(rng);
  std::vector<float> ce(bt), z(bt);
  flce::ChunkRows<flce::FlcePlan, float, float, float, std::int64_t> body;
  body.plan = flce::FlcePlan(flce::make_plan(bt, hidden, vocab, rows));
  body.logits = work.data();
  body.grad = work.data();
  body.target = d.y.data();
  body.scales = {1.0 / double(bt), 1.0 / double(bt)};
  body.k.lse_square_scale = 1e-4f;
  body.k.class_weight_sum = float(vocab);
  body.row_ce = ce.data();
  body.row_z = z.data();
  exec::OpenMP const executor{};
  for (auto _ : state) {
    state.PauseTiming();
    work = logits;
    state.ResumeTiming();
    if (state.range(0) == 0)
      exec::for_each_row(executor, rows, vocab, body);
    else
      flce::host_plain_rows(executor, body, work.data(), rows);
    benchmark::DoNotOptimize(work.data());
  }
  state.counters["threads"] = static_cast<double>(threads());
}

BENCHMARK(BM_UnfusedHost)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlceRowPass)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlceHost)->Arg(0)->Arg(128)->Arg(bt / 8)->Unit(benchmark::kMillisecond)->UseRealTime();

// "--flce_shape=BT,H,V" as a shape; false if the argument is not one.
bool parse_shape(std::string_view arg, FlceShape& s) {
  constexpr std::string_view flag = "--flce_shape=";
  if (!arg.starts_with(flag)) return false;
  std::string const text(arg.substr(flag.size()));
  long long b = 0, h = 0, v = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lld,%lld,%lld%c", &b, &h, &v, &tail) != 3 || b < 1 || h < 1 ||
      v < 1)
    return false;
  s = {b, h, v};
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<FlceShape> shapes{{4096, 2048, 32000}};
  for (int i = 1; i < argc; ++i) {
    std::string_view const arg = argv[i];
    FlceShape s{};
    if (arg == "--rss") {
      rss_enabled = true;
    } else if (parse_shape(arg, s)) {
      bool seen = false;
      for (FlceShape const& t : shapes) seen = seen || t.key() == s.key();
      if (!seen) shapes.push_back(s);
    } else {
      std::fprintf(stderr,
                   "bench_flce_host: unknown argument '%s' (besides Google Benchmark's flags it "
                   "takes --rss and --flce_shape=BT,H,V with three positive integers).\n",
                   argv[i]);
      return 1;
    }
  }
  for (FlceShape const& s : shapes)
    benchmark::RegisterBenchmark("BM_FlceHostShape", BM_FlceHostShape)
        ->Args({s.bt, s.hidden, s.vocab})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
