// Eigen interop: Map and TensorMap views of tensors and tensor views of Eigen objects, both
// directions without copies (writes go through), strides kept, round trips, and the error for a
// TensorMap of a strided tensor.
#include <gtest/gtest.h>

#include <numeric>

#include <tessel/interop/eigen.hpp>
#include <tessel/tessel.hpp>

namespace {

using namespace tessel;

auto numbered(index_t rows, index_t cols) {
  auto t = make_host_tensor<float>(make_shape(rows, cols));
  std::iota(t.data(), t.data() + rows * cols, 0.0f);
  return t;
}

TEST(EigenMap, MatrixViewOfAStridedTensor) {
  auto t = numbered(4, 6);
  auto block = t(range(1, 3), range(2, 6));  // (2, 4):(6, 1)
  auto m = as_eigen(block);
  static_assert(decltype(m)::IsRowMajor);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 4);
  for (index_t r = 0; r < 2; ++r)
    for (index_t c = 0; c < 4; ++c) EXPECT_EQ(m(r, c), block(r, c));
  m(1, 3) = -1.0f;  // writes through to t
  EXPECT_EQ(t(2, 5), -1.0f);
  auto mt = as_eigen(transpose(t));  // column-major strides in a row-major Map
  EXPECT_EQ(mt(5, 1), t(1, 5));
  Eigen::MatrixXf product = as_eigen(t) * as_eigen(transpose(t));  // Eigen GEMM on tessel memory
  EXPECT_FLOAT_EQ(product(0, 1), 0 * 6 + 1 * 7 + 2 * 8 + 3 * 9 + 4 * 10 + 5 * 11);
}

TEST(EigenMap, VectorViewAndConstElements) {
  auto t = numbered(4, 6);
  auto col = as_eigen(t(_, 3));
  ASSERT_EQ(col.size(), 4);
  EXPECT_EQ(col(2), 15.0f);
  col *= 2.0f;
  EXPECT_EQ(t(3, 3), 42.0f);
  float const* cp = t.data();
  auto ct = make_tensor(cp, make_shape(4, 6));
  auto cm = as_eigen(ct);
  static_assert(std::is_const_v<std::remove_reference_t<decltype(*cm.data())>>);
  EXPECT_EQ(cm(1, 1), 7.0f);
}

TEST(EigenMap, TensorViewsOfEigenObjects) {
  Eigen::Matrix<float, 3, 5, Eigen::RowMajor> rm;
  Eigen::Matrix<float, 3, 5, Eigen::ColMajor> cm;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) rm(r, c) = cm(r, c) = float(10 * r + c);
  auto a = from_eigen(rm);
  auto b = from_eigen(cm);  // column-major strides: the same element (r, c)
  EXPECT_EQ(to_vector(a.stride()), (std::vector<std::int64_t>{5, 1}));
  EXPECT_EQ(to_vector(b.stride()), (std::vector<std::int64_t>{1, 3}));
  auto sum = make_host_tensor<float>(make_shape(3, 5));
  sum = a + b;
  for (index_t r = 0; r < 3; ++r)
    for (index_t c = 0; c < 5; ++c) EXPECT_EQ(sum(r, c), 2.0f * float(10 * r + c));
  b = b * 0.0f + 1.0f;  // writes into the Eigen matrix
  EXPECT_EQ(cm(2, 4), 1.0f);
  auto blk = from_eigen(cm.block(1, 1, 2, 3));  // a Block temporary is a view
  blk = 5.0f;
  EXPECT_EQ(cm(2, 3), 5.0f);
  EXPECT_EQ(cm(0, 3), 1.0f);
}

TEST(EigenMap, RoundTrip) {
  auto t = numbered(3, 4);
  auto back = from_eigen(as_eigen(t(_, range(1, 4))));
  EXPECT_EQ(back.data(), &t(0, 1));
  EXPECT_EQ(to_vector(back.stride()), (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(back(2, 2), t(2, 3));
}

TEST(EigenTensorMap, RankNRowMajorAndBack) {
  auto t = make_host_tensor<double>(make_shape(2, 3, 4));
  std::iota(t.data(), t.data() + 24, 0.0);
  auto tm = as_eigen_tensor(t);
  static_assert(static_cast<int>(decltype(tm)::Layout) == static_cast<int>(Eigen::RowMajor));
  EXPECT_EQ(tm(1, 2, 3), t(1, 2, 3));
  tm(0, 1, 2) = -5.0;
  EXPECT_EQ(t(0, 1, 2), -5.0);
  Eigen::Tensor<double, 1, Eigen::RowMajor> sums = tm.sum(Eigen::array<Eigen::Index, 2>{1, 2});
  auto mine = make_host_tensor<double>(make_shape(2));
  mine = sum(sum(t, mode<2>), mode<1>);
  EXPECT_DOUBLE_EQ(mine(0), sums(0));
  EXPECT_DOUBLE_EQ(mine(1), sums(1));
  auto back = from_eigen(tm);
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back(1, 0, 3), t(1, 0, 3));
  Eigen::Tensor<float, 3> col(2, 3, 4);  // Eigen's default: column-major
  col.setZero();
  col(1, 2, 3) = 9.0f;
  auto cv = from_eigen(col);
  EXPECT_EQ(cv(1, 2, 3), 9.0f);
  EXPECT_EQ(to_vector(cv.stride()), (std::vector<std::int64_t>{1, 2, 6}));
}

TEST(EigenTensorMap, StridedTensorsAreRefused) {
  auto t = make_host_tensor<float>(make_shape(4, 6));
  try {
    (void)as_eigen_tensor(t(_, range(0, 3)));
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "an Eigen::TensorMap needs a compact row-major tensor, not one with layout "
                 "(4,3):(6,1).");
  }
}

}  // namespace
