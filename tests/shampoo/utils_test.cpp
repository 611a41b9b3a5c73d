// Distributed Shampoo's utility idioms: compress_list, dtype sizes, generate_pairwise_indices,
// batched, zip_named and the enter/exit scope, with every error and its sentence.
#include <gtest/gtest.h>

#include <array>
#include <list>
#include <stdexcept>
#include <string>
#include <vector>

#include <tessel/shampoo/utils.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

using tessel::test::error_of;

constexpr auto pairs = generate_pairwise_indices(std::array<int, 3>{1, 3, 2});
static_assert(pairs[0] == std::pair<index_t, index_t>{0, 1});
static_assert(pairs[1] == std::pair<index_t, index_t>{1, 4});
static_assert(pairs[2] == std::pair<index_t, index_t>{4, 6});

TEST(CompressList, KeepsSelectedEntriesInOrder) {
  std::vector<std::string> values{"a", "b", "c", "d"};
  std::vector<bool> selector{true, false, true, false};
  EXPECT_EQ(compress_list(values, selector), (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(compress_list(std::vector<int>{}, std::vector<bool>{}).empty());
}

TEST(CompressList, LengthMismatchIsAnError) {
  EXPECT_EQ(error_of([] {
              compress_list(std::vector<int>{1, 2, 3, 4}, std::array<bool, 3>{});
            }),
            "compress_list got 4 values but 3 selector entries; the lengths must be equal.");
}

TEST(DTypeSize, MatchesTheElementWidths) {
  EXPECT_EQ(get_dtype_size(DType::bool_), 1u);
  EXPECT_EQ(get_dtype_size(DType::bf16), 2u);
  EXPECT_EQ(get_dtype_size(DType::f16), 2u);
  EXPECT_EQ(get_dtype_size(DType::f32), 4u);
  EXPECT_EQ(get_dtype_size(DType::f64), 8u);
  EXPECT_EQ(get_dtype_size(DType::i8), 1u);
  EXPECT_EQ(get_dtype_size(DType::i16), 2u);
  EXPECT_EQ(get_dtype_size(DType::i32), 4u);
  EXPECT_EQ(get_dtype_size(DType::i64), 8u);
  EXPECT_EQ(get_dtype_size(DType::u8), 1u);
  EXPECT_EQ(error_of([] { get_dtype_size(static_cast<DType>(200)); }),
            "get_dtype_size got the value 200, which is not a tessel::DType.");
}

TEST(GeneratePairwiseIndices, AccumulatesPartitionSizes) {
  auto p = generate_pairwise_indices(std::vector<int>{1, 3, 2});
  std::vector<std::pair<index_t, index_t>> expect{{0, 1}, {1, 4}, {4, 6}};
  EXPECT_EQ(p, expect);
  EXPECT_TRUE(generate_pairwise_indices(std::vector<int>{}).empty());
  auto zero = generate_pairwise_indices(std::list<long>{0, 2});
  EXPECT_EQ(zero, (std::vector<std::pair<index_t, index_t>>{{0, 0}, {0, 2}}));
  EXPECT_EQ(error_of([] {
              generate_pairwise_indices(std::vector<int>{2, -1});
            }),
            "generate_pairwise_indices got the negative size -1 at position 1.");
}

TEST(Batched, CutsIntoChunksWithAShorterLastOne) {
  std::vector<int> v{1, 2, 3, 4, 5, 6, 7};
  auto chunks = batched(v, 3);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(std::vector<int>(chunks[0].begin(), chunks[0].end()), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(std::vector<int>(chunks[2].begin(), chunks[2].end()), (std::vector<int>{7}));
  chunks[1].front() = 40;  // subranges view the input
  EXPECT_EQ(v[3], 40);
  std::vector<int> none;
  EXPECT_TRUE(batched(none, 2).empty());
  EXPECT_EQ(error_of([&] { batched(v, 0); }), "batched needs a batch size >= 1, got 0.");
}

TEST(ZipNamed, VisitsEqualLengthRangesInLockStep) {
  std::vector<int> factors{1, 2, 3};
  std::vector<double> roots{2.0, 4.0, 6.0};
  std::vector<double> products;
  for (auto [f, r] : zip_named(named("factors", factors), named("roots", roots))) {
    products.push_back(f * r);
    f = 0;  // references into the ranges
  }
  EXPECT_EQ(products, (std::vector<double>{2.0, 8.0, 18.0}));
  EXPECT_EQ(factors, (std::vector<int>{0, 0, 0}));
}

TEST(ZipNamed, LengthMismatchNamesEveryRange) {
  std::vector<int> a{1, 2, 3};
  std::vector<int> b{1, 2};
  std::vector<int> c{1, 2, 3};
  int visited = 0;
  EXPECT_EQ(error_of([&] {
              for (auto t : zip_named(named("a", a), named("b", b), named("c", c))) {
                (void)t;
                ++visited;
              }
            }),
            "zip_named needs ranges of equal length, but a has 3, b has 2, c has 3 elements.");
  EXPECT_EQ(visited, 0);
}

struct Counter {
  int entered = 0;
  int exited = 0;
};

TEST(EnterExitScope, CallsEnterAndExitAroundTheScope) {
  Counter c;
  {
    auto scope = make_enter_exit_scope(
        c, [](Counter& x) { ++x.entered; }, [](Counter& x) { ++x.exited; });
    EXPECT_EQ(c.entered, 1);
    EXPECT_EQ(c.exited, 0);
    EXPECT_EQ(&scope.get(), &c);
  }
  EXPECT_EQ(c.exited, 1);
}

TEST(EnterExitScope, ExitsWhenAnExceptionLeavesTheScope) {
  Counter c;
  EXPECT_THROW(
      {
        auto scope = make_enter_exit_scope(
            c, [](Counter& x) { ++x.entered; }, [](Counter& x) { ++x.exited; });
        throw std::runtime_error("inside");
      },
      std::runtime_error);
  EXPECT_EQ(c.entered, 1);
  EXPECT_EQ(c.exited, 1);
}

}  // namespace
