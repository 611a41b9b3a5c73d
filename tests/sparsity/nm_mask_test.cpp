// N:M masks: a hand-worked 2:4 case, random matrices (kept count per group, the kept are the
// largest), other modes through views, coupled tensors, groups of blocks, static types, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <tessel/sparsity/nm_check.hpp>
#include <tessel/sparsity/nm_mask.hpp>
#include <tessel/sparsity/nonzeros.hpp>
#include <tessel/tensor/materialize.hpp>
#include <tessel/tensor/views.hpp>

#include "test_support.hpp"

namespace {

using namespace tessel;
using sparsity_test::error_of;
using sparsity_test::random_matrix;
using sparsity_test::values;

constexpr NMPattern<Int<2>, Int<4>> p24{};

// The mask of a static tensor with a static pattern is static; so is a block mask's grid.
using StaticW = decltype(make_host_tensor<float>(make_shape(Int<8>{}, Int<16>{})));
static_assert(std::is_same_v<
              std::remove_cvref_t<decltype(nm_mask(std::declval<StaticW const&>(), p24).shape())>,
              tuple<Int<8>, Int<16>>>);
static_assert(
    std::is_same_v<std::remove_cvref_t<decltype(nm_mask(std::declval<StaticW const&>(), p24,
                                                        make_shape(Int<1>{}, Int<2>{}))
                                                    .shape())>,
                   tuple<Int<8>, Int<8>>>);

// For every group of 4 along the rows of w: how many entries the mask keeps, and whether every
// kept |w| is >= every dropped |w|.
template <class W, class Mask>
void expect_two_largest_of_four(W const& w, Mask const& mask) {
  index_t rows = to_index(size(get<0>(w.shape())));
  index_t cols = to_index(size(get<1>(w.shape())));
  for (index_t r = 0; r < rows; ++r)
    for (index_t g = 0; g < cols; g += 4) {
      int count = 0;
      float min_kept = INFINITY, max_dropped = 0.0f;
      for (index_t c = g; c < g + 4; ++c) {
        if (mask(r, c)) {
          ++count;
          min_kept = std::min(min_kept, std::fabs(w(r, c)));
        } else {
          max_dropped = std::max(max_dropped, std::fabs(w(r, c)));
        }
      }
      EXPECT_EQ(count, 2) << "row " << r << " group " << g;
      EXPECT_GE(min_kept, max_dropped) << "row " << r << " group " << g;
    }
}

TEST(NMMask, TwoFourByHand) {
  auto w = make_host_tensor<float>(make_shape(2, 8));
  float v[] = {1, -5, 3, 0.5f, 0, 0, -2, 0, 7, 7, 7, 7, 1, 2, 3, 4};
  for (index_t i = 0; i < 16; ++i) w[i] = v[i];
  auto keep = apply_nm(w, NMPattern{2, 4});
  // |-5| and 3 survive; (0, 0, -2, 0) keeps -2 and the first 0; ties keep the lower index.
  EXPECT_EQ(values(w), (std::vector<float>{0, -5, 3, 0, 0, 0, -2, 0, 7, 7, 0, 0, 0, 0, 3, 4}));
  EXPECT_TRUE(keep(0, 4));
  EXPECT_FALSE(keep(0, 5));
  EXPECT_TRUE(satisfies(w, p24));
}

TEST(NMMask, RandomMatricesKeepTheTwoLargestOfEveryFour) {
  for (unsigned seed : {1u, 2u, 3u}) {
    auto w = random_matrix(16, 32, seed);
    auto original = values(w);
    auto mask = nm_mask(w, p24);
    expect_two_largest_of_four(w, mask);
    apply_keep_mask(w, mask);
    EXPECT_TRUE(satisfies(w, p24));
    EXPECT_EQ(count_nonzero(w), 16 * 32 / 2);  // random values have no zeros
    EXPECT_DOUBLE_EQ(density(w), 0.5);
    for (index_t i = 0; i < 16 * 32; ++i)
      EXPECT_EQ(w[i], mask[i] ? original[static_cast<std::size_t>(i)] : 0.0f);
  }
}

TEST(NMMask, OtherModesThroughTheModeArgumentOrAView) {
  auto w = random_matrix(8, 6, 11);
  auto down = nm_mask<0>(w, p24);              // groups of 4 down each column
  auto via_view = nm_mask(transpose(w), p24);  // the same groups, seen as rows of W^T
  for (index_t r = 0; r < 8; ++r)
    for (index_t c = 0; c < 6; ++c) EXPECT_EQ(down(r, c), via_view(c, r));
  expect_two_largest_of_four(transpose(w), via_view);
  apply_nm(transpose(w), p24);  // prunes W in place through the view
  EXPECT_TRUE(satisfies<0>(w, p24));
  EXPECT_EQ(count_nonzero(w), 8 * 6 / 2);
}

TEST(NMMask, GroupsInsideBlocksThroughABlockView) {
  auto w = random_matrix(4, 8, 5);
  auto reordered = block_view(w, make_shape(4, 2), BlockOrder::reordered);  // (1, 4, 4, 2)
  apply_nm<2>(reordered, p24);  // groups of 4 along b0: down each column of every block
  EXPECT_TRUE(satisfies<0>(w, p24));
}

TEST(NMMask, CoupledTensorsShareOneMask) {
  auto a = random_matrix(4, 8, 21);
  auto b = random_matrix(8, 4, 22);  // its transpose is coupled to a
  auto a0 = values(a);
  auto bt0 = materialize(transpose(b));
  auto keep = apply_nm_coupled(p24, a, transpose(b));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 8; ++c) {
      EXPECT_EQ(a(r, c) != 0.0f, keep(r, c));
      EXPECT_EQ(b(c, r) != 0.0f, keep(r, c));
    }
  // The kept pair of every group has the largest |a| + |b^T|.
  for (index_t r = 0; r < 4; ++r)
    for (index_t g = 0; g < 8; g += 4) {
      float min_kept = INFINITY, max_dropped = 0.0f;
      for (index_t c = g; c < g + 4; ++c) {
        float s = std::fabs(a0[static_cast<std::size_t>(r * 8 + c)]) + std::fabs(bt0(r, c));
        if (keep(r, c))
          min_kept = std::min(min_kept, s);
        else
          max_dropped = std::max(max_dropped, s);
      }
      EXPECT_GE(min_kept, max_dropped);
    }
  EXPECT_TRUE(satisfies(a, p24));
  EXPECT_TRUE(satisfies<0>(b, p24));
}

