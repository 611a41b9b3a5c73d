// The top-k row body, the host twin of its CUDA launch: order keys against the ranking they stand
// for; both regimes (lanes ranking whole small scopes, lanes selecting one large scope together
// through ctx.reduce) against a sorted reference, with one lane (SequentialContext, as
// exec::for_each_row runs it on the host) and with several real lanes (ThreadBlock), on scores
// full of ties, NaN and signed zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <tessel/exec/rows.hpp>
#include <tessel/sparsity/detail/scope_offsets.hpp>
#include <tessel/sparsity/detail/select_bodies.hpp>
#include <tessel/sparsity/topk.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using test::ThreadBlock;

// The ranking top-k promises: higher first, NaN after every number, then the lower index.
template <class V>
bool ranks_before(V a, index_t ia, V b, index_t ib) {
  bool const na = std::isnan(static_cast<double>(a)), nb = std::isnan(static_cast<double>(b));
  if (na != nb) return nb;
  if (!na && a != b) return b < a;
  return ia < ib;
}

template <class V>
void expect_keys_order_as_values(std::vector<V> const& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < values.size(); ++j) {
      V const a = values[i], b = values[j];
      auto const ka = detail::order_key(a), kb = detail::order_key(b);
      // a ranks above b on its value alone when it ranks before b even from the higher index.
      bool const above = ranks_before(a, 1, b, 0), below = ranks_before(b, 1, a, 0);
      EXPECT_EQ(ka > kb, above) << +a << " vs " << +b;
      EXPECT_EQ(ka == kb, !above && !below) << +a << " vs " << +b;
    }
}

TEST(OrderKey, OrdersFloatsAsTopkRanksThem) {
  float const inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  expect_keys_order_as_values<float>({-inf, -3.5f, -1e-40f, -0.0f, 0.0f, 1e-40f, 2.0f, 2.0f,
                                      std::numeric_limits<float>::max(), inf, nan, -nan});
  double const dinf = std::numeric_limits<double>::infinity();
  expect_keys_order_as_values<double>({-dinf, -1e300, -0.0, 0.0, 5e-324, 1.0, dinf, std::nan("")});
  EXPECT_EQ(detail::order_key(nan), 0u);
  EXPECT_GT(detail::order_key(-inf), 0u);
  static_assert(std::is_same_v<decltype(detail::order_key(1.0)), std::uint64_t>);
}

TEST(OrderKey, OrdersIntegersAndBools) {
  expect_keys_order_as_values<int>(
      {std::numeric_limits<int>::min(), -7, -1, 0, 1, 7, std::numeric_limits<int>::max()});
  expect_keys_order_as_values<std::int64_t>(
      {std::numeric_limits<std::int64_t>::min(), -1, 0, std::numeric_limits<std::int64_t>::max()});
  expect_keys_order_as_values<std::uint8_t>({0, 1, 127, 128, 255});
  expect_keys_order_as_values<bool>({false, true});
}

// The reference: every scope (a row of `scores`, n members) keeps its k first members in the
// ranking order.
std::vector<bool> reference_topk(std::vector<float> const& scores, index_t n, index_t k) {
  std::vector<bool> keep(scores.size(), false);
  for (std::size_t s = 0; s * n < scores.size(); ++s) {
    std::vector<index_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), index_t{0});
    float const* v = scores.data() + s * n;
    std::sort(order.begin(), order.end(),
              [&](index_t a, index_t b) { return ranks_before(v[a], a, v[b], b); });
    for (index_t i = 0; i < k; ++i) keep[s * n + order[static_cast<std::size_t>(i)]] = true;
  }
  return keep;
}

// Scores drawn from a few values (many ties), with NaN and both zeros among them.
std::vector<float> tied_scores(index_t count, unsigned seed) {
  float const pool[] = {3.0f, -1.0f, 0.0f, -0.0f, 2.5f, std::nanf(""), 7.0f, -2.0f, 3.0f, 1e-30f};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = pool[pick(gen)];
  return v;
}

// Runs the top-k body over `scores` seen as (scopes, n) row-major, with `lanes` lanes per row
// (0: exec::for_each_row with exec::Serial, i.e. SequentialContext).
std::vector<bool> run_topk(std::vector<float> const& scores, index_t n, index_t k, int lanes) {
  index_t const scopes = static_cast<index_t>(scores.size()) / n;
  auto in = make_tensor(scores.data(), make_shape(scopes, n));
  auto mask = make_host_tensor<bool>(make_shape(scopes, n));
  auto scope = make_shape(index_t{1}, n);
  using Scores = detail::SourceScores<float, 2>;
  detail::TopkRows<Scores, 2> body{
      Scores{detail::scope_source<float const>(in.data(), in.layout(), scope)},
      detail::scope_source(mask.data(), mask.layout(), scope), scopes, n, k};
  if (lanes == 0) {
    exec::for_each_row(exec::Serial{}, body.rows(), body.row_work(), body);
  } else {
    ThreadBlock block(lanes);
    for (index_t row = 0; row < body.rows(); ++row)
      block.run([&](ThreadBlock::Context& ctx) {
        body(ctx, row);
        return 0;
      });
  }
  std::vector<bool> out;
  for (index_t i = 0; i < scopes * n; ++i) out.push_back(mask[i]);
  return out;
}

