// for_each_coordinate: row-major order, one 1-D index per hierarchical mode, empty shapes.
#include <gtest/gtest.h>

#include <vector>

#include <tessel/core/shape.hpp>
#include <tessel/tensor/for_each_coordinate.hpp>

namespace {

using namespace tessel;

TEST(ForEachCoordinate, VisitsRowMajorWithTheLastCoordinateFastest) {
  std::vector<std::vector<index_t>> seen;
  for_each_coordinate(make_shape(2, Int<3>{}), [&](index_t i, index_t j) {
    seen.push_back({i, j});
  });
  std::vector<std::vector<index_t>> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(seen, expected);
}

TEST(ForEachCoordinate, AHierarchicalModeGetsOneIndex) {
  std::vector<index_t> last;
  for_each_coordinate(make_shape(2, make_shape(2, 3)),
                      [&](index_t, index_t k) { last.push_back(k); });
  EXPECT_EQ(last.size(), 12u);
  EXPECT_EQ(last[5], 5);
  EXPECT_EQ(last[6], 0);
}

TEST(ForEachCoordinate, EmptyShapesMakeNoCallAndRankZeroMakesOne) {
  int calls = 0;
  for_each_coordinate(make_shape(3, 0, 2), [&](auto...) { ++calls; });
  EXPECT_EQ(calls, 0);
  for_each_coordinate(make_shape(), [&]() { ++calls; });
  EXPECT_EQ(calls, 1);
  for_each_coordinate(index_t{4}, [&](index_t i) { calls += static_cast<int>(i); });
  EXPECT_EQ(calls, 1 + 0 + 1 + 2 + 3);
}

}  // namespace
