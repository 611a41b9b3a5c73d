// materialize: an owning compact copy with each top-level mode flattened, static extents kept.
#include <gtest/gtest.h>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/materialize.hpp>
#include <tessel/tensor/views.hpp>

namespace {

using namespace tessel;

TEST(Materialize, CopiesAStridedViewCompactly) {
  auto t = make_host_tensor<float>(make_shape(3, 4));
  for (index_t i = 0; i < 12; ++i) t[i] = static_cast<float>(i);
  auto copy = materialize(transpose(t));  // (4, 3):(1, 4) -> (4, 3):(3, 1)
  EXPECT_TRUE(decltype(copy)::owning);
  EXPECT_EQ(to_vector(copy.stride()), (std::vector<std::int64_t>{3, 1}));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 3; ++c) EXPECT_EQ(copy(r, c), static_cast<float>(c * 4 + r));
  copy(0, 0) = 100.0f;  // a copy: writes do not reach the source
  EXPECT_EQ(t(0, 0), 0.0f);
}

TEST(Materialize, AMergedBlockViewBecomesGridByBlockSize) {
  auto t = make_host_tensor<int>(make_shape(Int<4>{}, Int<6>{}));
  for (index_t i = 0; i < 24; ++i) t[i] = static_cast<int>(i);
  auto merged = block_view(t, make_shape(Int<2>{}, Int<3>{}), BlockOrder::merged);
  auto copy = materialize(merged);  // sparsekit's (B0, B1, b0 * b1)
  static_assert(
      std::is_same_v<std::remove_cvref_t<decltype(copy.shape())>, tuple<Int<2>, Int<2>, Int<6>>>);
  // Block (1, 0), element 4 = in-block (1, 1): t(3, 1) = 19.
  EXPECT_EQ(copy(1, 0, 4), 19);
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 2; ++j)
      for (index_t k = 0; k < 6; ++k) EXPECT_EQ(copy(i, j, k), merged(i, j, k));
}

TEST(Materialize, ConstViewsGiveMutableCopies) {
  std::vector<double> v = {1, 2, 3};
  auto c = make_tensor(static_cast<double const*>(v.data()), make_shape(3));
  auto copy = materialize(c);
  static_assert(std::is_same_v<decltype(copy)::element_type, double>);
  copy(1) = 5.0;
  EXPECT_EQ(v[1], 2.0);
}

}  // namespace
