// ndim / numel / storage_offset / linear_offset / to_param_rc, and every error they raise.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/view_queries.hpp>
#include <tessel/tensor/views.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;

static_assert(std::is_same_v<decltype(ndim(make_tensor(static_cast<float*>(nullptr),
                                                       make_shape(Int<2>{}, Int<3>{})))),
                             Int<2>>);
static_assert(std::is_same_v<decltype(numel(make_tensor(static_cast<float*>(nullptr),
                                                        make_shape(Int<2>{}, Int<3>{})))),
                             Int<6>>);

using tessel::test::error_of;

TEST(ViewQueries, NdimAndNumelMatchTheMembers) {
  auto t = make_host_tensor<float>(make_shape(3, 5));
  EXPECT_EQ(ndim(t), t.ndim());
  EXPECT_EQ(numel(t), 15);
  EXPECT_EQ(cosize(t(_, range(1, 3))), 2 * 5 + 2);
}

TEST(ViewQueries, OffsetsCountFromTheOriginOfTheRoot) {
  std::vector<float> buffer(40);
  auto raw = make_tensor(buffer.data() + 8, make_shape(4, 8));  // the origin is the pointer given
  EXPECT_EQ(storage_offset(raw), 0);
  EXPECT_EQ(linear_offset(raw, 1, 2), 10);
  auto col = raw(_, 5);
  EXPECT_EQ(storage_offset(col), 5);
  EXPECT_EQ(linear_offset(col, 3), 29);
  EXPECT_EQ(&raw(0, 0) + linear_offset(col, 3), &col(3));
  auto owned = make_host_tensor<int>(make_shape(4, 8));
  auto block = owned(range(2, 4), range(4, 8));
  EXPECT_EQ(storage_offset(block), 20);
  EXPECT_EQ(linear_offset(block, 1, 3), 31);
  EXPECT_EQ(linear_offset(block, 7), 31);  // a 1-D row-major index, as t(i)
}

TEST(ViewQueries, LinearOffsetRejectsOutOfBoundsCoordinates) {
  auto t = make_host_tensor<float>(make_shape(4, 8));
  EXPECT_EQ(error_of([&] { (void)linear_offset(t, 4, 0); }),
            "coordinate (4,0) is out of bounds for a tensor of shape (4,8).");
  EXPECT_EQ(error_of([&] { (void)linear_offset(t, 32); }),
            "coordinate (32) is out of bounds for a tensor of shape (4,8).");
}

TEST(ViewQueries, ToParamRcMapsViewCoordinatesIntoTheParameter) {
  auto w = make_host_tensor<float>(make_shape(4, 8));
  auto tr = transpose(w);
  EXPECT_EQ(to_param_rc(tr, make_shape(4, 8), 5, 3), (RowCol{3, 5}));
  EXPECT_EQ(to_param_rc(tr, w, 5, 3), (RowCol{3, 5}));
  // A sparsekit-style custom view: every other column, as (4, 4):(8, 2).
  auto odd = view_as(w, make_layout(make_shape(4, 4), make_stride(8, 2)));
  EXPECT_EQ(to_param_rc(odd, w, 2, 3), (RowCol{2, 6}));
  // A parameter that is itself a slice of a larger buffer: offsets count from its first element.
  std::vector<float> fused(64);
  auto all = make_tensor(std::span(fused), make_shape(8, 8));
  auto second = all(range(4, 8), _);  // rows 4..7 as the parameter
  EXPECT_EQ(to_param_rc(transpose(second), second, 2, 1), (RowCol{1, 2}));
}

TEST(ViewQueries, ToParamRcErrors) {
  std::vector<float> buffer(64);
  auto raw = make_tensor(buffer.data(), make_shape(4, 8));
  EXPECT_EQ(error_of([&] { (void)to_param_rc(raw, make_shape(4, 8), 0, 0); }),
            "to_param_rc needs a view of storage of known extent, but this view of shape (4,8) was "
            "made from a raw pointer; make it from a std::span or an owning tensor.");
  auto padded = make_host_tensor<float>(make_layout(make_shape(4, 8), make_stride(16, 1)));
  EXPECT_EQ(error_of([&] { (void)to_param_rc(padded, make_shape(4, 8), 0, 0); }),
            "parameter shape (4,8) has 32 elements but the view's storage holds 56; to_param_rc "
            "needs storage that is exactly the compact parameter.");
  EXPECT_EQ(error_of([&] { (void)to_param_rc(padded, padded, 0, 0); }),
            "parameter of shape (4,8) has strides (16,1); to_param_rc needs a compact row-major "
            "parameter, strides (8,1).");
  auto w = make_host_tensor<float>(make_shape(4, 8));
  auto other = make_host_tensor<float>(make_shape(4, 8));
  EXPECT_EQ(error_of([&] { (void)to_param_rc(other, w, 0, 0); }),
            "the view of shape (4,8) does not view the storage of the parameter of shape (4,8).");
  auto all = make_tensor(std::span(buffer), make_shape(8, 8));
  auto param = all(range(0, 4), _);
  EXPECT_EQ(error_of([&] { (void)to_param_rc(all, param, 5, 0); }),
            "coordinate (5,0) of the view reaches element 40 from the parameter's start, outside "
            "the parameter of shape (4,8).");
  EXPECT_EQ(error_of([&] { (void)to_param_rc(w, w, 0, 8); }),
            "coordinate (0,8) is out of bounds for a tensor of shape (4,8).");
}

}  // namespace