TEST(NMMask, GroupsOfBlocks) {
  auto w = random_matrix(4, 16, 9);
  auto scores = block_scores(w, make_shape(1, 2));  // (4, 8) L2 norms of pairs
  auto keep = apply_nm(w, p24, make_shape(1, 2));   // 2 of every 4 pairs along a row
  EXPECT_EQ(to_vector(keep.shape()), (std::vector<std::int64_t>{4, 8}));
  for (index_t r = 0; r < 4; ++r)
    for (index_t g = 0; g < 8; g += 4) {
      int count = 0;
      float min_kept = INFINITY, max_dropped = 0.0f;
      for (index_t j = g; j < g + 4; ++j) {
        if (keep(r, j)) {
          ++count;
          min_kept = std::min(min_kept, scores(r, j));
        } else {
          max_dropped = std::max(max_dropped, scores(r, j));
        }
        EXPECT_EQ(w(r, 2 * j) != 0.0f, keep(r, j));
        EXPECT_EQ(w(r, 2 * j + 1) != 0.0f, keep(r, j));
      }
      EXPECT_EQ(count, 2);
      EXPECT_GE(min_kept, max_dropped);
    }
  EXPECT_TRUE(satisfies(w, p24, make_shape(1, 2)));
  EXPECT_FALSE(satisfies(w, p24));  // 4 nonzero elements in some groups of 4 elements
}

TEST(NMMask, ErrorsComeBeforeAnyWrite) {
  auto w = random_matrix(4, 10, 3);
  auto before = values(w);
  EXPECT_EQ(error_of([&] {
              (void)apply_nm(w, NMPattern{2, 4});
            }),
            "a 2:4 pattern along mode 1 needs a multiple of 4 elements along that mode, but the "
            "tensor has shape (4,10).");
  EXPECT_EQ(error_of([&] {
              (void)apply_nm(w, NMPattern{5, 4});
            }),
            "N:M pattern 5:4 is invalid; it needs 0 <= N <= M and M > 0.");
  EXPECT_EQ(error_of([&] {
              (void)apply_nm(w, NMPattern{2, 4}, make_shape(2, 2));
            }),
            "a 2:4 pattern of blocks along mode 1 needs a multiple of 4 blocks along that mode, "
            "but the block grid has shape (2,5).");
  auto other = random_matrix(4, 8, 4);
  auto other_before = values(other);
  EXPECT_EQ(error_of([&] { (void)apply_nm_coupled(p24, other, w); }),
            "coupled tensors have shapes (4,8) and (4,10); every coupled tensor needs the same "
            "shape.");
  EXPECT_EQ(values(w), before);
  EXPECT_EQ(values(other), other_before);
}

