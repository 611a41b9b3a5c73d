// logical_product and its rearrangements: ((repetition), (a)) reaches c(b(j)) + a(i) for every
// small layout and small tiler, blocked and raked products interleave the same offsets mode by
// mode; static and run-time arguments agree; refusals name the layout, the tiler and the values.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <tessel/core/complement.hpp>
#include <tessel/core/composition.hpp>
#include <tessel/core/print.hpp>
#include <tessel/core/product.hpp>

#include "small_layouts.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using I1 = Int<1>;
using I2 = Int<2>;
using I3 = Int<3>;
using I4 = Int<4>;

constexpr auto block22 = make_layout(make_shape(I2{}, I2{}));  // row-major (2, 2)
constexpr auto grid34 = make_layout(make_shape(I3{}, I4{}));   // row-major (3, 4)

// The repetition outer, the block inner: a compact block over a compact grid is compact.
static_assert(std::is_same_v<decltype(logical_product(block22, grid34)),
                             Layout<tuple<tuple<I3, I4>, tuple<I2, I2>>,
                                    tuple<tuple<Int<16>, I4>, tuple<I2, I1>>>>);
static_assert(coalesce(logical_product(block22, grid34)) == make_layout(make_shape(48)));
// Blocked: mode k is ((repetition_k), a_k); raked: (a_k, (repetition_k)).
static_assert(std::is_same_v<decltype(blocked_product(block22, grid34)),
                             Layout<tuple<tuple<tuple<I3>, I2>, tuple<tuple<I4>, I2>>,
                                    tuple<tuple<tuple<Int<16>>, I2>, tuple<tuple<I4>, I1>>>>);
static_assert(std::is_same_v<decltype(raked_product(block22, grid34)),
                             Layout<tuple<tuple<I2, tuple<I3>>, tuple<I2, tuple<I4>>>,
                                    tuple<tuple<I2, tuple<Int<16>>>, tuple<I1, tuple<I4>>>>>);
// A block with holes: the copies go into the holes first. (2):(2) repeated 3 times: the
// complement of {0, 2} is (2, 2):(4, 1), and 3 copies do not line up with it; 2 copies do.
static_assert(logical_product(make_layout(make_shape(I2{}), make_stride(I2{})), I2{}) ==
              Layout(make_tuple(make_tuple(2), make_tuple(2)),
                     make_tuple(make_tuple(1), make_tuple(2))));
// By mode: mode k is ((repetition_k), a_k); zipped and tiled gather the a_k.
static_assert(zipped_product(block22, make_tuple(make_layout(I3{}, I4{}), I4{})) ==
              Layout(make_tuple(make_tuple(make_tuple(3), make_tuple(4)), make_tuple(2, 2)),
                     make_tuple(make_tuple(make_tuple(8), make_tuple(2)), make_tuple(2, 1))));
static_assert(tiled_product(block22, make_tuple(make_layout(I3{}, I4{}), I4{})) ==
              Layout(make_tuple(make_tuple(3), make_tuple(4), make_tuple(2, 2)),
                     make_tuple(make_tuple(8), make_tuple(2), make_tuple(2, 1))));
// Run-time arguments: the same values, from the same constexpr code.
constexpr auto runtime_product = logical_product(make_layout(make_shape(index_t{2}, index_t{2})),
                                                 make_layout(make_shape(index_t{3}, index_t{4})));
static_assert(DynRank<std::remove_cvref_t<decltype(get<0>(runtime_product.shape()))>>);
static_assert(runtime_product == logical_product(block22, grid34));
static_assert(blocked_product(make_shape(index_t{2}, index_t{2}), make_shape(3, 4)) ==
              blocked_product(block22, grid34));

using test::error_of;
using test_support::injective;
using test_support::SmallLayout;
using test_support::text;

std::vector<SmallLayout> small_tilers() {
  std::vector<SmallLayout> out;
  for (index_t s : {1, 2, 3})
    for (index_t d : {1, 2, 3}) out.push_back({{s}, {d}});
  out.push_back({{2, 2}, {1, 2}});
  out.push_back({{2, 2}, {2, 1}});
  out.push_back({{2, 3}, {1, 2}});
  return out;
}

