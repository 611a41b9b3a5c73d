// Tensor: element access, owning storage, slicing (keep / drop / range), bounds, and views that
// write through to the memory they view.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/tensor.hpp>

namespace {

using namespace tessel;

// A view of a static layout is a pointer plus its storage bound; the layout takes no space.
static_assert(sizeof(decltype(make_tensor(static_cast<float*>(nullptr),
                                          make_shape(Int<4>{}, Int<4>{})))) ==
              sizeof(float*) + sizeof(float*) + sizeof(index_t));
static_assert(TensorType<decltype(make_host_tensor<float>(make_shape(2, 3)))>);
static_assert(OwningTensor<decltype(make_host_tensor<float>(make_shape(2, 3)))>);
static_assert(!OwningTensor<decltype(make_tensor(static_cast<float*>(nullptr), make_shape(2)))>);
static_assert(!std::is_copy_constructible_v<decltype(make_host_tensor<float>(make_shape(2, 3)))>);

// Element access through a static layout in a constant expression.
constexpr float read_static() {
  float buf[6] = {0, 1, 2, 3, 4, 5};
  auto t = make_tensor(
      buf, make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<1>{}, Int<2>{})));
  return t(1, 2);
}
static_assert(read_static() == 5.0f);

std::vector<float> iota(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST(Tensor, ElementAccessFollowsTheLayout) {
  auto v = iota(12);
  auto t = make_tensor(v.data(), make_shape(3, 4));
  EXPECT_EQ(t(2, 1), 9.0f);
  EXPECT_EQ(t[7], 7.0f);
  t(0, 3) = -1.0f;
  EXPECT_EQ(v[3], -1.0f);
  EXPECT_EQ(t.ndim(), Int<2>{});
  EXPECT_EQ(t.numel(), 12);
  EXPECT_EQ(t.cosize(), 12);
}

TEST(Tensor, OwningTensorsAreZeroedAlignedAndMoveOnly) {
  auto t = make_host_tensor<double>(make_shape(5, 7));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % host_alignment, 0u);
  for (index_t i = 0; i < 35; ++i) EXPECT_EQ(t[i], 0.0);
  t(4, 6) = 3.0;
  auto moved = std::move(t);
  EXPECT_EQ(moved(4, 6), 3.0);
  // Storage covers the cosize of a strided layout.
  auto padded = make_host_tensor<float>(make_layout(make_shape(2, 3), make_stride(8, 1)));
  EXPECT_EQ(padded.view().engine().storage_size, 11);
}

TEST(Tensor, SlicesKeepOrDropModesAndWriteThrough) {
  auto t = make_host_tensor<float>(make_shape(Int<4>{}, Int<6>{}));
  for (index_t i = 0; i < 24; ++i) t[i] = static_cast<float>(i);
  auto col = t(_, 3);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(col.shape())>, tuple<Int<4>>>);
  EXPECT_EQ(col(2), 15.0f);
  auto row = t(1, _);
  EXPECT_EQ(row(5), 11.0f);
  auto sub = t(range(1, 3), range(Int<2>{}, Int<5>{}));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(get<1>(sub.shape()))>, Int<3>>);
  EXPECT_EQ(to_index(get<0>(sub.shape())), 2);
  EXPECT_EQ(sub(1, 2), 16.0f);
  sub(0, 0) = 100.0f;
  EXPECT_EQ(t(1, 2), 100.0f);
  col(0) = -3.0f;
  EXPECT_EQ(t(0, 3), -3.0f);
  auto scalar = t(2, 2);  // all integers: a reference, not a view
  static_assert(std::is_same_v<decltype(t(2, 2)), float&>);
  EXPECT_EQ(scalar, 14.0f);
}

TEST(Tensor, SlicingOutOfBoundsNamesTheModeAndExtent) {
  auto t = make_host_tensor<float>(make_shape(4, 6));
  try {
    (void)t(4, _);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "index 4 is out of bounds for mode 0 of extent 4.");
  }
  try {
    (void)t(_, range(2, 7));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "range(2, 7) is out of bounds for mode 1 of extent 6.");
  }
  try {
    (void)t.at(1, 6);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "coordinate (1,6) is out of bounds for a tensor of shape (4,6).");
  }
  EXPECT_EQ(&t.at(3, 5), &t(3, 5));
  EXPECT_EQ(&t.at(23), &t[23]);
}

TEST(Tensor, ViewsOfKnownStorageAreBoundsChecked) {
  std::vector<float> v(10);
  try {
    (void)make_tensor(std::span(v), make_shape(3, 4));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "a tensor with layout (3,4):(4,1) needs 12 elements but its storage holds 10.");
  }
  auto t = make_tensor(std::span(v), make_shape(2, 5));
  EXPECT_NO_THROW((void)t(1, range(0, 5)));
}

TEST(Tensor, RebindReseatsAView) {
  auto a = iota(6);
  auto b = iota(6);
  auto ta = make_tensor(a.data(), make_shape(2, 3));
  auto tb = make_tensor(b.data(), make_shape(2, 3));
  ta.rebind(tb);
  ta(0, 0) = 42.0f;
  EXPECT_EQ(b[0], 42.0f);
  EXPECT_EQ(a[0], 0.0f);
}

}  // namespace
