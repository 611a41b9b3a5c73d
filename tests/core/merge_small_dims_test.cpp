// merge_small_dims: the contract's examples, static (a type) and run-time (a DynRankTuple), and
// agreement with a literal transcription of Distributed Shampoo's rule over many shapes.
#include <gtest/gtest.h>

#include <random>

#include <tessel/core/merge_small_dims.hpp>
#include <tessel/core/shape.hpp>

namespace {

using namespace tessel;

// The contract's examples, at compile time.
static_assert(to_array(merge_small_dims(make_shape(Int<32>{}, Int<3>{}, Int<64>{}, Int<64>{}),
                                        Int<8192>{}, Int<1>{})) ==
              std::array<std::int64_t, 2>{96, 4096});
static_assert(
    std::is_same_v<decltype(merge_small_dims(make_shape(Int<1>{}, Int<2>{}, Int<5>{}, Int<1>{}),
                                             Int<10>{}, Int<1>{})),
                   tuple<Int<10>>>);
static_assert(
    std::is_same_v<decltype(merge_small_dims(make_shape(Int<1>{}, Int<2>{}, Int<5>{}, Int<1>{}),
                                             Int<1>{}, Int<1>{})),
                   tuple<Int<2>, Int<5>>>);
static_assert(
    std::is_same_v<decltype(merge_small_dims(make_shape(Int<32>{}, Int<3>{}, Int<64>{}, Int<64>{}),
                                             Int<1024>{}, Int<2>{})),
                   tuple<Int<32>, Int<192>, Int<64>>>);
// Zero extent, all ones, rank 0.
static_assert(
    std::is_same_v<decltype(merge_small_dims(make_shape(Int<3>{}, Int<0>{}), Int<8>{}, Int<1>{})),
                   tuple<Int<0>>>);
static_assert(
    std::is_same_v<decltype(merge_small_dims(make_shape(Int<1>{}, Int<1>{}), Int<8>{}, Int<1>{})),
                   tuple<Int<1>>>);
static_assert(
    std::is_same_v<decltype(merge_small_dims(make_shape(), Int<8>{}, Int<1>{})), tuple<Int<1>>>);
// A run-time shape computed in a constant expression gives the same answer.
static_assert(merge_small_dims(make_shape(32, 3, 64, 64), 8192, 1) == make_shape(96, 4096));

// Distributed Shampoo's rule, transcribed with std::vector the way the Python reads.
std::vector<std::int64_t> reference(std::vector<std::int64_t> shape, std::int64_t threshold,
                                    std::int64_t target) {
  for (auto d : shape)
    if (d == 0) return {0};
  std::vector<std::int64_t> squeezed;
  for (auto d : shape)
    if (d != 1) squeezed.push_back(d);
  if (squeezed.empty()) return {1};
  std::vector<std::int64_t> out{squeezed.back()};
  std::size_t remaining = squeezed.size() - 1;
  for (auto it = squeezed.rbegin() + 1; it != squeezed.rend(); ++it, --remaining) {
    __int128 product = static_cast<__int128>(out.back()) * *it;
    if (static_cast<std::int64_t>(out.size() + remaining) > target && product <= threshold)
      out.back() = static_cast<std::int64_t>(product);
    else
      out.push_back(*it);
  }
  return {out.rbegin(), out.rend()};
}

TEST(MergeSmallDims, ContractExamplesAtRunTime) {
  EXPECT_EQ(to_vector(merge_small_dims(make_shape(1, 2, 5, 1), 10, 1)),
            (std::vector<std::int64_t>{10}));
  EXPECT_EQ(to_vector(merge_small_dims(make_shape(1, 2, 5, 1), 1, 1)),
            (std::vector<std::int64_t>{2, 5}));
  EXPECT_EQ(to_vector(merge_small_dims(make_shape(32, 3, 64, 64), 8192, 1)),
            (std::vector<std::int64_t>{96, 4096}));
  EXPECT_EQ(to_vector(merge_small_dims(make_shape(32, 3, 64, 64), 1024, 2)),
            (std::vector<std::int64_t>{32, 192, 64}));
  EXPECT_EQ(to_vector(merge_small_dims(make_shape(), 8, 1)), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(to_vector(merge_small_dims(make_shape(7, 0, 3), 8, 1)), (std::vector<std::int64_t>{0}));
}

TEST(MergeSmallDims, MixedStaticAndRunTimeArgumentsAreRunTime) {
  auto m = merge_small_dims(make_shape(Int<32>{}, Int<3>{}, Int<64>{}, Int<64>{}), index_t{8192},
                            Int<1>{});
  static_assert(DynRank<decltype(m)>);
  EXPECT_EQ(to_vector(m), (std::vector<std::int64_t>{96, 4096}));
}

TEST(MergeSmallDims, AgreesWithTheReferenceOnRandomShapes) {
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> extents = {1, 1, 2, 3, 4, 5, 7, 8, 16, 64, 100, 1024, 4096};
  for (int trial = 0; trial < 3000; ++trial) {
    std::size_t r = rng() % 6;
    std::vector<std::int64_t> shape;
    DynRankTuple<5> dyn{};
    for (std::size_t k = 0; k < r && k < 5; ++k) {
      shape.push_back(extents[rng() % extents.size()]);
      dyn.push_back(shape.back());
    }
    std::int64_t threshold = std::int64_t{1} << (rng() % 16);
    std::int64_t target = 1 + static_cast<std::int64_t>(rng() % 4);
    auto got = to_vector(merge_small_dims(dyn, threshold, target));
    EXPECT_EQ(got, reference(shape, threshold, target))
        << "threshold " << threshold << " target " << target;
    // Post-conditions: same number of elements; no extent 1 unless the whole result is (1).
    std::int64_t before = 1, after = 1;
    for (auto d : shape) before *= d;
    for (auto d : got) after *= d;
    EXPECT_EQ(before, after);
    if (got != std::vector<std::int64_t>{1}) {
      for (auto d : got) EXPECT_NE(d, 1);
    }
  }
}

TEST(MergeSmallDims, HugeProductsDoNotOverflowIntoAMerge) {
  auto m = merge_small_dims(make_shape(index_t{1} << 40, index_t{1} << 40), detail::index_max, 1);
  EXPECT_EQ(to_vector(m), (std::vector<std::int64_t>{index_t{1} << 40, index_t{1} << 40}));
}

}  // namespace
