// exec::for_each_row on the host: every row visited once, with the row body's lanes combined by
// the context, and the same results from every executor.
#include <gtest/gtest.h>

#include <vector>

#include <tessel/exec/rows.hpp>

#include "exec/row_bodies.hpp"

namespace {

using namespace tessel;

TEST(ForEachRow, EveryRowOnceAndTheSameFromEveryExecutor) {
  index_t const rows = 1000, n = 37;
  std::vector<float> in(static_cast<std::size_t>(rows * n));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 11) - 4.5f;
  auto run = [&](auto executor) {
    std::vector<float> out(in.size(), -1.0f);
    std::vector<float> sums(static_cast<std::size_t>(rows), 0.0f);
    exec::for_each_row(executor, rows, n,
                       test::CenterRows<float>{in.data(), out.data(), sums.data(), n});
    return std::pair(out, sums);
  };
  auto const [out, sums] = run(exec::Serial{});
  for (index_t r = 0; r < rows; ++r) {
    float s = 0;
    for (index_t j = 0; j < n; ++j) s += in[static_cast<std::size_t>(r * n + j)];
    EXPECT_FLOAT_EQ(sums[static_cast<std::size_t>(r)], s);
    for (index_t j = 0; j < n; ++j)
      EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(r * n + j)],
                      in[static_cast<std::size_t>(r * n + j)] - s / static_cast<float>(n));
  }
  EXPECT_EQ(run(exec::OpenMP{.threads = 2}), std::pair(out, sums));
  EXPECT_EQ(run(exec::OpenMP{.threads = 3}), std::pair(out, sums));
  EXPECT_EQ(run(exec::Auto{.parallel_threshold = 0}), std::pair(out, sums));
}

TEST(ForEachRow, NoRowsNoCalls) {
  int calls = 0;
  struct Count {
    int* calls;
    void operator()(exec::SequentialContext const&, index_t) const { ++*calls; }
  };
  exec::for_each_row(exec::Serial{}, 0, 10, Count{&calls});
  EXPECT_EQ(calls, 0);
}

}  // namespace
