// Serial, OpenMP (several team sizes) and Auto give bit-identical results for elementwise passes,
// row reductions, reductions over every mode (fixed blocks), argmax and softmax.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using test::elements;
using test::random_tensor;

static_assert(exec::HostExecutor<exec::Serial> && exec::HostExecutor<exec::OpenMP> &&
              exec::HostExecutor<exec::Auto>);
static_assert(!exec::HostExecutor<int>);
static_assert(exec::Executor<exec::Auto const&> && exec::Executor<exec::Cuda> &&
              !exec::Executor<int>);

TEST(Executors, OpenMPIsAvailableInThisBuild) {
  EXPECT_TRUE(exec::openmp_available());
  EXPECT_GE(exec::max_threads(), 1);
}

// Evaluates dst = f() with every executor and expects identical bits.
template <class Make, class Assign>
void expect_same_everywhere(Make make_dst, Assign assign_with) {
  auto reference = make_dst();
  assign_with(reference, exec::Serial{});
  auto const want = elements(reference);
  auto check = [&](auto executor, char const* name) {
    auto dst = make_dst();
    assign_with(dst, executor);
    auto const got = elements(dst);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name << " " << i;
      } else {
        EXPECT_EQ(got[i], want[i]) << name << " " << i;
      }
    }
  };
  check(exec::OpenMP{.threads = 1}, "OpenMP 1");
  check(exec::OpenMP{.threads = 2}, "OpenMP 2");
  check(exec::OpenMP{.threads = 3}, "OpenMP 3");
  check(exec::OpenMP{}, "OpenMP default");
  check(exec::Auto{.parallel_threshold = 0}, "Auto, always parallel");
  check(exec::Auto{}, "Auto");
}

TEST(Executors, ElementwiseIsIdentical) {
  auto x = random_tensor<float>(make_shape(129, 257), -3, 3, 1);
  auto t = random_tensor<float>(make_shape(257, 129), -3, 3, 2);
  auto r = random_tensor<float>(make_shape(257), -3, 3, 3);
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(129, 257)); },
                         [&](auto& dst, auto executor) {
                           assign(dst, 0.5f * x + exp(transpose(t)) - tanh(r), executor);
                         });
  auto n = random_tensor<int>(make_shape(77, 31), -50, 50, 4);
  expect_same_everywhere([] { return make_host_tensor<int>(make_shape(77, 31)); },
                         [&](auto& dst, auto executor) { assign(dst, n * 3 - abs(n), executor); });
}

TEST(Executors, ReductionsAreIdentical) {
  auto x = random_tensor<float>(make_shape(67, 1000), -10, 10, 5);
  expect_same_everywhere(
      [] { return make_host_tensor<float>(make_shape(67)); },
      [&](auto& dst, auto executor) { assign(dst, logsumexp(x, mode<1>), executor); });
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(1000)); },
                         [&](auto& dst, auto executor) { assign(dst, sum(x, mode<0>), executor); });
  expect_same_everywhere(
      [] { return make_host_tensor<index_t>(make_shape(67)); },
      [&](auto& dst, auto executor) { assign(dst, argmax(x, mode<1>), executor); });
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(67, 1000)); },
                         [&](auto& dst, auto executor) { assign(dst, softmax(x), executor); });
  // Over every mode: fixed 2^15-element blocks, combined in order.
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(1)); },
                         [&](auto& dst, auto executor) { assign(dst, sum(x * x), executor); });
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(1)); },
                         [&](auto& dst, auto executor) { assign(dst, logsumexp(x), executor); });
  expect_same_everywhere([] { return make_host_tensor<index_t>(make_shape(1)); },
                         [&](auto& dst, auto executor) { assign(dst, argmax(x), executor); });
}

// ---- reductions over a strided mode, a tile of outputs at a time ----

