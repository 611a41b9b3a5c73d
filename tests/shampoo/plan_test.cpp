// The Shampoo blocking plan: constexpr contents for static shapes, equality with the run-time plan,
// merging and blocking as Distributed Shampoo does them, batch groups, owner ranks equal to
// distribute_buffer_sizes, the "infinite" options, and the errors.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <tessel/core/shape.hpp>
#include <tessel/shampoo/plan.hpp>
#include <tessel/shampoo/plan/print.hpp>

namespace {

using namespace tessel;
using namespace tessel::literals;
using namespace tessel::shampoo;

// A conv weight, a matrix larger than the block size, a bias and a scalar.
constexpr auto plan = make_plan(plan_options(4_c, 1_c, 2), make_shape(2_c, 1_c, 3_c),
                                make_shape(6_c, 5_c), make_shape(3_c), make_shape());
static_assert(plan.num_params() == 4);
// (2, 1, 3): 2 * 3 = 6 > 4, so nothing merges and the 1 is squeezed: (2, 3), one block.
static_assert(plan.params[0].merged_shape == Extents{2, 3});
static_assert(plan.params[0].shape == Extents{2, 1, 3});
// (6, 5) split by 4: rows [0, 4) [4, 6), columns [0, 4) [4, 5).
static_assert(plan.params[1].num_blocks == 4 && plan.params[1].first_block == 1);
static_assert(plan.block_offset(4) == Extents{4, 4} && plan.block_shape(4) == Extents{2, 1});
static_assert(plan.block_offset(2) == Extents{0, 4} && plan.block_shape(2) == Extents{4, 1});
// A 0-D parameter is merged to (1), as Distributed Shampoo does.
static_assert(plan.params[3].merged_shape == Extents{1});
static_assert(plan.num_blocks() == 1 + 4 + 1 + 1);
// Groups in order of first appearance: (2,3) (4,4) (4,1) (2,4) (2,1) (3) (1).
static_assert(plan.num_groups() == 7);
static_assert(plan.groups[1].shape == Extents{4, 4} && plan.groups[1].count == 1);
static_assert(plan.groups[1].bytes == 64 && plan.groups[1].aligned_bytes == 64);
static_assert(plan.groups[0].factor_numel() == 4 + 9);
static_assert(plan.blocks[3].group == 3 && plan.blocks[3].slot == 0);

// Distributed Shampoo's merge_small_dims examples.
constexpr auto conv = make_plan(plan_options(8192_c, 1_c), make_shape(32_c, 3_c, 64_c, 64_c));
static_assert(conv.params[0].merged_shape == Extents{96, 4096});
constexpr auto spectral =
    make_plan(plan_options(1000000_c, 2_c), make_shape(32_c, 3_c, 64_c, 64_c));
static_assert(spectral.params[0].merged_shape == Extents{32, 12288});

// target_parameter_dimensionality = infinite keeps every shape as it is, so a 0-D parameter has
// one 0-D block; max_preconditioner_dim = infinite keeps one block per parameter.
constexpr auto keep = make_plan(plan_options(Int<infinite>{}, Int<infinite>{}), make_shape(),
                                make_shape(1_c, 5000_c));
static_assert(keep.params[0].merged_shape.rank() == 0 && keep.block_shape(0).rank() == 0);
static_assert(keep.params[1].merged_shape == Extents{1, 5000});
static_assert(keep.num_blocks() == 2);

// An empty parameter merges to (0): one empty block.
constexpr auto empty = make_plan(plan_options(4_c, 1_c), make_shape(3_c, 0_c));
static_assert(empty.params[0].merged_shape == Extents{0} && empty.num_blocks() == 1);
static_assert(empty.block_shape(0) == Extents{0});

TEST(ShampooPlan, StaticAndRunTimePlansAgree) {
  auto rt = make_plan(plan_options(4_c, 1_c, 2), make_shape(2, 1, 3), make_shape(6, 5),
                      make_shape(3), make_shape());
  static_assert(std::is_same_v<decltype(rt), Plan>);
  EXPECT_TRUE(rt == plan);
  auto from_vectors = make_plan(PlanOptions<index_t, index_t>{4, 1, 2, DType::f32},
                                std::vector<std::vector<index_t>>{{2, 1, 3}, {6, 5}, {3}, {}});
  EXPECT_TRUE(from_vectors == plan);
  EXPECT_TRUE(to_runtime(plan) == rt);
  auto other = make_plan(PlanOptions<index_t, index_t>{4, 1, 3, DType::f32},
                         std::vector<std::vector<index_t>>{{2, 1, 3}, {6, 5}, {3}, {}});
  EXPECT_FALSE(other == plan);  // another group size
}

TEST(ShampooPlan, BlocksTileEachMergedShapeInRowMajorOrder) {
  for (index_t rows = 1; rows <= 9; ++rows)
    for (index_t cols = 1; cols <= 9; ++cols)
      for (index_t split = 1; split <= 5; ++split) {
        auto p = make_plan(PlanOptions<index_t, index_t>{split, 2, 3, DType::f32},
                           std::vector<std::vector<index_t>>{{rows, cols}});
        auto merged = merge_small_dims(make_shape(rows, cols), split, 2);
        EXPECT_EQ(to_vector(p.params[0].merged_shape), to_vector(merged));
        auto blocks = multi_dim_split(merged, split);
        ASSERT_EQ(p.num_blocks(), blocks.size());
        for (std::size_t b = 0; b < p.num_blocks(); ++b) {
          EXPECT_EQ(to_vector(p.block_offset(b)), to_vector(blocks[b].offset));
          EXPECT_EQ(to_vector(p.block_shape(b)), to_vector(blocks[b].shape));
          EXPECT_EQ(p.blocks[b].index, static_cast<index_t>(b));
        }
      }
}

TEST(ShampooPlan, GroupsCountTheirBlocksAndSlotsAreDense) {
  auto p = make_plan(plan_options(3, 1, 1), make_shape(7, 7), make_shape(3, 3), make_shape(5));
  std::vector<index_t> seen(p.num_groups(), 0);
  for (std::size_t b = 0; b < p.num_blocks(); ++b) {
    auto g = static_cast<std::size_t>(p.blocks[b].group);
    EXPECT_EQ(p.blocks[b].slot, seen[g]++);
    EXPECT_EQ(p.block_shape(b), p.groups[g].shape);
  }
  for (std::size_t g = 0; g < p.num_groups(); ++g) EXPECT_EQ(seen[g], p.groups[g].count);
  // (3,3) blocks of the 7x7 matrix and the 3x3 parameter share one group.
  EXPECT_EQ(p.groups[0].shape, (Extents{3, 3}));
  EXPECT_EQ(p.groups[0].count, 4 + 1);
}

TEST(ShampooPlan, RanksAreThoseOfDistributeBufferSizes) {
  auto p = make_plan(PlanOptions<index_t, index_t>{16, 1, 5, DType::bf16},
                     std::vector<std::vector<index_t>>{{40, 33}, {17}, {5, 5, 5}, {100}, {1}});
  std::vector<index_t> bytes;
  for (std::size_t b = 0; b < p.num_blocks(); ++b) {
    bytes.push_back(p.group_of(b).numel() * 2);
    EXPECT_EQ(p.group_of(b).bytes, bytes.back());
  }
  auto expect = distribute_buffer_sizes(bytes, 5);
  for (std::size_t b = 0; b < p.num_blocks(); ++b) {
    EXPECT_EQ(p.blocks[b].rank, expect[b].second) << "block " << b;
    EXPECT_EQ(p.group_of(b).aligned_bytes, expect[b].first);
  }
  index_t total = 0;
  for (index_t r = 0; r < 5; ++r) total += p.rank_bytes(r);
  index_t all = 0;
  for (auto const& e : expect) all += e.first;
  EXPECT_EQ(total, all);
}

TEST(ShampooPlan, Errors) {
  auto message = [](auto f) {
    try {
      f();
    } catch (Error const& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  using Shapes = std::vector<std::vector<index_t>>;
  EXPECT_EQ(message([] {
              make_plan(PlanOptions<index_t, index_t>{0, 1, 1}, Shapes{{3}});
            }),
            "max_preconditioner_dim must be >= 1, got 0.");
  EXPECT_EQ(message([] {
              make_plan(PlanOptions<index_t, index_t>{4, 0, 1}, Shapes{{3}});
            }),
            "target_parameter_dimensionality must be >= 1, got 0.");
  EXPECT_EQ(message([] {
              make_plan(PlanOptions<index_t, index_t>{4, 1, 0}, Shapes{{3}});
            }),
            "the group size must be >= 1, got 0.");
  EXPECT_EQ(message([] {
              make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, Shapes{{3}, {2, -2}});
            }),
            "parameter 1 has shape (2,-2) with a negative extent.");
  EXPECT_EQ(
      message([] {
        make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, Shapes{{1, 1, 1, 1, 1, 1, 1, 1, 1}});
      }),
      "parameter 0 has rank 9; Shampoo plans take parameters of rank <= 8.");
  EXPECT_EQ(message([] { make_plan(plan_options(4_c, 1_c, 0), make_shape(3_c)); }),
            "the group size must be >= 1, got 0.");
}

template <class Plan>
std::string printed(Plan const& plan) {
  std::ostringstream os;
  os << plan;
  return os.str();
}

TEST(ShampooPlanPrint, ShowsMergedShapesBlocksGroupsAndOwners) {
  // shampoo_mlp's plan over two ranks: static, then the same plan at run time.
  constexpr auto plan =
      make_plan(plan_options(24_c, 1_c, 2), make_shape(32_c, 17_c), make_shape(4_c, 33_c));
  std::string const want =
      "Shampoo plan: 2 parameters, 4 blocks in 4 batch groups (max_preconditioner_dim 24, "
      "target_parameter_dimensionality 1, 2 ranks, f32)\n"
      "parameter  shape    merged   blocks\n"
      "0          (32,17)  (32,17)  2\n"
      "1          (4,33)   (4,33)   2\n"
      "group  block    count  preconditioners  ranks\n"
      "0      (24,17)  1      24x24 17x17      0\n"
      "1      (8,17)   1      8x8 17x17        1\n"
      "2      (4,24)   1      4x4 24x24        1\n"
      "3      (4,9)    1      4x4 9x9          1";
  EXPECT_EQ(printed(plan), want);
  EXPECT_EQ(printed(to_runtime(plan)), want);
}

TEST(ShampooPlanPrint, ShowsWhatTargetDimensionalityOneDoesToAMatrix) {
  // Meta's default target_parameter_dimensionality 1 merges a 16x8 weight into one 128-vector.
  EXPECT_EQ(printed(make_plan(plan_options(1024_c, 1_c), make_shape(16_c, 8_c))),
            "Shampoo plan: 1 parameter, 1 block in 1 batch group (max_preconditioner_dim 1024, "
            "target_parameter_dimensionality 1, 1 rank, f32)\n"
            "parameter  shape   merged  blocks\n"
            "0          (16,8)  (128)   1\n"
            "group  block  count  preconditioners  ranks\n"
            "0      (128)  1      128x128          0");
  EXPECT_NE(printed(make_plan(plan_options(1024_c, Int<2>{}), make_shape(16_c, 8_c)))
                .find("16x16 8x8"),
            std::string::npos);
}

}  // namespace
