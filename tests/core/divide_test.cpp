// logical_divide and its rearrangements: ((rest), (tile)) reaches l(c(j) + t(i)) for every small
// layout and small tiler; by-mode tilers divide each mode; zipped, tiled and flat are the same
// offsets rearranged; static and run-time arguments agree; refusals name the layout, the tiler
// and the values.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <tessel/core/complement.hpp>
#include <tessel/core/composition.hpp>
#include <tessel/core/divide.hpp>
#include <tessel/core/print.hpp>

#include "small_layouts.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using I2 = Int<2>;
using I4 = Int<4>;
using I8 = Int<8>;

constexpr auto m88 = make_layout(make_shape(I8{}, I8{}));  // row-major (8, 8)

// By a shape: each mode (rest, tile), integers, the grid of (2, 4) tiles outer.
static_assert(std::is_same_v<decltype(logical_divide(m88, make_shape(I2{}, I4{}))),
                             Layout<tuple<tuple<I4, I2>, tuple<I2, I4>>,
                                    tuple<tuple<Int<16>, I8>, tuple<I4, Int<1>>>>>);
// Zipped: ((rest_0, rest_1), (tile_0, tile_1)); tiled: (rest_0, rest_1, (tile_0, tile_1));
// flat: (rest_0, rest_1, tile_0, tile_1), block_layout's reordered order.
static_assert(std::is_same_v<decltype(zipped_divide(m88, make_shape(I2{}, I4{}))),
                             Layout<tuple<tuple<I4, I2>, tuple<I2, I4>>,
                                    tuple<tuple<Int<16>, I4>, tuple<I8, Int<1>>>>>);
static_assert(
    std::is_same_v<decltype(tiled_divide(m88, make_shape(I2{}, I4{}))),
                   Layout<tuple<I4, I2, tuple<I2, I4>>, tuple<Int<16>, I4, tuple<I8, Int<1>>>>>);
static_assert(std::is_same_v<decltype(flat_divide(m88, make_shape(I2{}, I4{}))),
                             Layout<tuple<I4, I2, I2, I4>, tuple<Int<16>, I4, I8, Int<1>>>>);
// The same tiles as one layout tiler, (2,4):(8,1) in the 1-D index space: rest and tile are flat
// tuples computed by the value code.
static_assert(
    std::is_same_v<
        decltype(logical_divide(m88,
                                make_layout(make_shape(I2{}, I4{}), make_stride(I8{}, Int<1>{})))),
        Layout<tuple<tuple<I4, I2>, tuple<I2, I4>>, tuple<tuple<Int<16>, I4>, tuple<I8, Int<1>>>>>);
// An integer tiler n is (n):(1): consecutive indices, the result's 1-D index is the layout's.
static_assert(
    std::is_same_v<decltype(logical_divide(make_layout(make_shape(Int<12>{})), I4{})),
                   Layout<tuple<tuple<Int<3>>, tuple<I4>>, tuple<tuple<I4>, tuple<Int<1>>>>>);
// A strided tiler: every other element, (2):(2) of (8): tile (2):(2), rest (2, 2):(4, 1).
static_assert(logical_divide(make_layout(make_shape(I8{})),
                             make_layout(make_shape(I2{}), make_stride(I2{}))) ==
              Layout(make_tuple(make_tuple(2, 2), make_tuple(2)),
                     make_tuple(make_tuple(4, 1), make_tuple(2))));
// Mixed: a static mode and a static tile extent stay static.
static_assert(
    std::is_same_v<
        std::remove_cvref_t<decltype(get<0>(
            logical_divide(make_layout(make_shape(I8{}, index_t{8})), make_shape(I2{}, index_t{4}))
                .shape()))>,
        tuple<I4, I2>>);
// Run-time arguments: the same values, from the same constexpr code.
constexpr auto runtime_divide = logical_divide(
    make_layout(make_shape(index_t{8}, index_t{8})),
    make_layout(make_shape(index_t{2}, index_t{4}), make_stride(index_t{8}, index_t{1})));
static_assert(DynRank<std::remove_cvref_t<decltype(get<0>(runtime_divide.shape()))>>);
static_assert(runtime_divide == logical_divide(m88, make_layout(make_shape(I2{}, I4{}),
                                                                make_stride(I8{}, Int<1>{}))));
