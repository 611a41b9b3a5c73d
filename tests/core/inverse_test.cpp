// right_inverse, left_inverse, max_common_layout and max_common_vector: their post-conditions over
// every small layout, exhaustive references for the maximal lengths, static and run-time
// arguments agreeing, and the sentences of the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <tessel/core/composition.hpp>
#include <tessel/core/inverse.hpp>
#include <tessel/core/print.hpp>

#include "small_layouts.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;

// Row-major compact: the identity, as one mode.
static_assert(std::is_same_v<decltype(right_inverse(make_layout(make_shape(Int<4>{}, Int<3>{})))),
                             Layout<tuple<Int<12>>, tuple<Int<1>>>>);
// Column-major (2, 3): offset k is element (k % 2, k / 2), 1-D index 3 * (k % 2) + k / 2.
static_assert(std::is_same_v<decltype(right_inverse(make_layout(make_shape(Int<2>{}, Int<3>{}),
                                                                make_stride(Int<1>{}, Int<2>{})))),
                             Layout<tuple<Int<3>, Int<2>>, tuple<Int<1>, Int<3>>>>);
// Offsets 0..3 then a jump: only the contiguous run is inverted.
static_assert(std::is_same_v<decltype(right_inverse(make_layout(make_shape(Int<4>{}, Int<2>{}),
                                                                make_stride(Int<1>{}, Int<8>{})))),
                             Layout<tuple<Int<4>>, tuple<Int<2>>>>);
// No stride-1 mode: only offset 0.
static_assert(std::is_same_v<decltype(right_inverse(make_layout(make_shape(Int<4>{}),
                                                                make_stride(Int<2>{})))),
                             Layout<tuple<Int<1>>, tuple<Int<0>>>>);
// The left inverse covers the holes: offsets 4..7 (the complement's) map past size(l).
static_assert(std::is_same_v<decltype(left_inverse(make_layout(make_shape(Int<4>{}, Int<2>{}),
                                                               make_stride(Int<1>{}, Int<8>{})))),
                             Layout<tuple<Int<2>, Int<8>>, tuple<Int<1>, Int<2>>>>);
static_assert(
    std::is_same_v<decltype(left_inverse(make_layout(make_shape(Int<4>{}), make_stride(Int<2>{})))),
                   Layout<tuple<Int<4>, Int<2>>, tuple<Int<1>, Int<4>>>>);
static_assert(left_inverse(make_layout(make_shape(Int<4>{}), make_stride(Int<2>{})))(6) == 3);
// The same value code for run-time arguments.
static_assert(right_inverse(make_layout(make_shape(index_t{2}, index_t{3}),
                                        make_stride(index_t{1}, index_t{2}))) ==
              right_inverse(make_layout(make_shape(Int<2>{}, Int<3>{}),
                                        make_stride(Int<1>{}, Int<2>{}))));
static_assert(left_inverse(make_layout(make_shape(index_t{4}, index_t{2}),
                                       make_stride(index_t{1}, index_t{8}))) ==
              left_inverse(make_layout(make_shape(Int<4>{}, Int<2>{}),
                                       make_stride(Int<1>{}, Int<8>{}))));

// A (4, 8) row-major matrix against a (4, 8) block of a row-major (4, 16) matrix: rows of 8.
constexpr auto rows = make_layout(make_shape(Int<4>{}, Int<8>{}));
constexpr auto block =
    make_layout(make_shape(Int<4>{}, Int<8>{}), make_stride(Int<16>{}, Int<1>{}));
static_assert(
    std::is_same_v<decltype(max_common_layout(rows, block)), Layout<tuple<Int<8>>, tuple<Int<1>>>>);
static_assert(std::is_same_v<decltype(max_common_vector(rows, block)), Int<8>>);
static_assert(std::is_same_v<decltype(max_common_vector(rows, rows)), Int<32>>);
// Column-major against column-major: the whole matrix, its indices in column order.
constexpr auto cols = make_layout(make_shape(Int<4>{}, Int<8>{}), make_stride(Int<1>{}, Int<4>{}));
static_assert(std::is_same_v<decltype(max_common_layout(cols, cols)),
                             Layout<tuple<Int<8>, Int<4>>, tuple<Int<1>, Int<8>>>>);
// A transpose shares nothing but element 0.
static_assert(std::is_same_v<decltype(max_common_vector(rows, cols)), Int<1>>);
// Shapes that differ but refine: (32):(1) against (4, 8) blocks of rows of 16.
static_assert(max_common_vector(make_layout(make_shape(Int<32>{})), block) == 8);
static_assert(max_common_vector(make_layout(make_shape(index_t{4}, index_t{8})), block) == 8);
static_assert(max_common_layout(make_layout(make_shape(index_t{4}, index_t{8}),
                                            make_stride(index_t{1}, index_t{4})),
                                cols) == max_common_layout(cols, cols));

