// multi_dim_split: blocks in row-major block order, remainder blocks, a zero extent, rank 0;
// static splits as constexpr sequences of block types; tiling checked cell by cell.
#include <gtest/gtest.h>

#include <tessel/core/multi_dim_split.hpp>

namespace {

using namespace tessel;

constexpr auto blocks53 = multi_dim_split(make_shape(Int<5>{}, Int<3>{}), Int<2>{});
static_assert(blocks53.size() == 6);
static_assert(std::is_same_v<decltype(get<0>(blocks53)),
                             Block<tuple<Int<0>, Int<0>>, tuple<Int<2>, Int<2>>>>);
static_assert(std::is_same_v<decltype(get<1>(blocks53)),
                             Block<tuple<Int<0>, Int<2>>, tuple<Int<2>, Int<1>>>>);
static_assert(std::is_same_v<decltype(get<5>(blocks53)),
                             Block<tuple<Int<4>, Int<2>>, tuple<Int<1>, Int<1>>>>);
static_assert(to_array(get<4>(blocks53).offset) == std::array<std::int64_t, 2>{4, 0});
static_assert(to_array(get<4>(blocks53).shape) == std::array<std::int64_t, 2>{1, 2});
// A zero extent gives one empty block along that mode.
constexpr auto blocks_zero = multi_dim_split(make_shape(Int<0>{}, Int<5>{}), Int<2>{});
static_assert(blocks_zero.size() == 3);
static_assert(to_array(get<2>(blocks_zero).shape) == std::array<std::int64_t, 2>{0, 1});
// Rank 0 gives one block with empty offset and shape.
constexpr auto blocks_rank0 = multi_dim_split(make_shape(), Int<4>{});
static_assert(blocks_rank0.size() == 1);
static_assert(std::is_same_v<decltype(get<0>(blocks_rank0)), Block<tuple<>, tuple<>>>);
// Run-time splits are constexpr too.
static_assert(multi_dim_split(make_shape(5, 3), 2).size() == 6);
static_assert(multi_dim_split(make_shape(5, 3), 2)[5].offset == make_shape(4, 2));

TEST(MultiDimSplit, RunTimeBlocksInRowMajorOrder) {
  std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> got;
  for (auto const& b : multi_dim_split(make_shape(5, 3), 2))
    got.emplace_back(to_vector(b.offset), to_vector(b.shape));
  std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> expect = {
      {{0, 0}, {2, 2}}, {{0, 2}, {2, 1}}, {{2, 0}, {2, 2}},
      {{2, 2}, {2, 1}}, {{4, 0}, {1, 2}}, {{4, 2}, {1, 1}}};
  EXPECT_EQ(got, expect);
}

TEST(MultiDimSplit, StaticAndRunTimeSplitsAgree) {
  auto dyn = multi_dim_split(make_shape(5, 3), 2);
  ASSERT_EQ(dyn.size(), blocks53.size());
  std::size_t i = 0;
  for (auto const& b : blocks53) {
    EXPECT_EQ(to_vector(b.offset), to_vector(dyn[i].offset));
    EXPECT_EQ(to_vector(b.shape), to_vector(dyn[i].shape));
    ++i;
  }
  std::size_t visited = 0;
  blocks53.for_each([&](auto block) {
    EXPECT_EQ(to_vector(block.offset), to_vector(dyn[visited].offset));
    ++visited;
  });
  EXPECT_EQ(visited, 6u);
}

TEST(MultiDimSplit, BlocksTileTheShapeExactly) {
  for (index_t a = 0; a <= 7; ++a)
    for (index_t b = 0; b <= 7; ++b)
      for (index_t split = 1; split <= 8; ++split) {
        std::vector<int> covered(static_cast<std::size_t>(a * b), 0);
        auto blocks = multi_dim_split(make_shape(a, b), split);
        for (auto const& blk : blocks) {
          auto [o0, o1] = blk.offset;
          auto [e0, e1] = blk.shape;
          EXPECT_LE(e0, split);
          EXPECT_LE(e1, split);
          for (index_t i = o0; i < o0 + e0; ++i)
            for (index_t j = o1; j < o1 + e1; ++j) covered[static_cast<std::size_t>(i * b + j)]++;
        }
        for (int c : covered) ASSERT_EQ(c, 1) << a << "x" << b << " split " << split;
        std::size_t expect = static_cast<std::size_t>((a == 0 ? 1 : (a + split - 1) / split) *
                                                      (b == 0 ? 1 : (b + split - 1) / split));
        EXPECT_EQ(blocks.size(), expect);
      }
}

TEST(MultiDimSplit, RunTimeRankShapesGiveRunTimeRankBlocks) {
  auto blocks = multi_dim_split(DynRankTuple<4>{3, 4}, 2);
  static_assert(std::is_same_v<decltype(blocks[0].offset), DynRankTuple<4>>);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(to_vector(blocks[3].offset), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(to_vector(blocks[3].shape), (std::vector<std::int64_t>{1, 2}));
}

TEST(MultiDimSplit, RankZeroHasOneBlock) {
  auto blocks = multi_dim_split(make_shape(), 3);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_TRUE(to_vector(blocks[0].shape).empty());
}

TEST(MultiDimSplit, NonPositiveSplitIsAnError) {
  try {
    (void)multi_dim_split(make_shape(4, 4), 0);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "multi_dim_split needs a split size > 0, got 0 for shape (4,4).");
  }
  EXPECT_THROW((void)multi_dim_split(make_shape(4), -2), Error);
}

}  // namespace