// Per-column reductions of a row-major matrix whose packets would be assembled lane by lane (sums
// in double of float elements) or that have no packet form (argmax): the reduced mode is strided
// and the kept one contiguous, so the host executor reduces up to 1024 columns side by side
// (exec/host.hpp, reduce_tile; the sums a packet of columns at a time, exec/host/packet.hpp
// tile_sums). Each column's terms are still combined in row order, so the results are the plain
// loop's bits; the columns make two full tiles and a partial one, whose last packet is partial.
TEST(ColumnReductions, TilesCombineEachOutputsTermsInOrder) {
  index_t const rows = 300, cols = 2 * exec::detail::reduce_tile_width + 155;
  auto x = random_tensor<float>(make_shape(rows, cols), -3, 3, 11);
  std::vector<double> const xs = elements(x);
  auto at = [&](index_t i, index_t j) { return xs[static_cast<std::size_t>(i * cols + j)]; };
  std::vector<double> squares(cols), means(cols);
  std::vector<index_t> largest(cols);
  for (index_t j = 0; j < cols; ++j) {
    double s = 0, m = 0;
    index_t k = 0;
    for (index_t i = 0; i < rows; ++i) {
      s += at(i, j) * at(i, j);
      m += at(i, j);
      if (at(i, j) > at(k, j)) k = i;
    }
    squares[static_cast<std::size_t>(j)] = s;
    means[static_cast<std::size_t>(j)] = m / static_cast<double>(rows);
    largest[static_cast<std::size_t>(j)] = k;
  }
  for (int threads : {1, 2, 3}) {
    exec::OpenMP const executor{.threads = threads};
    auto got = make_host_tensor<double>(make_shape(cols));
    assign(got, sum(cast<double>(x) * cast<double>(x), mode<0>), executor);
    EXPECT_EQ(elements(got), squares) << threads << " threads";
    assign(got, mean(cast<double>(x), mode<0>), executor);
    EXPECT_EQ(elements(got), means) << threads << " threads";
    auto index = make_host_tensor<index_t>(make_shape(cols));
    assign(index, argmax(x, mode<0>), executor);
    for (index_t j = 0; j < cols; ++j)
      EXPECT_EQ(index[j], largest[static_cast<std::size_t>(j)]) << "column " << j;
  }
}

// Tiles stop at the end of the innermost kept mode (here 300 long, under two kept modes), write a
// destination with gaps, and combine a reduced range of several runs run by run, as the per-output
// loop does: the reduced mode (P, Q) skips a row after every Q, so its two loop modes do not merge
// and each output is sum over p of (sum over q). The terms are scaled by 0.1 so that they fill a
// double's mantissa and a different order of additions would change the bits.
TEST(ColumnReductions, TilesFollowTheRunsOfTheReducedModes) {
  index_t const p = 7, q = 13, a = 3, n = 300;
  auto storage = random_tensor<float>(make_shape(p, q + 1, a, n), -2, 2, 12);
  std::vector<double> const xs = elements(storage);
  auto at = [&](index_t pi, index_t qi, index_t ai, index_t ni) {
    return xs[static_cast<std::size_t>(((pi * (q + 1) + qi) * a + ai) * n + ni)];
  };
  // x(ai, ni, (pi, qi)) = storage(pi, qi, ai, ni) for qi < q.
  auto x = make_tensor(storage.data(),
                       make_layout(make_shape(a, n, make_shape(p, q)),
                                   make_stride(n, Int<1>{}, make_stride((q + 1) * a * n, a * n))));
  std::vector<double> want(static_cast<std::size_t>(a * n));
  for (index_t ai = 0; ai < a; ++ai)
    for (index_t ni = 0; ni < n; ++ni) {
      double s = 0;
      for (index_t pi = 0; pi < p; ++pi) {
        double run = 0;
        // Rounded before the addition, as the executor's products (no FMA under -march).
        for (index_t qi = 0; qi < q; ++qi) run += math::rounded_product(at(pi, qi, ai, ni), 0.1);
        s += run;
      }
      want[static_cast<std::size_t>(ai * n + ni)] = s;
    }
  for (int threads : {1, 2}) {
    // The destination has gaps: rows of n + 5 elements, of which the first n are written.
    auto storage_out = make_host_tensor<double>(make_shape(a, n + 5));
    auto out = make_tensor(storage_out.data(),
                           make_layout(make_shape(a, n), make_stride(n + 5, Int<1>{})));
    assign(out, sum(cast<double>(x) * 0.1, mode<2>), exec::OpenMP{.threads = threads});
    EXPECT_EQ(elements(out), want) << threads << " threads";
  }
}