using test::error_of;
using test_support::injective;
using test_support::text;

// The largest n such that every offset 0 .. n-1 is reached.
index_t reached_run(test_support::SmallLayout const& small) {
  auto l = small.layout();
  std::vector<bool> hit(static_cast<std::size_t>(size(l)) + 1, false);
  for (index_t i = 0; i < size(l); ++i)
    if (l(i) < static_cast<index_t>(hit.size())) hit[static_cast<std::size_t>(l(i))] = true;
  index_t n = 0;
  while (n < static_cast<index_t>(hit.size()) && hit[static_cast<std::size_t>(n)]) ++n;
  return n;
}

TEST(RightInverse, UndoesTheLayoutOnItsDomainAndIsMaximalForInjectiveLayouts) {
  std::size_t longer_than_one = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    auto l = small.layout();
    auto r = right_inverse(l);
    auto c = composition(l, r);
    ASSERT_EQ(size(c), size(r));
    for (index_t k = 0; k < size(r); ++k) {
      ASSERT_TRUE(r(k) >= 0 && r(k) < size(l)) << text(small) << " " << to_string(r) << " at " << k;
      ASSERT_EQ(l(r(k)), k) << text(small) << " " << to_string(r) << " at " << k;
      ASSERT_EQ(c(k), k) << text(small) << " o " << to_string(r) << " = " << to_string(c);
    }
    // For an injective layout no offset run is longer; otherwise the run may be (a layout is not
    // always there to invert it, e.g. (2,2):(1,1) reaches 0, 1, 2).
    if (injective(small)) {
      ASSERT_EQ(size(r), reached_run(small)) << text(small) << " " << to_string(r);
    } else {
      ASSERT_LE(size(r), reached_run(small)) << text(small) << " " << to_string(r);
    }
    longer_than_one += size(r) > 1 ? 1 : 0;
  }
  EXPECT_GT(longer_than_one, 1000U);
}

TEST(RightInverse, OfAnEmptyLayoutIsEmpty) {
  for (auto const& small : test_support::small_layouts(true)) {
    if (size(small.layout()) != 0) continue;
    EXPECT_EQ(size(right_inverse(small.layout())), 0) << text(small);
  }
}

TEST(LeftInverse, UndoesEveryInjectiveLayoutWithNestingStrides) {
  std::size_t inverted = 0;
  std::size_t injective_layouts = 0;
  for (auto const& small : test_support::small_layouts(true)) {
    auto l = small.layout();
    if (!injective(small)) {
      EXPECT_THROW((void)left_inverse(l), Error) << text(small);
      continue;
    }
    ++injective_layouts;
    try {
      auto g = left_inverse(l);
      ++inverted;
      ASSERT_GE(size(g), cosize(l)) << text(small) << " " << to_string(g);
      for (index_t i = 0; i < size(l); ++i)
        ASSERT_EQ(g(l(i)), i) << text(small) << " " << to_string(g) << " at " << i;
    } catch (Error const&) {
      // Injective but refused: the strides do not nest, so neither is there a complement.
      EXPECT_THROW((void)complement(l), Error) << text(small);
    }
  }
  EXPECT_GT(inverted, injective_layouts * 3 / 4) << inverted << " of " << injective_layouts;
}

// The largest n with, for every k < n, an index i that a and b both map to k (the unique one
// where b is injective).
index_t common_run(test_support::SmallLayout const& a, test_support::SmallLayout const& b) {
  auto la = a.layout();
  auto lb = b.layout();
  index_t n = 0;
  for (;; ++n) {
    bool found = false;
    for (index_t i = 0; i < size(lb) && !found; ++i) found = lb(i) == n && la(i) == n;
    if (!found) return n;
  }
}

TEST(MaxCommon, AgreesWithAnExhaustiveSearchOverLayoutsOfOneShape) {
  auto layouts = test_support::small_layouts(false);
  std::size_t pairs = 0;
  std::size_t vectorized = 0;
  for (std::size_t ia = 0; ia < layouts.size(); ++ia) {
    auto const& a = layouts[ia];
    // Rank 3 has 42875 layouts: pair each with a sample of the others of its shape.
    std::size_t step = a.shape.size() < 3 ? 1 : 11;
    for (std::size_t ib = ia % step; ib < layouts.size(); ib += step) {
      auto const& b = layouts[ib];
      if (b.shape != a.shape) continue;
      ++pairs;
      auto la = a.layout();
      auto lb = b.layout();
      auto m = max_common_layout(la, lb);
      index_t v = max_common_vector(la, lb);
      ASSERT_EQ(size(m), v) << text(a) << " " << text(b);
      for (index_t k = 0; k < v; ++k) {
        ASSERT_EQ(la(m(k)), k) << text(a) << " " << text(b) << " " << to_string(m) << " at " << k;
        ASSERT_EQ(lb(m(k)), k) << text(a) << " " << text(b) << " " << to_string(m) << " at " << k;
      }
      index_t reference = common_run(a, b);
      if (injective(a) || injective(b)) {
        ASSERT_EQ(v, reference) << text(a) << " " << text(b) << " " << to_string(m);
      } else {
        ASSERT_LE(v, reference) << text(a) << " " << text(b) << " " << to_string(m);
      }
      vectorized += v > 1 ? 1 : 0;
    }
  }
  EXPECT_GT(pairs, 100000U);
  // Random strides rarely agree; still, a function that always answered 1 would pass the loop.
  EXPECT_GT(vectorized, pairs / 40) << vectorized << " of " << pairs;
}

