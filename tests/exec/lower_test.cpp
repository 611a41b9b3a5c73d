// Lowering: the loop nest of an assignment (joint coalescing, ordering by destination stride,
// broadcast strides, refinement of hierarchical modes, the compaction fallback) and the aliasing
// decision (element-for-element fast path versus the temporary).
#include <gtest/gtest.h>

#include <numeric>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using exec::detail::Binder;
using exec::detail::trailing_map;

constexpr std::size_t K = 16;

// The loop nest of dst = src (both tensors) and whether it needs a temporary.
template <std::size_t R, class D, class S>
auto lower_pair(D const& dst, S const& src) {
  Binder<R, K, 2> b(detail::logical_shape(dst), {});
  b.set_destination(dst, trailing_map<R, R>());
  (void)b.add_leaf(src);
  auto nest = b.lower();
  return std::pair{nest, b.needs_temporary(nest, true)};
}

TEST(Lowering, ContiguousOperandsCoalesceToOneMode) {
  auto a = make_host_tensor<float>(make_shape(3, 4, 5));
  auto b = make_host_tensor<float>(make_shape(3, 4, 5));
  auto [nest, temp] = lower_pair<3>(a.view(), b.view());
  EXPECT_EQ(nest.rank, 1);
  EXPECT_EQ(nest.extent[0], 60);
  EXPECT_EQ(nest.stride[0][0], 1);
  EXPECT_EQ(nest.stride[1][0], 1);
  EXPECT_FALSE(temp);
}

TEST(Lowering, CoalescesOnlyWhereEveryOperandAllows) {
  auto a = make_host_tensor<float>(make_shape(3, 4, 5));
  auto big = make_host_tensor<float>(make_shape(3, 4, 8));
  auto src = big(_, _, range(0, 5));  // rows of 5 in rows of 8: modes 0 and 1 still merge
  auto [nest, temp] = lower_pair<3>(a.view(), src);
  ASSERT_EQ(nest.rank, 2);
  EXPECT_EQ(nest.extent[0], 12);
  EXPECT_EQ(nest.extent[1], 5);
  EXPECT_EQ(nest.stride[0][0], 5);
  EXPECT_EQ(nest.stride[1][0], 8);
  EXPECT_FALSE(temp);
}

TEST(Lowering, OrdersModesByDestinationStride) {
  auto storage = make_host_tensor<float>(make_shape(4, 3));
  auto dst = transpose(storage);  // (3, 4):(1, 3)
  auto src = make_host_tensor<float>(make_shape(3, 4));
  auto [nest, temp] = lower_pair<2>(dst, src.view());
  ASSERT_EQ(nest.rank, 2);
  EXPECT_EQ(nest.extent[1], 3);  // the innermost loop is the destination's contiguous mode
  EXPECT_EQ(nest.stride[0][1], 1);
  EXPECT_EQ(nest.stride[1][1], 4);  // the source is gathered
  EXPECT_FALSE(temp);
}

TEST(Lowering, BroadcastOperandsHaveStrideZero) {
  auto dst = make_host_tensor<float>(make_shape(3, 4));
  auto col = make_host_tensor<float>(make_shape(3, 1));
  auto [nest, temp] = lower_pair<2>(dst.view(), col.view());
  ASSERT_EQ(nest.rank, 2);
  EXPECT_EQ(nest.stride[1][0], 1);
  EXPECT_EQ(nest.stride[1][1], 0);
  (void)temp;
}

TEST(Lowering, RefinesHierarchicalModesOfTheDestination) {
  auto t = make_host_tensor<float>(make_shape(4, 6));
  auto bv = block_view(t, make_shape(2, 3), BlockOrder::merged);  // (2,2,(2,3)):(12,3,(6,1))
  auto src = make_host_tensor<float>(make_shape(2, 2, 6));
  auto [nest, temp] = lower_pair<3>(bv, src.view());
  ASSERT_EQ(nest.rank, 4);
  index_t const dst_strides[4] = {12, 6, 3, 1};
  index_t const src_strides[4] = {12, 3, 6, 1};
  for (int m = 0; m < 4; ++m) {
    EXPECT_EQ(nest.stride[0][m], dst_strides[m]) << m;
    EXPECT_EQ(nest.stride[1][m], src_strides[m]) << m;
  }
  EXPECT_EQ(nest.extent[3], 3);
  EXPECT_FALSE(temp);
}

TEST(Lowering, IncompatibleHierarchiesAreCompactedFirst) {
  // Mode 2 is (2,3) in the destination and (3,2) in the source: no common loop nest.
  auto a = make_host_tensor<float>(make_shape(4, 6));
  auto b = make_host_tensor<float>(make_shape(6, 4));
  std::iota(b.data(), b.data() + 24, 0.0f);
  auto dst = block_view(a, make_shape(2, 3), BlockOrder::merged);
  auto src = block_view(b, make_shape(3, 2), BlockOrder::merged);
  exec::detail::Boundaries<3, K> bounds{};
  auto shape = detail::logical_shape(dst);
  EXPECT_TRUE(exec::detail::merge_boundaries(
      bounds, exec::detail::describe<3, K>(dst, trailing_map<3, 3>(), shape, true), shape));
  EXPECT_FALSE(exec::detail::merge_boundaries(
      bounds, exec::detail::describe<3, K>(src, trailing_map<3, 3>(), shape, true), shape));
  dst = src + 0.0f;  // still correct, through a compact copy of the source
  for (index_t k = 0; k < 24; ++k) EXPECT_EQ(dst[k], src[k]);
}

TEST(Lowering, TheAliasDecision) {
  auto x = make_host_tensor<float>(make_shape(6, 6));
  EXPECT_FALSE(lower_pair<2>(x.view(), x.view()).second);     // element for element
  EXPECT_TRUE(lower_pair<2>(x.view(), transpose(x)).second);  // same memory, other order
  EXPECT_TRUE(lower_pair<2>(x(range(1, 6), _), x(range(0, 5), _)).second);   // shifted rows
  EXPECT_FALSE(lower_pair<2>(x(range(0, 3), _), x(range(3, 6), _)).second);  // disjoint halves
  auto y = make_host_tensor<float>(make_shape(6, 6));
  EXPECT_FALSE(lower_pair<2>(x.view(), y.view()).second);
}

}  // namespace