TEST(NMMask, KeepMasksOfTheWrongShapeWriteNothing) {
  auto w = random_matrix(8, 16, 6);
  auto before = values(w);
  auto keep = make_host_tensor<bool>(make_shape(3, 4));
  EXPECT_EQ(error_of([&] { apply_keep_mask(w, keep, make_shape(2, 4)); }),
            "keep mask grid has shape (3,4) but tensor (8,16) with blocks (2,4) needs (4,4).");
  EXPECT_EQ(error_of([&] { apply_keep_mask(w, keep); }),
            "keep mask grid has shape (3,4) but tensor (8,16) with blocks (1,1) needs (8,16).");
  EXPECT_EQ(values(w), before);
}

}  // namespace

namespace {

using namespace tessel;

TEST(NMMask, EveryExecutorGivesTheSameMask) {
  auto w = random_matrix(64, 256, 31);
  auto b = random_matrix(256, 64, 32);
  auto serial = nm_mask(w, p24, exec::Serial{});
  auto threads = nm_mask(w, p24, exec::OpenMP{.threads = 2});
  auto wide = nm_mask(w, NMPattern{16, 64}, exec::Auto{.parallel_threshold = 0});  // large groups
  auto wide_serial = nm_mask(w, NMPattern{16, 64}, exec::Serial{});
  auto coupled = nm_mask_coupled(p24, w, transpose(b), exec::OpenMP{.threads = 2});
  auto coupled_serial = nm_mask_coupled(p24, w, transpose(b));
  auto blocks = nm_mask(w, p24, make_shape(2, 2), L1Norm{}, exec::OpenMP{.threads = 2});
  auto blocks_serial = nm_mask(w, p24, make_shape(2, 2), L1Norm{}, exec::Serial{});
  for (index_t i = 0; i < 64 * 256; ++i) {
    ASSERT_EQ(serial[i], threads[i]);
    ASSERT_EQ(wide[i], wide_serial[i]);
    ASSERT_EQ(coupled[i], coupled_serial[i]);
  }
  for (index_t i = 0; i < 32 * 128; ++i) ASSERT_EQ(blocks[i], blocks_serial[i]);
  expect_two_largest_of_four(w, serial);
  // Large groups keep exactly 16 of 64, the largest |w|.
  for (index_t r = 0; r < 64; ++r)
    for (index_t g = 0; g < 256; g += 64) {
      int count = 0;
      float min_kept = INFINITY, max_dropped = 0.0f;
      for (index_t c = g; c < g + 64; ++c) {
        float const a = std::fabs(w(r, c));
        if (wide(r, c)) {
          ++count;
          min_kept = std::min(min_kept, a);
        } else {
          max_dropped = std::max(max_dropped, a);
        }
      }
      EXPECT_EQ(count, 16);
      EXPECT_GE(min_kept, max_dropped);
    }
}

TEST(NMMask, ApplyWithAnExecutorPrunesInPlace) {
  auto a = random_matrix(8, 16, 41);
  auto b = random_matrix(16, 8, 42);
  auto keep = apply_nm_coupled(p24, a, transpose(b), exec::OpenMP{.threads = 2});
  EXPECT_TRUE(satisfies(a, p24, exec::Serial{}));
  EXPECT_TRUE(satisfies<0>(b, p24));
  for (index_t r = 0; r < 8; ++r)
    for (index_t c = 0; c < 16; ++c) EXPECT_EQ(a(r, c) != 0.0f, keep(r, c));
  auto w = random_matrix(8, 16, 43);
  auto block_keep = apply_nm(w, p24, make_shape(1, 2), exec::Serial{});
  EXPECT_TRUE(satisfies(w, p24, make_shape(1, 2), exec::OpenMP{.threads = 2}));
  EXPECT_EQ(count_nonzero(w), 8 * 16 / 2);
  EXPECT_EQ(to_vector(block_keep.shape()), (std::vector<std::int64_t>{8, 8}));
}

}  // namespace
