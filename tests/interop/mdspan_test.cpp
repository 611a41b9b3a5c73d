// cuda::std::mdspan interop: tensors as mdspans (layout_stride, layout_right) and mdspans as
// tensor views, static extents kept both ways, write-through and round trips.
#include <gtest/gtest.h>

#include <numeric>

#include <tessel/interop/mdspan.hpp>
#include <tessel/tessel.hpp>

#if defined(TESSEL_HAS_MDSPAN)

namespace {

using namespace tessel;

TEST(Mdspan, StridedTensorAsLayoutStride) {
  auto t = make_host_tensor<float>(make_shape(4, 6));
  std::iota(t.data(), t.data() + 24, 0.0f);
  auto m = to_mdspan(t(range(1, 3), range(2, 6)));
  static_assert(decltype(m)::rank() == 2);
  EXPECT_EQ(m.extent(0), 2);
  EXPECT_EQ(m.extent(1), 4);
  EXPECT_EQ(m.stride(0), 6);
  EXPECT_EQ(m.stride(1), 1);
  EXPECT_EQ(m(1, 3), t(2, 5));
  m(0, 0) = -1.0f;
  EXPECT_EQ(t(1, 2), -1.0f);
  auto mt = to_mdspan(transpose(t));
  EXPECT_EQ(mt(5, 1), t(1, 5));
}

TEST(Mdspan, StaticExtentsStayStatic) {
  auto t = make_host_tensor<int>(make_shape(Int<3>{}, 5));
  auto m = to_mdspan_right(t);
  static_assert(decltype(m)::static_extent(0) == 3);
  static_assert(decltype(m)::static_extent(1) == cuda::std::dynamic_extent);
  m(2, 4) = 7;
  EXPECT_EQ(t(2, 4), 7);
  auto back = make_tensor(m);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(get<0>(back.shape()))>, Int<3>>);
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back(2, 4), 7);
}

TEST(Mdspan, MdspansAsTensorViews) {
  std::vector<double> buf(12);
  std::iota(buf.begin(), buf.end(), 0.0);
  cuda::std::mdspan<double, cuda::std::dextents<index_t, 2>> right(buf.data(), 3, 4);
  auto a = make_tensor(right);
  EXPECT_EQ(a(2, 1), 9.0);
  cuda::std::mdspan<double, cuda::std::dextents<index_t, 2>, cuda::std::layout_left> left(
      buf.data(), 3, 4);
  auto b = make_tensor(left);  // column-major strides
  EXPECT_EQ(b(2, 1), buf[1 * 3 + 2]);
  auto c = make_host_tensor<double>(make_shape(3, 4));
  c = a + b;
  EXPECT_EQ(c(1, 2), a(1, 2) + b(1, 2));
  a = a * 2.0;  // writes into buf
  EXPECT_EQ(buf[11], 22.0);
  auto round = make_tensor(to_mdspan(b));
  EXPECT_EQ(to_vector(round.stride()), to_vector(b.stride()));
}

TEST(Mdspan, LayoutsAnMdspanCannotDescribe) {
  auto row = make_host_tensor<float>(make_shape(4));
  try {
    (void)to_mdspan(broadcast_to(row, make_shape(3, 4)));
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "a tensor with layout (3,4):(0,1) maps several coordinates to one element, which "
                 "an mdspan with layout_stride cannot describe.");
  }
  auto t = make_host_tensor<float>(make_shape(4, 6));
  try {
    (void)to_mdspan_right(t(_, range(0, 3)));
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "an mdspan with layout_right needs a compact row-major tensor, not one with "
                 "layout (4,3):(6,1).");
  }
}

}  // namespace

#else
TEST(Mdspan, NotAvailableWithoutCccl) {
  GTEST_SKIP() << "<cuda/std/mdspan> is not on the include path";
}
#endif