TEST(LogicalProduct, ReachesTheComplementAtTheTilerPlusTheLayout) {
  std::size_t formed = 0;
  for (auto const& small : test_support::tiling_layouts()) {
    auto a = small.layout();
    for (auto const& small_b : small_tilers()) {
      auto b = small_b.layout();
      index_t bound = std::max(size(a) * cosize(b), cosize(a));
      // The oracle: a complement, and a composition of it with b.
      bool expect = true;
      std::vector<index_t> copies;  // c(b(j))
      try {
        auto c = complement(a, bound);
        auto cb = composition(c, b);
        for (index_t j = 0; j < size(b); ++j) copies.push_back(c(b(j)));
        ASSERT_EQ(size(cb), size(b));
      } catch (Error const&) {
        expect = false;
      }
      try {
        auto r = logical_product(a, b);
        ASSERT_TRUE(expect) << text(small) << " x " << text(small_b) << " gave " << to_string(r);
        ++formed;
        ASSERT_EQ(size(r), size(a) * size(b)) << text(small) << " x " << text(small_b);
        for (index_t j = 0; j < size(b); ++j)
          for (index_t i = 0; i < size(a); ++i) {
            index_t o = r(j, i);
            ASSERT_EQ(o, copies[static_cast<std::size_t>(j)] + a(i))
                << text(small) << " x " << text(small_b) << " at " << j << ", " << i;
            ASSERT_EQ(r(j * size(a) + i), o) << text(small) << " x " << text(small_b);
          }
        // Copies of an injective a at the offsets of an injective b do not overlap.
        if (injective(a) && injective(b)) {
          ASSERT_TRUE(injective(r)) << text(small) << " x " << text(small_b);
        }
      } catch (Error const&) {
        ASSERT_FALSE(expect) << text(small) << " x " << text(small_b) << " was refused";
      }
    }
  }
  EXPECT_GT(formed, 20000U);
}

TEST(BlockedAndRakedProducts, InterleaveTheLogicalProductModeByMode) {
  std::size_t formed = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    if (small.shape.size() != 2) continue;
    auto a = make_layout(make_shape(small.shape[0], small.shape[1]),
                         make_stride(small.stride[0], small.stride[1]));
    for (auto const& small_b : small_tilers()) {
      if (small_b.shape.size() != 2) continue;
      auto b = make_layout(make_shape(small_b.shape[0], small_b.shape[1]),
                           make_stride(small_b.stride[0], small_b.stride[1]));
      try {
        auto logical = logical_product(a, b);
        auto blocked = blocked_product(a, b);
        auto raked = raked_product(a, b);
        ++formed;
        index_t a0 = small.shape[0], a1 = small.shape[1];
        index_t b0 = small_b.shape[0], b1 = small_b.shape[1];
        ASSERT_EQ(size(get<0>(blocked)), a0 * b0);
        ASSERT_EQ(size(get<1>(raked)), a1 * b1);
        for (index_t j0 = 0; j0 < b0; ++j0)
          for (index_t j1 = 0; j1 < b1; ++j1)
            for (index_t i0 = 0; i0 < a0; ++i0)
              for (index_t i1 = 0; i1 < a1; ++i1) {
                index_t ref = logical(j0 * b1 + j1, i0 * a1 + i1);
                // Blocked: along mode k, block j_k holds a_k's elements consecutively.
                ASSERT_EQ(blocked(j0 * a0 + i0, j1 * a1 + i1), ref)
                    << text(small) << " x " << text(small_b);
                // Raked: along mode k, a_k's elements are b_k apart.
                ASSERT_EQ(raked(i0 * b0 + j0, i1 * b1 + j1), ref)
                    << text(small) << " x " << text(small_b);
              }
      } catch (Error const&) {
        EXPECT_THROW((void)logical_product(a, b), Error) << text(small) << " x " << text(small_b);
      }
    }
  }
  EXPECT_GT(formed, 300U);
}