// Row sums in double of float elements run in double packets (exec/host/packet.hpp widen_load):
// the values are the plain loop's to rounding, and the bits are the same for any thread count and
// wherever a row starts (rows of 1001 elements: each has a partial packet, and its packets sit at
// a different offset from the last row's).
TEST(MixedPrecisionReductions, RowSumsInDoublePacketsOfFloats) {
  index_t const rows = 37, cols = 1001;
  auto x = random_tensor<float>(make_shape(rows, cols), -3, 3, 13);
  std::vector<double> const xs = elements(x);
  std::vector<double> plain(rows);
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      plain[static_cast<std::size_t>(i)] +=
          xs[static_cast<std::size_t>(i * cols + j)] * xs[static_cast<std::size_t>(i * cols + j)];
  std::vector<double> first;
  for (int threads : {1, 2, 3}) {
    auto got = make_host_tensor<double>(make_shape(rows));
    assign(got, sum(cast<double>(x) * cast<double>(x), mode<1>), exec::OpenMP{.threads = threads});
    for (index_t i = 0; i < rows; ++i)
      EXPECT_NEAR(got[i], plain[static_cast<std::size_t>(i)],
                  1e-13 * plain[static_cast<std::size_t>(i)])
          << "row " << i;
    if (first.empty())
      first = elements(got);
    else
      EXPECT_EQ(elements(got), first) << threads << " threads";
  }
}

// ---- the host team (exec/host/team.hpp) ----

// Every index of [0, total) is visited exactly once, whatever the team size, many passes in a row
// (workers going to sleep and waking between them).
TEST(HostTeam, EveryRangeRunsExactlyOnce) {
  for (int threads : {2, 3, 4}) {
    for (index_t total : {1, 2, 7, 100, 4097}) {
      for (int pass = 0; pass < 20; ++pass) {
        std::vector<std::atomic<int>> seen(static_cast<std::size_t>(total));
        exec::detail::parallel_ranges(threads, total, [&](index_t begin, index_t end) {
          for (index_t i = begin; i < end; ++i) seen[static_cast<std::size_t>(i)].fetch_add(1);
        });
        for (index_t i = 0; i < total; ++i)
          ASSERT_EQ(seen[static_cast<std::size_t>(i)].load(), 1)
              << "index " << i << " of " << total << ", " << threads << " threads, pass " << pass;
      }
      if (threads == 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // workers sleep
    }
  }
}

// A pass started from a chunk of another runs serially on that thread, and completely.
TEST(HostTeam, NestedPassesRunSerially) {
  std::vector<std::atomic<int>> seen(64 * 64);
  exec::detail::parallel_ranges(2, 64, [&](index_t b0, index_t e0) {
    for (index_t r = b0; r < e0; ++r)
      exec::detail::parallel_ranges(2, 64, [&](index_t b1, index_t e1) {
        for (index_t c = b1; c < e1; ++c) seen[static_cast<std::size_t>(r * 64 + c)].fetch_add(1);
      });
  });
  for (auto const& s : seen) ASSERT_EQ(s.load(), 1);
}

// Passes from several threads at once: one gets the team, the others run serially; all complete.
TEST(HostTeam, ConcurrentCallersAllComplete) {
  std::vector<std::thread> callers;
  std::vector<std::int64_t> sums(4, 0);
  for (std::size_t t = 0; t < sums.size(); ++t)
    callers.emplace_back([&, t] {
      for (int pass = 0; pass < 50; ++pass) {
        std::atomic<std::int64_t> sum{0};
        exec::detail::parallel_ranges(2, 1000, [&](index_t begin, index_t end) {
          std::int64_t local = 0;
          for (index_t i = begin; i < end; ++i) local += i;
          sum.fetch_add(local);
        });
        sums[t] += sum.load();
      }
    });
  for (auto& c : callers) c.join();
  for (std::int64_t s : sums) EXPECT_EQ(s, 50 * (999 * 1000 / 2));
}

// An exception from a chunk reaches the caller after the running chunks finish; the team works
// afterwards.
TEST(HostTeam, ExceptionsReachTheCallerAndTheTeamRecovers) {
  std::atomic<int> ran{0};
  EXPECT_THROW(exec::detail::parallel_ranges(2, 100,
                                             [&](index_t begin, index_t) {
                                               ran.fetch_add(1);
                                               if (begin == 0) throw std::runtime_error("chunk 0");
                                             }),
               std::runtime_error);
  EXPECT_GE(ran.load(), 1);
  std::atomic<index_t> count{0};
  exec::detail::parallel_ranges(2, 100,
                                [&](index_t begin, index_t end) { count.fetch_add(end - begin); });
  EXPECT_EQ(count.load(), 100);
}

}  // namespace
