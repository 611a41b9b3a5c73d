// composition and reshape: c(i) == a(b(i)) over every small pair, reshape as a view with
// torch.view semantics, and static and run-time arguments agreeing.
#include <gtest/gtest.h>

#include <tessel/core/composition.hpp>

#include "small_layouts.hpp"

namespace {

using namespace tessel;

// Reshape of a compact static layout is compact.
static_assert(std::is_same_v<decltype(reshape(make_layout(make_shape(Int<4>{}, Int<6>{})),
                                              make_shape(Int<3>{}, Int<8>{}))),
                             Layout<tuple<Int<3>, Int<8>>, tuple<Int<8>, Int<1>>>>);
// Splitting a strided mode keeps the view: (6):(2) -> (2,3):(6,2).
static_assert(
    std::is_same_v<decltype(reshape(make_layout(make_shape(Int<6>{}), make_stride(Int<2>{})),
                                    make_shape(Int<2>{}, Int<3>{}))),
                   Layout<tuple<Int<2>, Int<3>>, tuple<Int<6>, Int<2>>>>);
// Composition with a non-compact b: every other row of a (4,3) matrix.
constexpr auto every_other_row =
    composition(make_layout(make_shape(Int<4>{}, Int<3>{})),
                make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<6>{}, Int<1>{})));
static_assert(std::is_same_v<std::remove_cvref_t<decltype(every_other_row)>,
                             Layout<tuple<Int<2>, Int<3>>, tuple<Int<6>, Int<1>>>>);
// A mode of b that needs two modes of a becomes hierarchical: (2,3):(10,1) read as 6 elements.
constexpr auto merged = composition(
    make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<10>{}, Int<1>{})), Int<6>{});
static_assert(std::is_same_v<std::remove_cvref_t<decltype(merged)>,
                             Layout<tuple<tuple<Int<2>, Int<3>>>, tuple<tuple<Int<10>, Int<1>>>>>);
static_assert(merged(4) == 11);

TEST(Composition, MatchesFunctionCompositionOverSmallLayouts) {
  auto layouts = test_support::small_layouts(false);
  std::size_t composed = 0;
  std::size_t attempted = 0;
  for (std::size_t ia = 0; ia < layouts.size(); ia += 7) {
    auto a = layouts[ia].layout();
    for (std::size_t ib = 0; ib < layouts.size(); ib += 5) {
      auto const& sb = layouts[ib];
      if (sb.shape.size() != 2) continue;
      auto b = make_layout(make_shape(sb.shape[0], sb.shape[1]),
                           make_stride(sb.stride[0], sb.stride[1]));
      // Past size(a), a's offsets depend on how a is written; composition is about its domain.
      if (cosize(b) > size(a)) continue;
      ++attempted;
      try {
        auto c = composition(a, b);
        ++composed;
        for (index_t i = 0; i < size(b); ++i)
          ASSERT_EQ(c(i), a(b(i)))
              << to_string(a.shape()) << ":" << to_string(a.stride()) << " o "
              << to_string(b.shape()) << ":" << to_string(b.stride()) << " at " << i;
      } catch (Error const&) {
        // Not every pair is a layout; the failure must be reported, never a wrong answer.
      }
    }
  }
  // Most pairs compose; a broken composition that always failed would pass the loop above.
  EXPECT_GT(composed, attempted / 2) << composed << " of " << attempted;
}

TEST(Composition, ACompactLayoutComposesWithAnyCompactShape) {
  for (auto const& small : test_support::small_layouts(false)) {
    auto a = make_layout(small.shape_values());
    auto c = composition(a, make_shape(index_t{size(a)}));
    for (index_t i = 0; i < size(a); ++i) ASSERT_EQ(c(i), i);
  }
}

TEST(Composition, OverlappingModesOfBAreRefusedUnlessAIsLinear) {
  // c(i, j) = a(i + j) is not separable when a has several modes: refuse rather than be wrong.
  auto a = make_layout(make_shape(4, 2), make_stride(1, 0));
  EXPECT_THROW((void)composition(a, make_layout(make_shape(4, 2), make_stride(1, 1))), Error);
  // With a single linear mode it is separable.
  auto lin = make_layout(make_shape(8), make_stride(3));
  auto c = composition(lin, make_layout(make_shape(4, 2), make_stride(1, 1)));
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 2; ++j) EXPECT_EQ(c(i, j), lin(i + j));
}

