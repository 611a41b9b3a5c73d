// View identity: same_view, hash_view, and views as keys of unordered containers.
#include <gtest/gtest.h>

#include <unordered_map>
#include <unordered_set>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/view_identity.hpp>
#include <tessel/tensor/views.hpp>

namespace {

using namespace tessel;

TEST(ViewIdentity, SamePointerShapeAndStrideIsTheSameView) {
  auto w = make_host_tensor<float>(make_shape(4, 8));
  EXPECT_TRUE(same_view(w, w.view()));
  EXPECT_EQ(hash_view(w), hash_view(w.view()));
  auto a = w(range(0, 2), _);
  auto b = w(range(0, 2), _);
  EXPECT_TRUE(same_view(a, b));
  EXPECT_EQ(std::hash<decltype(a)>{}(a), std::hash<decltype(b)>{}(b));
  auto as_layout = view_as(w, make_layout(make_shape(4, 8), make_stride(8, 1)));
  EXPECT_TRUE(same_view(w, as_layout));
}

TEST(ViewIdentity, StaticAndRunTimeExtentsCompareByValue) {
  std::vector<float> v(32);
  auto s = make_tensor(v.data(), make_shape(Int<4>{}, Int<8>{}));
  auto d = make_tensor(v.data(), make_shape(4, 8));
  EXPECT_TRUE(same_view(s, d));
  EXPECT_EQ(hash_view(s), hash_view(d));
  auto c = make_tensor(static_cast<float const*>(v.data()), make_shape(4, 8));
  EXPECT_TRUE(same_view(c, d));  // constness does not change what is viewed
}

TEST(ViewIdentity, AnyDifferenceMakesADifferentView) {
  auto w = make_host_tensor<float>(make_shape(4, 4));
  EXPECT_FALSE(same_view(w, transpose(w)));                       // strides differ
  EXPECT_FALSE(same_view(w(range(0, 2), _), w(range(1, 3), _)));  // data differs
  EXPECT_FALSE(same_view(w(range(0, 2), _), w(range(0, 3), _)));  // shape differs
  EXPECT_FALSE(same_view(w, reshape(w, make_shape(2, 8))));
  auto nested =
      view_as(w, make_layout(make_shape(make_shape(2, 2), 4), make_stride(make_stride(8, 4), 1)));
  EXPECT_FALSE(same_view(w, nested));  // the same offsets, but a hierarchical mode
  auto other = make_host_tensor<float>(make_shape(4, 4));
  EXPECT_FALSE(same_view(w, other));
  auto ints = make_tensor(reinterpret_cast<int*>(w.data()), make_shape(4, 4));
  EXPECT_FALSE(same_view(w, ints));  // other element type
}

TEST(ViewIdentity, ViewsAreUnorderedMapKeys) {
  auto w = make_host_tensor<float>(make_shape(4, 8));
  using RowBlock = decltype(w(range(0, 2), _));
  std::unordered_map<RowBlock, int> owner_of;
  owner_of.emplace(w(range(0, 2), _), 0);
  owner_of.emplace(w(range(2, 4), _), 1);
  owner_of.emplace(w(range(0, 2), _), 7);  // the same view: not inserted again
  EXPECT_EQ(owner_of.size(), 2u);
  EXPECT_EQ(owner_of.at(w(range(2, 4), _)), 1);
  EXPECT_EQ(owner_of.at(w(range(0, 2), _)), 0);
  EXPECT_EQ(owner_of.count(w(range(1, 3), _)), 0u);
  std::unordered_set<decltype(w.view())> seen{w.view()};
  EXPECT_EQ(seen.count(w.view()), 1u);
}

}  // namespace
