// The N:M checker's row body, the host twin of its CUDA launch: per row, the first group with too
// many nonzero blocks and its count, against a direct count; with one lane and with several real
// lanes (ThreadBlock), for small groups (a lane per group) and large ones (lanes share a group and
// add their counts through ctx.reduce), over elements and over blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <tessel/exec/rows.hpp>
#include <tessel/sparsity/detail/count_bodies.hpp>
#include <tessel/sparsity/detail/scope_offsets.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using test::ThreadBlock;

struct Reports {
  std::vector<index_t> first;
  std::vector<index_t> nonzeros;
  bool operator==(Reports const&) const = default;
};

// A (rows, cols) matrix cut into blocks (1, b), grouped m blocks along a row; at most `allowed`
// nonzero blocks per group pass. lanes 0: exec::for_each_row on exec::Serial.
Reports run_count(std::vector<float> const& v, index_t rows, index_t cols, index_t b, index_t m,
                  index_t allowed, int lanes) {
  auto t = make_tensor(v.data(), make_shape(rows, cols));
  auto block = make_shape(index_t{1}, b);
  auto group = make_shape(index_t{1}, m);
  index_t const groups = rows * cols / (b * m);
  detail::NMCountRows<float, 2> body{
      detail::block_group_source<float const>(t.data(), t.layout(), block, group),
      nullptr,
      nullptr,
      groups,
      m,
      b,
      allowed};
  Reports r{std::vector<index_t>(static_cast<std::size_t>(body.rows()), -1),
            std::vector<index_t>(static_cast<std::size_t>(body.rows()), -1)};
  body.first = r.first.data();
  body.nonzeros = r.nonzeros.data();
  if (lanes == 0) {
    exec::for_each_row(exec::Serial{}, body.rows(), body.row_work(), body);
  } else {
    ThreadBlock tb(lanes);
    for (index_t row = 0; row < body.rows(); ++row)
      tb.run([&](ThreadBlock::Context& ctx) {
        body(ctx, row);
        return 0;
      });
  }
  return r;
}

Reports reference(std::vector<float> const& v, index_t rows, index_t cols, index_t b, index_t m,
                  index_t allowed, index_t per_row) {
  index_t const groups_per_row = cols / (b * m);
  index_t const groups = rows * groups_per_row;
  index_t const report_rows = (groups + per_row - 1) / per_row;
  Reports r{std::vector<index_t>(static_cast<std::size_t>(report_rows), groups),
            std::vector<index_t>(static_cast<std::size_t>(report_rows), 0)};
  for (index_t g = 0; g < groups; ++g) {
    index_t const row = g / groups_per_row, first_col = g % groups_per_row * b * m;
    index_t count = 0;
    for (index_t j = 0; j < m; ++j) {
      bool any = false;
      for (index_t e = 0; e < b; ++e)
        any = any || !(v[static_cast<std::size_t>(row * cols + first_col + j * b + e)] == 0.0f);
      count += any ? 1 : 0;
    }
    auto& first = r.first[static_cast<std::size_t>(g / per_row)];
    if (count > allowed && g < first) {
      first = g;
      r.nonzeros[static_cast<std::size_t>(g / per_row)] = count;
    }
  }
  return r;
}

// Mostly zeros, some NaN and -0.0 (NaN counts as nonzero, -0.0 does not).
std::vector<float> sparse_values(index_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    int const p = pick(gen);
    x = p < 6 ? 0.0f : (p == 6 ? -0.0f : (p == 7 ? std::nanf("") : 1.5f));
  }
  return v;
}

TEST(NMCountRows, SmallGroupsMatchADirectCountWithAnyNumberOfLanes) {
  index_t const rows = 40, cols = 96;
  auto v = sparse_values(rows * cols, 1);
  for (index_t b : {index_t{1}, index_t{3}})
    for (index_t m : {index_t{4}, index_t{8}}) {
      auto const want = reference(v, rows, cols, b, m, 1, detail::small_scopes_per_row);
      for (int lanes : {0, 1, 4, 6}) EXPECT_EQ(run_count(v, rows, cols, b, m, 1, lanes), want);
    }
}

TEST(NMCountRows, LargeGroupsMatchADirectCountWithAnyNumberOfLanes) {
  index_t const rows = 6, cols = 240;
  auto v = sparse_values(rows * cols, 2);
  for (index_t b : {index_t{1}, index_t{2}})
    for (index_t allowed : {index_t{10}, index_t{40}}) {
      index_t const m = 120 / b;  // more than small_scope blocks per group
      auto const want = reference(v, rows, cols, b, m, allowed, 1);
      for (int lanes : {0, 1, 5}) EXPECT_EQ(run_count(v, rows, cols, b, m, allowed, lanes), want);
    }
}

}  // namespace
