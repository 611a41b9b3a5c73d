// The conveniences every tensor library has: printing (NumPy-style, summarized past 1000
// elements), iteration over the elements in logical order, random fills, and .npy files to and
// from tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tessel/io.hpp>
#include <tessel/tessel.hpp>

#include "io/io_test_support.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::literals;
using test::error_of;

template <class T>
std::string text(T const& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(TensorPrint, RowsLineUpInOneNumberFormat) {
  auto t = make_host_tensor<float>(make_shape(2_c, 3_c));
  std::iota(t.begin(), t.end(), 0.0f);
  t(1, 2) = -2.5f;
  EXPECT_EQ(text(t),
            "tensor f32 (_2,_3):(_3,_1)\n"
            "[[ 0.0000,  1.0000,  2.0000],\n"
            " [ 3.0000,  4.0000, -2.5000]]");
}

TEST(TensorPrint, ViewsPrintTheirLogicalOrder) {
  auto t = make_host_tensor<std::int32_t>(make_shape(2, 3));
  std::iota(t.begin(), t.end(), 0);
  EXPECT_EQ(text(transpose(t.view())),
            "tensor i32 (3,2):(_1,3)\n"
            "[[0, 3],\n"
            " [1, 4],\n"
            " [2, 5]]");
}

TEST(TensorPrint, WholeFloatsRank3AndSpecialValues) {
  auto c = make_host_tensor<double>(make_shape(2, 1, 2));
  std::iota(c.begin(), c.end(), 8.0);
  EXPECT_EQ(text(c),
            "tensor f64 (2,1,2):(2,2,_1)\n"
            "[[[ 8.,  9.]],\n"
            "\n"
            " [[10., 11.]]]");
  auto w = make_host_tensor<half>(make_shape(3));
  w[0] = half(1e-5f);
  w[1] = half(2.0f);
  w[2] = half(-std::numeric_limits<float>::infinity());
  EXPECT_EQ(text(w), "tensor f16 (3):(_1)\n[1.0014e-05, 2.0000e+00,       -inf]");
  auto b = make_host_tensor<bool>(make_shape(2));
  b[1] = true;
  EXPECT_EQ(text(b), "tensor bool (2):(_1)\n[false,  true]");
  EXPECT_EQ(text(make_host_tensor<float>(make_shape(0, 4))), "tensor f32 (0,4):(4,_1)\n[]");
}

TEST(TensorPrint, LargeTensorsAreSummarized) {
  auto t = make_host_tensor<std::int64_t>(make_shape(40, 50));
  std::iota(t.begin(), t.end(), std::int64_t{0});
  EXPECT_EQ(text(t),
            "tensor i64 (40,50):(50,_1)\n"
            "[[   0,    1,    2, ...,   47,   48,   49],\n"
            " [  50,   51,   52, ...,   97,   98,   99],\n"
            " [ 100,  101,  102, ...,  147,  148,  149],\n"
            " ...,\n"
            " [1850, 1851, 1852, ..., 1897, 1898, 1899],\n"
            " [1900, 1901, 1902, ..., 1947, 1948, 1949],\n"
            " [1950, 1951, 1952, ..., 1997, 1998, 1999]]");
  std::ostringstream os;
  print_tensor(os, make_host_tensor<float>(make_shape(4)), {.threshold = 3, .edge_items = 1});
  EXPECT_EQ(os.str(), "tensor f32 (4):(_1)\n[0., ..., 0.]");
}

TEST(TensorPrint, DeviceTensorsPrintTheirHeaderOnly) {
  auto d = make_device_tensor(reinterpret_cast<float*>(std::uintptr_t{256}), make_shape(2, 2));
  EXPECT_EQ(text(d),
            "tensor f32 (2,2):(2,_1) in device memory (copy it to the host to print its elements)");
}

TEST(TensorIteration, VisitsTheLogicalRowMajorOrderOfAnyView) {
  auto t = make_host_tensor<int>(make_shape(3_c, 4_c));
  std::iota(t.begin(), t.end(), 0);
  std::vector<int> seen(transpose(t.view()).begin(), transpose(t.view()).end());
  EXPECT_EQ(seen, (std::vector<int>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  auto column = t(_, 2);
  EXPECT_EQ(std::accumulate(column.begin(), column.end(), 0), 2 + 6 + 10);
  for (int& x : t(1, _)) x = -x;
  EXPECT_EQ(t(1, 3), -7);
  static_assert(std::random_access_iterator<decltype(t.begin())>);
  std::ranges::sort(t);
  EXPECT_TRUE(std::ranges::is_sorted(t));
}

TEST(TensorFill, SeededAndIndependentOfTheLayout) {
  std::mt19937 g1(7), g2(7);
  auto a = make_host_tensor<float>(make_shape(30, 40));
  auto storage = make_host_tensor<float>(make_shape(40, 30));
  fill_normal(a, g1, 1.0, 2.0);
  fill_normal(transpose(storage.view()), g2, 1.0, 2.0);  // the same values, stored transposed
  for (index_t i = 0; i < 30; ++i)
    for (index_t j = 0; j < 40; ++j) ASSERT_EQ(a(i, j), storage(j, i));
  double const mean = std::accumulate(a.begin(), a.end(), 0.0) / 1200.0;
  EXPECT_NEAR(mean, 1.0, 0.2);  // 6 standard errors of the mean
  auto u = make_host_tensor<bfloat16>(make_shape(1000));
  fill_uniform(u, g1, -0.5, 0.25);
  for (bfloat16 x : u) {
    EXPECT_GE(static_cast<float>(x), -0.5f);
    EXPECT_LE(static_cast<float>(x), 0.25f);  // rounding may reach the bound itself
  }
}

TEST(TensorFill, BadParametersWriteNothing) {
  std::mt19937 g(1);
  auto t = make_host_tensor<double>(make_shape(3));
  t[0] = 42;
  EXPECT_EQ(error_of([&] { fill_uniform(t, g, 1.0, 0.0); }),
            "fill_uniform needs finite bounds with lo <= hi, got lo 1 and hi 0.");
  EXPECT_EQ(error_of([&] { fill_normal(t, g, 0.0, -1.0); }),
            "fill_normal needs a finite mean and a finite stddev >= 0, got mean 0 and stddev -1.");
  EXPECT_EQ(t[0], 42.0);
}

TEST(TensorNpy, SaveAViewLoadItBack) {
  test_support::TempDir dir;
  auto t = make_host_tensor<float>(make_shape(2_c, 3_c));
  std::iota(t.begin(), t.end(), 1.0f);
  save_npy(dir / "t.npy", transpose(t.view()));  // written contiguous, shape (3, 2)
  auto back = load_npy<float>(dir / "t.npy");
  EXPECT_EQ(to_vector(back.shape()), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(std::vector<float>(back.begin(), back.end()), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  auto fixed = load_npy<double, 2>(dir / "t.npy");  // converted, static rank
  EXPECT_EQ(fixed(2, 1), 6.0);
  NpyArray const raw = read_npy(dir / "t.npy");
  EXPECT_EQ(raw.dtype, DType::f32);
  EXPECT_EQ(error_of([&] { (void)load_npy<float, 3>(dir / "t.npy"); }),
            (dir / "t.npy").string() +
                " holds an array of shape (3,2) but load_npy<f32, 3> reads arrays of rank 3.");
  write_npy(dir / "r9.npy", {1, 1, 1, 1, 1, 1, 1, 1, 2}, std::vector<float>{1, 2});
  EXPECT_EQ(
      error_of([&] { (void)load_npy<float>(dir / "r9.npy"); }),
      (dir / "r9.npy").string() + " holds an array of rank 9; load_npy reads arrays of rank <= 8.");
  EXPECT_EQ((load_npy<float, 9>(dir / "r9.npy")(0, 0, 0, 0, 0, 0, 0, 0, 1)), 2.0f);
  auto flags = make_host_tensor<bool>(make_shape(2));
  flags[1] = true;
  save_npy(dir / "b.npy", flags);
  auto fb = load_npy<bool, 1>(dir / "b.npy");
  EXPECT_FALSE(fb[0]);
  EXPECT_TRUE(fb[1]);
}

}  // namespace
