// The N:M checker on satisfying and violating tensors: the first violating group and its sentence.
#include <gtest/gtest.h>

#include <tessel/sparsity/nm_check.hpp>
#include <tessel/sparsity/nonzeros.hpp>
#include <tessel/tensor/views.hpp>

#include "test_support.hpp"

namespace {

using namespace tessel;
using sparsity_test::error_of;

auto matrix(std::vector<float> const& v, index_t rows, index_t cols) {
  auto t = make_host_tensor<float>(make_shape(rows, cols));
  for (index_t i = 0; i < rows * cols; ++i) t[i] = v[static_cast<std::size_t>(i)];
  return t;
}

TEST(NMCheck, SatisfyingTensors) {
  auto t = matrix({1, 0, 2, 0, 0, 0, 0, 0,  //
                   0, 3, 0, 4, 5, 0, 0, 6},
                  2, 8);
  EXPECT_TRUE(satisfies(t, NMPattern{2, 4}));
  EXPECT_FALSE(first_violation(t, NMPattern{2, 4}).has_value());
  EXPECT_NO_THROW(check_nm(t, NMPattern{2, 4}));
  EXPECT_TRUE(satisfies(t, NMPattern{4, 8}));
  EXPECT_FALSE(satisfies(t, NMPattern{1, 4}));
  EXPECT_EQ(count_nonzero(t), 6);
}

TEST(NMCheck, TheFirstViolatingGroupInRowMajorOrder) {
  auto t = matrix({1, 0, 2, 0, 1, 1, 1, 0,  //
                   1, 1, 1, 1, 0, 0, 0, 0},
                  2, 8);
  auto v = first_violation(t, NMPattern{2, 4});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->group_start, (std::vector<index_t>{0, 4}));
  EXPECT_EQ(v->nonzeros, 3);
  EXPECT_EQ(to_string(*v),
            "the group at (0,4) along mode 1 has 3 nonzero elements; a 2:4 pattern allows at "
            "most 2.");
  EXPECT_EQ(error_of([&] { check_nm(t, NMPattern{2, 4}); }), to_string(*v));
  // Down the columns the first bad group is column 0 (rows 0-1, both nonzero) for 1:2.
  auto down = first_violation<0>(t, NMPattern{1, 2});
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->group_start, (std::vector<index_t>{0, 0}));
  EXPECT_EQ(down->mode, 0u);
}

TEST(NMCheck, NanIsNonzeroAndNegativeZeroIsZero) {
  auto t = matrix({NAN, -0.0f, 1, 1}, 1, 4);
  EXPECT_FALSE(satisfies(t, NMPattern{2, 4}));
  t(0, 0) = 0.0f;
  EXPECT_TRUE(satisfies(t, NMPattern{2, 4}));
}

TEST(NMCheck, GroupsOfBlocks) {
  auto t = matrix({1, 0, 0, 0, 1, 0, 0, 1,  //
                   0, 0, 0, 0, 0, 0, 0, 0},
                  2, 8);
  // Blocks (1, 2): row 0 has blocks (1,0) (0,0) (1,0) (0,1): 3 nonzero blocks of 4.
  EXPECT_TRUE(satisfies(t, NMPattern{3, 4}, make_shape(1, 2)));
  EXPECT_FALSE(satisfies(t, NMPattern{2, 4}, make_shape(1, 2)));
  EXPECT_TRUE(satisfies(t, NMPattern{2, 4}));  // as elements: 1 and 2 nonzeros per group of 4
  auto v = first_violation(t, NMPattern{1, 2}, make_shape(1, 2));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->group_start, (std::vector<index_t>{0, 4}));  // blocks 2-3 of row 0
  EXPECT_EQ(to_string(*v),
            "the group at (0,4) along mode 1 has 2 nonzero blocks; a 1:2 pattern allows at most "
            "1.");
}

TEST(NMCheck, ShapeErrors) {
  auto t = matrix(std::vector<float>(12, 1.0f), 2, 6);
  EXPECT_EQ(error_of([&] {
              (void)satisfies(t, NMPattern{2, 4});
            }),
            "a 2:4 pattern along mode 1 needs a multiple of 4 elements along that mode, but the "
            "tensor has shape (2,6).");
}

}  // namespace

namespace {

using namespace tessel;

TEST(NMCheck, LargeGroupsWithAnyExecutor) {
  // 16:64 along the rows of a (6, 256) tensor: four groups per row; the first violation is the
  // group at (2,128) with 17 nonzeros, and a later one at (5,0) must not hide it.
  auto t = make_host_tensor<float>(make_shape(6, 256));
  for (index_t r = 0; r < 6; ++r)
    for (index_t c = 0; c < 256; c += 4) t(r, c) = 1.0f;  // 16 per group: allowed
  t(2, 129) = -2.0f;
  t(5, 1) = 3.0f;
  NMPattern const p{16, 64};
  for (auto v :
       {first_violation(t, p, exec::Serial{}), first_violation(t, p, exec::OpenMP{.threads = 2}),
        first_violation(t, p, exec::Auto{.parallel_threshold = 0})}) {
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->group_start, (std::vector<index_t>{2, 128}));
    EXPECT_EQ(v->nonzeros, 17);
  }
  t(2, 129) = 0.0f;
  t(5, 1) = 0.0f;
  EXPECT_TRUE(satisfies(t, p, exec::OpenMP{.threads = 2}));
  EXPECT_EQ(count_nonzero(t, exec::OpenMP{.threads = 2}), 6 * 64);
  EXPECT_DOUBLE_EQ(density(t, exec::Serial{}), 0.25);
}

TEST(NMCheck, GroupsOfBlocksAlongTheFirstModeOfAView) {
  // Blocks (2, 1) of T = W^T, grouped 2 at a time down T's columns: W(0, 0) and W(0, 2) make
  // blocks (0, 0) and (1, 0) of T nonzero, the group at (0, 0); W(2, 1) only block (0, 2).
  auto t = matrix({1, 0, 1, 0,  //
                   0, 0, 0, 0,  //
                   0, 1, 0, 0,  //
                   0, 0, 0, 0},
                  4, 4);
  auto v = first_violation<0>(transpose(t), NMPattern{1, 2}, make_shape(2, 1));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->group_start, (std::vector<index_t>{0, 0}));
  EXPECT_EQ(v->mode, 0u);
  EXPECT_TRUE(v->blocks);
  EXPECT_TRUE(satisfies<0>(transpose(t), NMPattern{2, 2}, make_shape(2, 1)));
}

}  // namespace