static_assert(logical_divide(make_layout(make_shape(index_t{8}, index_t{8})),
                             make_shape(index_t{2}, index_t{4})) ==
              logical_divide(m88, make_shape(I2{}, I4{})));

using test::error_of;
using test_support::SmallLayout;
using test_support::sorted_offsets;
using test_support::text;

// Small layout tilers: rank 1 with extents 1..4 and strides 1..4, 6; some of rank 2.
std::vector<SmallLayout> small_tilers() {
  std::vector<SmallLayout> out;
  for (index_t s : {1, 2, 3, 4})
    for (index_t d : {1, 2, 3, 4, 6}) out.push_back({{s}, {d}});
  out.push_back({{2, 2}, {1, 2}});
  out.push_back({{2, 2}, {4, 1}});
  out.push_back({{2, 2}, {1, 4}});
  out.push_back({{2, 3}, {3, 1}});
  out.push_back({{3, 2}, {1, 6}});
  out.push_back({{2, 2}, {2, 2}});  // not injective
  return out;
}

TEST(LogicalDivide, ReachesTheLayoutAtTheComplementPlusTheTile) {
  std::size_t divided = 0;
  std::size_t identity_tilers = 0;
  for (auto const& small : test_support::tiling_layouts()) {
    auto l = small.layout();
    index_t n = size(l);
    for (auto const& small_t : small_tilers()) {
      auto t = small_t.layout();
      // The oracle: a complement in size(l) that covers it exactly, and a composition.
      bool expect = true;
      std::vector<index_t> tiling_offsets;
      try {
        auto c = complement(t, n);
        expect = size(c) * size(t) == n;
        if (expect) {
          DynRankTuple<8> bs{}, bd{};
          for (index_t k = 0; k < rank(c); ++k)
            bs.push_back(c.shape()[k]), bd.push_back(c.stride()[k]);
          for (index_t k = 0; k < rank(t); ++k)
            bs.push_back(t.shape()[k]), bd.push_back(t.stride()[k]);
          auto b = make_layout(bs, bd);
          (void)composition(l, b);
          for (index_t k = 0; k < n; ++k) tiling_offsets.push_back(b(k));
        }
      } catch (Error const&) {
        expect = false;
      }
      try {
        auto r = logical_divide(l, t);
        ASSERT_TRUE(expect) << text(small) << " / " << text(small_t) << " gave " << to_string(r);
        ++divided;
        ASSERT_EQ(size(r), n) << text(small) << " / " << text(small_t);
        ASSERT_EQ(size(get<1>(r)), size(t)) << text(small) << " / " << text(small_t);
        index_t nt = size(t);
        for (index_t k = 0; k < n; ++k) {
          // 1-D: result(k) == l((c, t)(k)); two coordinates: result(j, i), k == j * nt + i.
          ASSERT_EQ(r(k), l(tiling_offsets[static_cast<std::size_t>(k)]))
              << text(small) << " / " << text(small_t) << " at " << k;
          ASSERT_EQ(r(k / nt, k % nt), r(k)) << text(small) << " / " << text(small_t);
        }
        // The result reaches exactly the layout's offsets (a bijection of its indices).
        ASSERT_EQ(sorted_offsets(r), sorted_offsets(l)) << text(small) << " / " << text(small_t);
        if (small_t.stride[0] == 1 && small_t.shape.size() == 1) {
          ++identity_tilers;
          for (index_t k = 0; k < n; ++k) ASSERT_EQ(r(k), l(k)) << text(small);
        }
      } catch (Error const&) {
        ASSERT_FALSE(expect) << text(small) << " / " << text(small_t) << " was refused";
      }
    }
  }
  EXPECT_GT(divided, 50000U);
  EXPECT_GT(identity_tilers, 10000U);
}