TEST(Composition, AnImpossibleCompositionNamesBothLayouts) {
  auto a = make_layout(make_shape(2, 3), make_stride(10, 1));
  try {
    (void)composition(a, make_layout(make_shape(3), make_stride(2)));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "layout (2,3):(10,1) cannot be composed with (3):(2): mode 0 (extent 3, stride 2) "
                 "does not line up with its extents.");
  }
}

TEST(Composition, ARunTimeRankBGivesAFlatRunTimeRankLayout) {
  // coalesce of run-time layouts has a run-time rank; composing with it keeps the 1-D mapping.
  auto a = make_layout(make_shape(2, 3), make_stride(10, 1));
  auto b = coalesce(make_layout(make_shape(2, 1, 3), make_stride(3, 5, 1)));
  static_assert(DynRank<std::remove_cvref_t<decltype(b.shape())>>);
  auto c = composition(a, b);
  static_assert(DynRank<std::remove_cvref_t<decltype(c.shape())>>);
  EXPECT_EQ(c, make_layout(make_shape(2, 3), make_stride(10, 1)));
  for (index_t i = 0; i < size(b); ++i) EXPECT_EQ(c(i), a(b(i)));
  // The same refusal as for a static-rank b.
  EXPECT_THROW((void)composition(a, coalesce(make_layout(make_shape(3), make_stride(2)))), Error);
}

TEST(Reshape, ViewOfTheSameElementsInRowMajorOrder) {
  auto l = make_layout(make_shape(4, 6));
  auto r = reshape(l, make_shape(2, 3, 4));
  static_assert(
      std::is_same_v<decltype(r.shape()), tuple<index_t, index_t, index_t> const&> ||
      std::is_same_v<std::remove_cvref_t<decltype(r.shape())>, tuple<index_t, index_t, index_t>>);
  EXPECT_EQ(to_vector(r.stride()), (std::vector<std::int64_t>{12, 4, 1}));
  for (index_t i = 0; i < 24; ++i) EXPECT_EQ(r(i), l(i));
}

TEST(Reshape, StridedLayoutsReshapeWhenTheGroupingAllows) {
  // The first four columns of a (4, 8) matrix: (4, 4):(8, 1). Merging rows with columns fails,
  // splitting the columns works.
  auto l = make_layout(make_shape(4, 4), make_stride(8, 1));
  auto split = reshape(l, make_shape(4, 2, 2));
  EXPECT_EQ(to_vector(split.stride()), (std::vector<std::int64_t>{8, 2, 1}));
  for (index_t i = 0; i < 16; ++i) EXPECT_EQ(split(i), l(i));
  try {
    (void)reshape(l, make_shape(16));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot reshape layout (4,4):(8,1) to shape (16) without a copy: its strides do "
                 "not allow that grouping.");
  }
}

TEST(Reshape, SizeMismatchNamesBothShapes) {
  try {
    (void)reshape(make_layout(make_shape(4, 6)), make_shape(5, 5));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot reshape shape (4,6) (24 elements) to shape (5,5) (25 elements).");
  }
}

TEST(Reshape, StaticAndRunTimeAgree) {
  auto s = reshape(make_layout(make_shape(Int<6>{}), make_stride(Int<2>{})),
                   make_shape(Int<2>{}, Int<3>{}));
  auto d = reshape(make_layout(make_shape(6), make_stride(2)), make_shape(2, 3));
  EXPECT_EQ(to_vector(s.shape()), to_vector(d.shape()));
  EXPECT_EQ(to_vector(s.stride()), to_vector(d.stride()));
}

TEST(Reshape, EmptyLayoutsReshapeFreely) {
  auto r = reshape(make_layout(make_shape(0, 4)), make_shape(4, 0));
  EXPECT_EQ(size(r), 0);
  EXPECT_EQ(cosize(r), 0);
}

}  // namespace