TEST(TopkRows, SmallScopesMatchTheReferenceWithAnyNumberOfLanes) {
  for (index_t n : {index_t{1}, index_t{4}, index_t{7}, index_t{32}}) {
    auto scores = tied_scores(600 * n, static_cast<unsigned>(n));  // 600 scopes: three rows
    for (index_t k : {index_t{0}, index_t{1}, n / 2, n}) {
      auto const want = reference_topk(scores, n, k);
      for (int lanes : {0, 1, 3, 8})
        EXPECT_EQ(run_topk(scores, n, k, lanes), want)
            << "n " << n << " k " << k << " lanes " << lanes;
    }
  }
}

TEST(TopkRows, LargeScopesMatchTheReferenceWithAnyNumberOfLanes) {
  for (index_t n : {index_t{33}, index_t{100}, index_t{1000}}) {
    auto scores = tied_scores(3 * n, static_cast<unsigned>(n));
    for (index_t k : {index_t{0}, index_t{1}, index_t{17}, n / 2, n - 1, n}) {
      auto const want = reference_topk(scores, n, k);
      for (int lanes : {0, 1, 4, 7})
        EXPECT_EQ(run_topk(scores, n, k, lanes), want)
            << "n " << n << " k " << k << " lanes " << lanes;
    }
  }
}

TEST(TopkRows, LargeScopesOfDistinctTiedAndNanScores) {
  index_t const n = 257;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> distinct(static_cast<std::size_t>(n));
  for (auto& x : distinct) x = normal(gen);
  std::vector<float> same(static_cast<std::size_t>(n), 1.5f);
  std::vector<float> nans(static_cast<std::size_t>(n), std::nanf(""));
  std::vector<float> extremes(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    extremes[static_cast<std::size_t>(i)] =
        i % 3 == 0 ? -std::numeric_limits<float>::infinity()
                   : (i % 3 == 1 ? std::numeric_limits<float>::infinity() : -0.0f);
  for (auto const& scores : {distinct, same, nans, extremes})
    for (index_t k : {index_t{1}, index_t{100}, n - 1}) {
      auto const want = reference_topk(scores, n, k);
      EXPECT_EQ(run_topk(scores, n, k, 0), want) << "k " << k;
      EXPECT_EQ(run_topk(scores, n, k, 5), want) << "k " << k;
    }
}

TEST(TopkRows, StaticScopeSizesUnrollTheSameSelection) {
  auto scores = tied_scores(4 * 1000, 9);
  auto in = make_tensor(scores.data(), make_shape(index_t{1000}, Int<4>{}));
  auto mask = make_host_tensor<bool>(make_shape(index_t{1000}, Int<4>{}));
  auto scope = make_shape(Int<1>{}, Int<4>{});
  using Scores = detail::SourceScores<float, 2>;
  detail::TopkRows<Scores, 2, Int<4>> body{
      Scores{detail::scope_source<float const>(in.data(), in.layout(), scope)},
      detail::scope_source(mask.data(), mask.layout(), scope), 1000, Int<4>{}, 2};
  exec::for_each_row(exec::Serial{}, body.rows(), body.row_work(), body);
  auto const want = reference_topk(scores, 4, 2);
  for (index_t i = 0; i < 4000; ++i) EXPECT_EQ(mask[i], want[static_cast<std::size_t>(i)]) << i;
}

TEST(TopkRows, ScopesOfBlocksReadThroughStridedViews) {
  // topk_mask over 2x3 scopes of a transposed grid: the members of a scope are not contiguous.
  auto scores = tied_scores(12 * 18, 4);
  auto grid = make_tensor(scores.data(), make_shape(index_t{12}, index_t{18}));
  auto t = transpose(grid);  // (18, 12)
  auto mask = topk_mask(t, make_shape(3, 2), 2, exec::Serial{});
  for (index_t s0 = 0; s0 < 6; ++s0)
    for (index_t s1 = 0; s1 < 6; ++s1) {
      std::vector<float> scope;
      for (index_t i = 0; i < 6; ++i) scope.push_back(t(s0 * 3 + i / 2, s1 * 2 + i % 2));
      auto const want = reference_topk(scope, 6, 2);
      for (index_t i = 0; i < 6; ++i)
        EXPECT_EQ(mask(s0 * 3 + i / 2, s1 * 2 + i % 2), want[static_cast<std::size_t>(i)]);
    }
}

TEST(TopkRows, EveryExecutorGivesTheSameMask) {
  auto scores = tied_scores(64 * 96, 5);
  auto grid = make_tensor(scores.data(), make_shape(index_t{64}, index_t{96}));
  auto serial = topk_mask(grid, make_shape(1, 48), 13, exec::Serial{});  // large scopes
  auto threads = topk_mask(grid, make_shape(1, 48), 13, exec::OpenMP{.threads = 2});
  auto small = topk_mask(grid, make_shape(2, 2), 3, exec::Serial{});
  auto small_threads = topk_mask(grid, make_shape(2, 2), 3, exec::Auto{.parallel_threshold = 0});
  for (index_t i = 0; i < 64 * 96; ++i) {
    EXPECT_EQ(serial[i], threads[i]);
    EXPECT_EQ(small[i], small_threads[i]);
  }
}

}  // namespace