// Every rearrangement reaches the same offsets as logical_divide for the same (tile, element).
template <std::size_t R>
void check_by_shape(SmallLayout const& small, std::array<index_t, R> const& t, std::size_t& ok) {
  auto l = small.layout();
  auto tiler = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return make_tuple(t[K]...);
  }
  (std::make_index_sequence<R>{});
  bool divides = true;
  for (std::size_t k = 0; k < R; ++k) divides = divides && small.shape[k] % t[k] == 0;
  if (!divides) {
    EXPECT_THROW((void)logical_divide(l, tiler), Error) << text(small);
    EXPECT_THROW((void)flat_divide(l, tiler), Error) << text(small);
    return;
  }
  ++ok;
  auto logical = logical_divide(l, tiler);
  auto zipped = zipped_divide(l, tiler);
  auto tiled = tiled_divide(l, tiler);
  auto flat = flat_divide(l, tiler);
  ASSERT_EQ(size(logical), size(l));
  // Odometer over (j_k, i_k): rest index j_k < s_k / t_k, tile index i_k < t_k.
  std::array<index_t, R> j{}, i{};
  index_t total = size(l);
  for (index_t e = 0; e < total; ++e) {
    index_t rest = e;
    index_t ref = 0;
    for (std::size_t k = R; k-- > 0;) {
      i[k] = rest % t[k];
      rest /= t[k];
      j[k] = rest % (small.shape[k] / t[k]);
      rest /= small.shape[k] / t[k];
      ref += (j[k] * t[k] + i[k]) * small.stride[k];
    }
    auto js = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return make_tuple(j[K]...);
    }
    (std::make_index_sequence<R>{});
    auto is = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return make_tuple(i[K]...);
    }
    (std::make_index_sequence<R>{});
    auto per_mode = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return make_tuple(make_tuple(j[K], i[K])...);
    }
    (std::make_index_sequence<R>{});
    ASSERT_EQ(crd2idx(per_mode, logical.shape(), logical.stride()), ref) << text(small);
    ASSERT_EQ(zipped(js, is), ref) << text(small);
    ASSERT_EQ(crd2idx(concat(js, make_tuple(is)), tiled.shape(), tiled.stride()), ref)
        << text(small);
    ASSERT_EQ(crd2idx(concat(js, is), flat.shape(), flat.stride()), ref) << text(small);
  }
}

TEST(LogicalDivide, ByShapeDividesEveryModeAndTheRearrangementsAgree) {
  std::size_t ok = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    std::size_t r = small.shape.size();
    // Strides do not change which tilers divide: rank 3 runs with the strides 0, 1, 2, 4, 12.
    if (r == 3 && std::any_of(small.stride.begin(), small.stride.end(),
                              [](index_t d) { return d == 3 || d == 6; }))
      continue;
    for (index_t a : {1, 2, 3, 4}) {
      if (r == 1) {
        check_by_shape<1>(small, {a}, ok);
        continue;
      }
      for (index_t b : {1, 2, 3}) {
        if (r == 2) {
          check_by_shape<2>(small, {a, b}, ok);
          continue;
        }
        for (index_t c : {1, 2}) check_by_shape<3>(small, {a, b, c}, ok);
      }
    }
  }
  EXPECT_GT(ok, 40000U);
}

TEST(LogicalDivide, ByModeLayoutTilersDivideEachModeByItsTiler) {
  // Mode k of the result is ((rest_k), (tile_k)) with offsets l_k(c_k(j) + t_k(i)).
  std::size_t ok = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    if (small.shape.size() != 2) continue;
    auto l = small.layout();
    for (auto const& t0 : small_tilers()) {
      if (t0.shape.size() != 1) continue;
      auto tiler = make_tuple(t0.layout(), index_t{1});
      try {
        auto r = logical_divide(l, tiler);
        auto c = complement(t0.layout(), small.shape[0]);
        ++ok;
        for (index_t j = 0; j < size(c); ++j)
          for (index_t i = 0; i < size(t0.layout()); ++i)
            for (index_t y = 0; y < small.shape[1]; ++y)
              ASSERT_EQ(r(make_tuple(j, i), make_tuple(y, 0)),
                        (c(j) + t0.layout()(i)) * small.stride[0] + y * small.stride[1])
                  << text(small) << " / " << text(t0);
      } catch (Error const&) {
        auto mode = make_layout(make_shape(small.shape[0]), make_shape(small.stride[0]));
        EXPECT_THROW((void)logical_divide(mode, t0.layout()), Error) << text(small);
      }
    }
  }
  EXPECT_GT(ok, 4000U);
}

