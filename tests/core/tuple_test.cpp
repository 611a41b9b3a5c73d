// tessel::tuple: storage (static elements take none), access and the fold-expression algorithms.
#include <gtest/gtest.h>

#include <tessel/core/int_tuple.hpp>
#include <tessel/core/tuple.hpp>

namespace {

using namespace tessel;

// Static elements are not stored.
static_assert(std::is_empty_v<tuple<>>);
static_assert(std::is_empty_v<tuple<Int<1>, Int<2>>>);
static_assert(std::is_empty_v<tuple<tuple<Int<1>>, Int<2>>>);
static_assert(sizeof(tuple<index_t, Int<2>, index_t>) == 2 * sizeof(index_t));
static_assert(sizeof(tuple<Int<3>, index_t>) == sizeof(index_t));

constexpr tuple<index_t, Int<3>, index_t> mixed{index_t{4}, Int<3>{}, index_t{5}};
static_assert(get<0>(mixed) == 4 && get<2>(mixed) == 5);
static_assert(std::is_same_v<decltype(get<1>(mixed)), Int<3>>);
static_assert(tuple_size_v<decltype(mixed)> == 3);

// Algorithms.
static_assert(fold(mixed, index_t{0}, [](auto a, auto b) { return a + b; }) == 12);
static_assert(get<1>(transform(mixed, [](auto x) { return x * Int<2>{}; })) == 6);
static_assert(std::is_same_v<
              decltype(get<1>(transform(mixed, [](auto x) { return x * Int<2>{}; }))), Int<6>>);
static_assert(get<0>(reverse(mixed)) == 5 && get<2>(reverse(mixed)) == 4);
static_assert(tuple_size_v<decltype(concat(mixed, mixed))> == 6);
static_assert(get<3>(concat(mixed, make_tuple(index_t{9}))) == 9);
static_assert(get<0>(select<2, 0>(mixed)) == 5);
static_assert(get<0>(take<1, 3>(mixed)) == 3 && tuple_size_v<decltype(take<1, 3>(mixed))> == 2);
static_assert(get<0>(prepend(mixed, index_t{7})) == 7 && get<3>(append(mixed, index_t{8})) == 8);
static_assert(apply(mixed, [](auto a, auto b, auto c) { return a * b * c; }) == 60);

TEST(Tuple, StructuredBindingsReadTheElements) {
  tuple<index_t, Int<2>> t{index_t{11}, Int<2>{}};
  auto [a, b] = t;
  EXPECT_EQ(a, 11);
  EXPECT_EQ(index_t{b}, 2);
}

TEST(Tuple, StoredElementsAreWritable) {
  tuple<index_t, index_t> t{index_t{1}, index_t{2}};
  get<1>(t) = 20;
  EXPECT_EQ(get<1>(t), 20);
}

TEST(Tuple, ForEachVisitsInOrder) {
  std::vector<index_t> seen;
  for_each(make_tuple(index_t{3}, Int<1>{}, index_t{4}), [&](auto x) { seen.push_back(x); });
  EXPECT_EQ(seen, (std::vector<index_t>{3, 1, 4}));
}

TEST(Tuple, EqualityComparesValuesNotTypes) {
  EXPECT_TRUE(make_tuple(Int<2>{}, index_t{3}) == make_tuple(index_t{2}, Int<3>{}));
  EXPECT_FALSE(make_tuple(Int<2>{}, index_t{3}) == make_tuple(index_t{2}, index_t{4}));
  EXPECT_FALSE(make_tuple(index_t{2}) == make_tuple(index_t{2}, index_t{4}));
}

}  // namespace
