// complement: the concatenation (complement, layout) is a bijection that covers the bound, over
// every small layout; static and run-time arguments agree; refusals name the layout and values.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <tessel/core/complement.hpp>
#include <tessel/core/print.hpp>

#include "small_layouts.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;

// The holes of (2):(4) in [0, 16): three within each period of 4, then the periods of 8.
static_assert(
    std::is_same_v<decltype(complement(make_layout(make_shape(Int<2>{}), make_stride(Int<4>{})),
                                       Int<16>{})),
                   Layout<tuple<Int<2>, Int<4>>, tuple<Int<8>, Int<1>>>>);
// A column of a row-major (4, 8) matrix: its complement is the other columns, (8):(1).
static_assert(
    std::is_same_v<decltype(complement(make_layout(make_shape(Int<4>{}), make_stride(Int<8>{})),
                                       Int<32>{})),
                   Layout<tuple<Int<8>>, tuple<Int<1>>>>);
// Leaves in any order and hierarchical modes: the complement is sorted, outer (largest stride)
// first.
static_assert(std::is_same_v<decltype(complement(make_layout(make_shape(Int<4>{}, Int<2>{}),
                                                             make_stride(Int<1>{}, Int<8>{})),
                                                 Int<32>{})),
                             Layout<tuple<Int<2>, Int<2>>, tuple<Int<16>, Int<4>>>>);
static_assert(
    std::is_same_v<decltype(complement(make_layout(make_shape(make_shape(Int<2>{}, Int<2>{})),
                                                   make_stride(make_stride(Int<1>{}, Int<8>{}))),
                                       Int<32>{})),
                   Layout<tuple<Int<2>, Int<4>>, tuple<Int<16>, Int<2>>>>);
// A compact layout has no holes in its own span: (1):(0).
static_assert(std::is_same_v<decltype(complement(make_layout(make_shape(Int<4>{}, Int<3>{})))),
                             Layout<tuple<Int<1>>, tuple<Int<0>>>>);
// A bound that is not a multiple of the span: the rest mode rounds up, (2):(4) covers [0, 5).
static_assert(
    std::is_same_v<decltype(complement(make_layout(make_shape(Int<4>{}), make_stride(Int<1>{})),
                                       Int<5>{})),
                   Layout<tuple<Int<2>>, tuple<Int<4>>>>);
// An empty layout reaches nothing.
static_assert(
    std::is_same_v<decltype(complement(make_layout(make_shape(Int<0>{}, Int<3>{})), Int<6>{})),
                   Layout<tuple<Int<6>>, tuple<Int<1>>>>);
// Run-time arguments: the same answer from the same constexpr code, as a run-time-rank layout.
constexpr auto runtime_complement =
    complement(make_layout(make_shape(index_t{4}, index_t{2}), make_stride(index_t{1}, index_t{8})),
               index_t{32});
static_assert(DynRank<std::remove_cvref_t<decltype(runtime_complement.shape())>>);
static_assert(runtime_complement == complement(make_layout(make_shape(Int<4>{}, Int<2>{}),
                                                           make_stride(Int<1>{}, Int<8>{})),
                                               Int<32>{}));
// Mixed (a static layout, a run-time bound) runs the run-time path.
static_assert(complement(make_layout(make_shape(Int<2>{}), make_stride(Int<4>{})), index_t{16}) ==
              make_layout(make_shape(Int<2>{}, Int<4>{}), make_stride(Int<8>{}, Int<1>{})));

using test::error_of;
using test_support::injective;
using test_support::text;

// The largest extent * stride over the leaves of extent > 1 (1 if none).
index_t widest(test_support::SmallLayout const& small) {
  index_t w = 1;
  for (std::size_t k = 0; k < small.shape.size(); ++k)
    if (small.shape[k] > 1) w = std::max(w, small.shape[k] * small.stride[k]);
  return w;
}