TEST(MaxCommon, LayoutsOfDifferentShapesAreComparedOnTheirCommonIndices) {
  // A (2, 6) block of rows of 12 against flat and (3, 4) compact layouts of 12 elements.
  auto block = make_layout(make_shape(2, 6), make_stride(12, 1));
  EXPECT_EQ(max_common_vector(make_layout(make_shape(12)), block), 6);
  EXPECT_EQ(max_common_vector(make_layout(make_shape(3, 4)), block), 6);
  EXPECT_EQ(max_common_vector(make_layout(make_shape(4, 3)), block), 6);
  // No common refinement past the innermost 2: (3, 2) against (2, 3), both compact.
  EXPECT_EQ(max_common_vector(make_layout(make_shape(3, 2), make_stride(1, 3)),
                              make_layout(make_shape(2, 3), make_stride(1, 2))),
            1);
  // Of different sizes: the common index range decides.
  EXPECT_EQ(max_common_vector(make_layout(make_shape(4)), make_layout(make_shape(8))), 4);
}

TEST(MaxCommon, EmptyLayoutsGiveOne) {
  EXPECT_EQ(max_common_vector(make_layout(make_shape(0, 4)), make_layout(make_shape(0, 4))), 1);
  static_assert(std::is_same_v<decltype(max_common_layout(make_layout(make_shape(Int<0>{})),
                                                          make_layout(make_shape(Int<4>{})))),
                               Layout<tuple<Int<1>>, tuple<Int<0>>>>);
}

template <class L>
void expect_static_and_runtime_agree(L const& l) {
  auto d = make_layout(leaf_values(l.shape()), leaf_values(l.stride()));
  static_assert(is_static_v<std::remove_cvref_t<decltype(right_inverse(l).shape())>>);
  EXPECT_EQ(right_inverse(l), right_inverse(d)) << to_string(l);
  EXPECT_EQ(left_inverse(l), left_inverse(d)) << to_string(l);
  auto compact = make_layout(make_shape(Int<decltype(size(l))::value>{}));
  EXPECT_EQ(max_common_layout(l, compact), max_common_layout(d, compact)) << to_string(l);
  EXPECT_EQ(max_common_vector(compact, l), max_common_vector(compact, d)) << to_string(l);
  EXPECT_EQ(max_common_layout(l, l), max_common_layout(d, d)) << to_string(l);
}

TEST(Inverse, StaticAndRunTimeAgree) {
  expect_static_and_runtime_agree(make_layout(make_shape(Int<4>{})));
  expect_static_and_runtime_agree(make_layout(make_shape(Int<3>{}), make_stride(Int<2>{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<1>{}, Int<2>{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<2>{}, Int<4>{}), make_stride(Int<12>{}, Int<3>{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<2>{}, make_shape(Int<2>{}, Int<2>{})),
                  make_stride(Int<1>{}, make_stride(Int<8>{}, Int<2>{}))));
  expect_static_and_runtime_agree(make_layout(make_shape(Int<4>{}, Int<2>{}, Int<3>{}),
                                              make_stride(Int<1>{}, Int<12>{}, Int<4>{})));
}

std::string left_inverse_error(auto const& l) {
  return error_of([&] { (void)left_inverse(l); });
}

TEST(LeftInverse, RefusalsNameTheLayoutAndTheValues) {
  EXPECT_EQ(left_inverse_error(make_layout(make_shape(3, 2), make_stride(1, 0))),
            "cannot left-invert layout (3,2):(1,0): it is not injective: mode 1 has extent 2 and "
            "stride 0.");
  EXPECT_EQ(left_inverse_error(make_layout(make_shape(2, 2), make_stride(4, 6))),
            "cannot left-invert layout (2,2):(4,6): mode 1 has stride 6, which is not a multiple "
            "of 8, the span of the modes before it in stride order; the layout is not injective "
            "or its strides do not nest.");
}

}  // namespace
