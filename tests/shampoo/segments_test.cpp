// Segments of a plan (plan/segments.hpp): the blocks of one parameter that share a shape form a
// box of its merged shape whose blocks, in row-major order, are consecutive slots of their group
// (what fill_plan gives them); every block lies in exactly one segment, at the place its own
// offset says; a plan whose blocks of one shape do not fill their box (a rank's owned_plan) gets
// one segment per block.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include <tessel/shampoo/distributed/distributed.hpp>
#include <tessel/shampoo/plan/geometry.hpp>
#include <tessel/shampoo/plan/segments.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

// The parameter elements of slot `slot` of segment s, in the block's row-major order, from the
// segment's layout; and the same from the block's own offset in the plan.
std::vector<index_t> elements_of(SegmentPlan const& s, Extents const& block, index_t slot) {
  auto const seg = runtime_segment(s, block);
  auto const layout = seg.param_layout();
  index_t const numel = to_index(size(seg.block));
  std::vector<index_t> out;
  for (index_t i = 0; i < numel; ++i) out.push_back(s.offset + layout(slot * numel + i));
  return out;
}

std::vector<index_t> elements_of_block(Plan const& plan, std::size_t b) {
  auto const& merged = plan.params[static_cast<std::size_t>(plan.blocks[b].param)].merged_shape;
  Extents const offset = plan.block_offset(b);
  Extents const& shape = plan.block_shape(b);
  std::vector<index_t> out;
  index_t numel = 1;
  for (index_t e : shape) numel *= e;
  for (index_t i = 0; i < numel; ++i) {
    index_t rest = i, at = 0, stride = 1;
    for (index_t k = shape.rank() - 1; k >= 0; --k) {
      at += (offset[k] + rest % shape[k]) * stride;
      rest /= shape[k];
      stride *= merged[k];
    }
    out.push_back(at);
  }
  return out;
}

void expect_segments_cover_the_plan(Plan const& plan) {
  std::map<std::pair<index_t, index_t>, std::size_t> block_at;  // (group, slot) -> block
  for (std::size_t b = 0; b < plan.num_blocks(); ++b)
    block_at[{plan.blocks[b].group, plan.blocks[b].slot}] = b;
  std::set<std::size_t> seen;
  for (SegmentPlan const& s : segments(plan)) {
    index_t box = 1;
    for (index_t n : s.grid) box *= n;
    EXPECT_EQ(box, s.count);
    Extents const& block = plan.groups[static_cast<std::size_t>(s.group)].shape;
    for (index_t j = 0; j < s.count; ++j) {
      std::size_t const b = block_at.at({s.group, s.first_slot + j});
      EXPECT_EQ(plan.blocks[b].param, s.param);
      EXPECT_TRUE(seen.insert(b).second) << "block " << b << " in two segments";
      EXPECT_EQ(elements_of(s, block, j), elements_of_block(plan, b)) << "block " << b;
    }
  }
  EXPECT_EQ(seen.size(), plan.num_blocks());
}

TEST(Segments, EqualShapedBlocksOfAParameterAreOneBox) {
  // (5, 3) at 2: blocks (2,2) x2, (2,1) x2, (1,2), (1,1) -> four segments.
  auto plan =
      make_plan(PlanOptions<index_t, index_t>{2, 1, 1}, std::vector<std::vector<index_t>>{{5, 3}});
  auto const segs = segments(plan);
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(to_vector(segs[0].grid), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(to_vector(segs[1].grid), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(segs[1].offset, 2);
  EXPECT_EQ(to_vector(segs[2].grid), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(segs[2].offset, 12);
  expect_segments_cover_the_plan(plan);
  // Evenly divided: one box for the whole parameter.
  auto even = make_plan(PlanOptions<index_t, index_t>{1024, 1, 1},
                        std::vector<std::vector<index_t>>{{1024, 4096}, {4096, 1024}});
  auto const two = segments(even);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(to_vector(two[0].grid), (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(to_vector(two[1].grid), (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(two[1].first_slot, 4);
  expect_segments_cover_the_plan(even);
}

TEST(Segments, CoverEveryPlanShape) {
  for (index_t max_dim : {1, 2, 3, 4, 7}) {
    auto plan = make_plan(PlanOptions<index_t, index_t>{max_dim, infinite, 1},
                          std::vector<std::vector<index_t>>{
                              {}, {5}, {6, 5}, {2, 3, 4}, {7, 1, 3}, {0, 3}, {3, 5, 2, 2}});
    SCOPED_TRACE(max_dim);
    expect_segments_cover_the_plan(plan);
  }
}

TEST(Segments, OwnedPlansFallBackToOneSegmentPerBlock) {
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 3},
                        std::vector<std::vector<index_t>>{{6, 6}, {5, 3}});
  for (index_t r = 0; r < 3; ++r) {
    Plan const own = owned_plan(plan, r);
    expect_segments_cover_the_plan(own);
  }
}

TEST(Segments, ABlockAloneIsASegmentOfOne) {
  auto plan =
      make_plan(PlanOptions<index_t, index_t>{2, 1, 1}, std::vector<std::vector<index_t>>{{3, 5}});
  for (std::size_t b = 0; b < plan.num_blocks(); ++b) {
    SegmentPlan const s = block_segment(plan, b);
    EXPECT_EQ(s.count, 1);
    EXPECT_EQ(elements_of(s, plan.block_shape(b), 0), elements_of_block(plan, b));
  }
}

}  // namespace