TEST(BlockedAndRakedProducts, ACompactBlockIsContiguousInTheBlockedProduct) {
  // Block (j0, j1) of a compact (a0, a1) block over a compact (b0, b1) grid holds the offsets
  // [(j0 * b1 + j1) * a0 * a1, ... + a0 * a1), in the block's row-major order.
  for (index_t a0 : {1, 2, 3})
    for (index_t a1 : {1, 2, 4})
      for (index_t b0 : {1, 2, 3})
        for (index_t b1 : {2, 3}) {
          auto r = blocked_product(make_shape(a0, a1), make_shape(b0, b1));
          for (index_t j0 = 0; j0 < b0; ++j0)
            for (index_t j1 = 0; j1 < b1; ++j1)
              for (index_t i0 = 0; i0 < a0; ++i0)
                for (index_t i1 = 0; i1 < a1; ++i1)
                  ASSERT_EQ(r(j0 * a0 + i0, j1 * a1 + i1), (j0 * b1 + j1) * a0 * a1 + i0 * a1 + i1)
                      << a0 << "x" << a1 << " over " << b0 << "x" << b1;
        }
}

// The same rank-2 layout with run-time integers.
template <class L>
auto runtime_copy(L const& l) {
  return make_layout(make_shape(to_index(get<0>(l.shape())), to_index(get<1>(l.shape()))),
                     make_stride(to_index(get<0>(l.stride())), to_index(get<1>(l.stride()))));
}

template <class A, class B>
void expect_static_and_runtime_agree(A const& a, B const& b) {
  auto da = runtime_copy(a);
  auto db = runtime_copy(b);
  static_assert(is_static_v<std::remove_cvref_t<decltype(logical_product(a, b).shape())>>);
  EXPECT_EQ(logical_product(a, b), logical_product(da, db))
      << to_string(a) << " x " << to_string(b);
  EXPECT_EQ(blocked_product(a, b), blocked_product(da, db))
      << to_string(a) << " x " << to_string(b);
  EXPECT_EQ(raked_product(a, b), raked_product(da, db)) << to_string(a) << " x " << to_string(b);
  EXPECT_EQ(zipped_product(a, make_tuple(I2{}, I2{})), zipped_product(da, make_tuple(2, 2)))
      << to_string(a);
}

TEST(LogicalProduct, StaticAndRunTimeAgree) {
  expect_static_and_runtime_agree(block22, grid34);
  expect_static_and_runtime_agree(make_layout(make_shape(I2{}, I3{}), make_stride(I1{}, I2{})),
                                  make_layout(make_shape(I2{}, I2{}), make_stride(I1{}, I2{})));
  expect_static_and_runtime_agree(make_layout(make_shape(I2{}, I2{}), make_stride(Int<8>{}, I1{})),
                                  grid34);
}

std::string product_error(auto const& a, auto const& b) {
  return error_of([&] { (void)logical_product(a, b); });
}

TEST(LogicalProduct, RefusalsNameTheLayoutTheTilerAndTheValues) {
  EXPECT_EQ(product_error(make_layout(make_shape(2, 2), make_stride(0, 1)), 3),
            "cannot form the product of layout (2,2):(0,1) and tiler 3: the layout is not "
            "injective: its mode 0 has extent 2 and stride 0.");
  EXPECT_EQ(product_error(make_layout(make_shape(2, 2), make_stride(4, 6)), 3),
            "cannot form the product of layout (2,2):(4,6) and tiler 3: the layout has no "
            "complement: its mode 1 has stride 6, which is not a multiple of 8, the span of its "
            "modes before it in stride order.");
  EXPECT_EQ(product_error(make_layout(make_shape(2), make_stride(2)),
                          make_layout(make_shape(3), make_stride(1))),
            "cannot form the product of layout (2):(2) and tiler (3):(1): the tiler's mode 0 "
            "(extent 3, stride 1) does not line up with the extents of the layout's complement "
            "(2,2):(4,1).");
  // By mode: the sentence names the mode and that mode's tiler.
  EXPECT_EQ(product_error(make_layout(make_shape(2, 2)), make_shape(3, 4)),
            "cannot form the product of mode 0 of layout (2,2):(2,1) and tiler 3: the tiler's "
            "mode 0 (extent 3, stride 1) does not line up with the extents of the layout's "
            "complement (2,2):(4,1).");
  auto dyn = make_layout(DynRankTuple<3>{2, 2, 2}, DynRankTuple<3>{4, 2, 1});
  EXPECT_EQ(product_error(dyn, make_shape(2, 4)),
            "cannot form the product of layout (2,2,2):(4,2,1) and tiler (2,4): the tiler has 2 "
            "modes but the layout has 3.");
}

}  // namespace