template <class L, class T>
void expect_static_and_runtime_agree(L const& l, T const& t) {
  auto dl = make_layout(leaf_values(l.shape()), leaf_values(l.stride()));
  auto dt = make_layout(leaf_values(t.shape()), leaf_values(t.stride()));
  auto s = logical_divide(l, t);
  static_assert(is_static_v<std::remove_cvref_t<decltype(s.shape())>>);
  EXPECT_EQ(s, logical_divide(dl, dt)) << to_string(l) << " / " << to_string(t);
  EXPECT_EQ(flat_divide(l, t), flat_divide(dl, dt)) << to_string(l) << " / " << to_string(t);
}

TEST(LogicalDivide, StaticAndRunTimeAgree) {
  expect_static_and_runtime_agree(make_layout(make_shape(Int<12>{})),
                                  make_layout(make_shape(Int<3>{}), make_stride(I2{})));
  expect_static_and_runtime_agree(m88,
                                  make_layout(make_shape(I2{}, I2{}), make_stride(I8{}, I2{})));
  expect_static_and_runtime_agree(
      make_layout(make_shape(I4{}, Int<6>{}), make_stride(Int<1>{}, I4{})),
      make_layout(make_shape(I2{}), make_stride(Int<1>{})));
  expect_static_and_runtime_agree(make_layout(make_shape(I2{}, make_shape(I2{}, I4{})),
                                              make_stride(I8{}, make_stride(I4{}, Int<1>{}))),
                                  make_layout(make_shape(I4{}), make_stride(I2{})));
}

std::string divide_error(auto const& l, auto const& t) {
  return error_of([&] { (void)logical_divide(l, t); });
}

TEST(LogicalDivide, RefusalsNameTheLayoutTheTilerAndTheValues) {
  auto m = make_layout(make_shape(6, 10));
  EXPECT_EQ(divide_error(m, make_shape(4, 5)),
            "cannot divide layout (6,10):(10,1) by tiler (4,5): mode 0 has extent 6, which is not "
            "a multiple of 4.");
  EXPECT_EQ(divide_error(m, make_shape(3, 0)),
            "cannot divide layout (6,10):(10,1) by tiler (3,0): mode 1's tile extent is 0; tile "
            "extents must be > 0.");
  EXPECT_EQ(divide_error(m, make_layout(make_shape(7), make_stride(1))),
            "cannot divide layout (6,10):(10,1) by tiler (7):(1): it does not divide the layout: "
            "the tiler and its complement, (9,7):(7,1), cover 63 indices, not 60.");
  EXPECT_EQ(divide_error(m, make_layout(make_shape(2), make_stride(60))),
            "cannot divide layout (6,10):(10,1) by tiler (2):(60): the tiler's cosize 61 exceeds "
            "the layout's size 60.");
  EXPECT_EQ(divide_error(m, make_layout(make_shape(2, 2), make_stride(4, 6))),
            "cannot divide layout (6,10):(10,1) by tiler (2,2):(4,6): the tiler has no "
            "complement: its mode 1 has stride 6, which is not a multiple of 8, the span of its "
            "modes before it in stride order.");
  // A by-mode tiler: the sentence names the mode and that mode's tiler.
  EXPECT_EQ(divide_error(m, make_tuple(3, make_layout(make_shape(2), make_stride(0)))),
            "cannot divide mode 1 of layout (6,10):(10,1) by tiler (2):(0): the tiler is not "
            "injective: its mode 0 has extent 2 and stride 0.");
  // Column-major (2, 3): two consecutive indices are not a layout of it.
  EXPECT_EQ(divide_error(make_layout(make_shape(2, 3), make_stride(1, 2)), 2),
            "cannot divide layout (2,3):(1,2) by tiler 2: mode 0 (extent 3, stride 2) of the "
            "tiler and its complement, (3,2):(2,1), does not line up with the layout's extents.");
  // A run-time-rank layout and a by-mode tiler of another rank.
  auto dyn = make_layout(DynRankTuple<3>{8, 8, 2}, DynRankTuple<3>{16, 2, 1});
  EXPECT_EQ(divide_error(dyn, make_shape(2, 4)),
            "cannot divide layout (8,8,2):(16,2,1) by tiler (2,4): the tiler has 2 modes but the "
            "layout has 3.");
  // Static parts print as plain numbers.
  EXPECT_EQ(divide_error(make_layout(make_shape(I8{})), make_shape(index_t{3})),
            "cannot divide layout (8):(1) by tiler (3): mode 0 has extent 8, which is not a "
            "multiple of 3.");
}

}  // namespace