TEST(Complement, ConcatenationIsABijectionCoveringTheBound) {
  std::size_t complemented = 0;
  std::size_t injective_attempts = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    auto l = small.layout();
    bool inj = injective(small);
    index_t w = widest(small);
    index_t cs = cosize(l);
    for (index_t bound : {cs, cs + 1, 2 * w, 3 * w + 1}) {
      if (bound < cs) continue;
      injective_attempts += inj ? 1 : 0;
      try {
        auto c = complement(l, bound);
        ASSERT_TRUE(inj) << text(small) << " is not injective, yet it has complement "
                         << to_string(c);
        ++complemented;
        index_t total = size(c) * size(l);
        // Covers the bound, by less than one period w too many; exactly when w divides it.
        ASSERT_GE(total, bound) << text(small) << " in " << bound;
        ASSERT_LT(total, bound + w) << text(small) << " in " << bound;
        ASSERT_EQ(total % w, 0) << text(small) << " in " << bound;
        if (bound % w == 0) {
          ASSERT_EQ(total, bound) << text(small) << " in " << bound;
        }
        // (c, l)(j * size(l) + i) == c(j) + l(i): every offset of [0, total) exactly once.
        std::vector<int> hits(static_cast<std::size_t>(total), 0);
        for (index_t j = 0; j < size(c); ++j)
          for (index_t i = 0; i < size(l); ++i) {
            index_t o = c(j) + l(i);
            ASSERT_TRUE(o >= 0 && o < total) << text(small) << " in " << bound << ": " << o;
            ++hits[static_cast<std::size_t>(o)];
          }
        for (index_t o = 0; o < total; ++o)
          ASSERT_EQ(hits[static_cast<std::size_t>(o)], 1)
              << text(small) << " in " << bound << ", offset " << o;
        // Sorted, outer first: strictly decreasing strides, no extent-1 mode unless (1):(0).
        for (index_t k = 1; k < rank(c); ++k) {
          ASSERT_GT(c.stride()[k - 1], c.stride()[k]) << to_string(c);
          ASSERT_GT(c.shape()[k], 1) << to_string(c);
        }
      } catch (Error const&) {
        // Refused: either not injective, or the sorted strides do not nest (checked below).
        if (!inj) continue;
        std::vector<std::size_t> order;
        for (std::size_t k = 0; k < small.shape.size(); ++k)
          if (small.shape[k] > 1) order.push_back(k);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
          return small.stride[x] < small.stride[y];
        });
        bool nests = true;
        index_t span = 1;
        for (std::size_t k : order) {
          nests = nests && small.stride[k] % span == 0;
          span = small.shape[k] * small.stride[k];
        }
        ASSERT_FALSE(nests) << text(small) << " in " << bound << " was refused";
      }
    }
  }
  // Most injective small layouts (about 70%) have a complement; an implementation that always
  // refused would pass the loop.
  EXPECT_GT(complemented, injective_attempts / 2) << complemented << " of " << injective_attempts;
}

TEST(Complement, EveryNonInjectiveLayoutIsRefused) {
  std::size_t refused = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    if (injective(small)) continue;
    EXPECT_THROW((void)complement(small.layout()), Error) << text(small);
    ++refused;
  }
  EXPECT_GT(refused, 1000U);
}

TEST(Complement, AnEmptyLayoutLeavesEveryOffset) {
  for (auto const& small : test_support::small_layouts(true)) {
    if (size(small.layout()) != 0) continue;
    auto c = complement(small.layout(), index_t{6});
    EXPECT_EQ(c, make_layout(make_shape(index_t{6}), make_stride(index_t{1}))) << text(small);
    EXPECT_EQ(complement(small.layout()), make_layout(make_shape(0), make_stride(1)))
        << text(small);
  }
}

TEST(Complement, TheOneArgumentFormIsBoundedByTheCosize) {
  for (auto const& small : test_support::small_layouts(false)) {
    auto l = small.layout();
    try {
      EXPECT_EQ(complement(l), complement(l, cosize(l))) << text(small);
    } catch (Error const&) {
      EXPECT_THROW((void)complement(l, cosize(l)), Error) << text(small);
    }
  }
}

template <class L>
void expect_static_and_runtime_agree(L const& l) {
  auto dynamic = make_layout(leaf_values(l.shape()), leaf_values(l.stride()));
  auto s = complement(l, Int<48>{});
  static_assert(is_static_v<std::remove_cvref_t<decltype(s.shape())>>);
  EXPECT_EQ(s, complement(dynamic, index_t{48})) << to_string(l);
  EXPECT_EQ(complement(l), complement(dynamic)) << to_string(l);
}

TEST(Complement, StaticAndRunTimeAgree) {
  expect_static_and_runtime_agree(make_layout(make_shape(Int<4>{})));
  expect_static_and_runtime_agree(make_layout(make_shape(Int<3>{}), make_stride(Int<2>{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<1>{}, Int<2>{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<2>{}, Int<2>{}), make_stride(Int<12>{}, Int<3>{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<2>{}, make_shape(Int<2>{}, Int<2>{})),
                  make_stride(Int<1>{}, make_stride(Int<16>{}, Int<4>{}))));
  expect_static_and_runtime_agree(
      make_layout(make_shape(Int<1>{}, Int<4>{}), make_stride(Int<0>{}, Int<4>{})));
}

std::string complement_error(auto const& l, index_t bound) {
  return error_of([&] { (void)complement(l, bound); });
}

TEST(Complement, RefusalsNameTheLayoutAndTheValues) {
  EXPECT_EQ(complement_error(make_layout(make_shape(4, 2), make_stride(0, 1)), 8),
            "cannot complement layout (4,2):(0,1): it is not injective: mode 0 has extent 4 and "
            "stride 0.");
  EXPECT_EQ(complement_error(make_layout(make_shape(2, 2), make_stride(1, 1)), 4),
            "cannot complement layout (2,2):(1,1): mode 0 has stride 1, which is not a multiple "
            "of 2, the span of the modes before it in stride order; the layout is not injective "
            "or its strides do not nest.");
  // Injective, but the gap between offsets 4 and 6 is no layout.
  EXPECT_EQ(complement_error(make_layout(make_shape(2, 2), make_stride(4, 6)), 16),
            "cannot complement layout (2,2):(4,6): mode 1 has stride 6, which is not a multiple "
            "of 8, the span of the modes before it in stride order; the layout is not injective "
            "or its strides do not nest.");
  // Static parts print as plain numbers, as in every error sentence.
  EXPECT_EQ(complement_error(make_layout(make_shape(Int<4>{}), make_stride(Int<2>{})), 5),
            "cannot complement layout (4):(2) in [0, 5): its cosize 7 exceeds the bound.");
}

}  // namespace
