// NMPattern: static and run-time patterns, their group shapes, and validation.
#include <gtest/gtest.h>

#include <sstream>

#include <tessel/sparsity/nm_pattern.hpp>

namespace {

using namespace tessel;

using P24 = NMPattern<Int<2>, Int<4>>;
static_assert(P24::is_static);
static_assert(std::is_empty_v<P24>);  // a static pattern is a type, nothing to store
static_assert(std::is_same_v<decltype(NMPattern{2, 4}), NMPattern<index_t, index_t>>);
static_assert(!decltype(NMPattern{2, 4})::is_static);
static_assert(std::is_same_v<decltype(NMPattern{Int<4>{}, 8}), NMPattern<Int<4>, index_t>>);
// Groups along the last mode by default (-1), or any mode.
static_assert(std::is_same_v<decltype(nm_group_shape<-1, 2>(P24{})), tuple<Int<1>, Int<4>>>);
static_assert(std::is_same_v<decltype(nm_group_shape<0, 2>(P24{})), tuple<Int<4>, Int<1>>>);
static_assert(std::is_same_v<decltype(nm_group_shape<1, 3>(P24{})), tuple<Int<1>, Int<4>, Int<1>>>);
static_assert(NMPatternType<P24> && !NMPatternType<int>);

TEST(NMPattern, RunTimePatternsGroupWithRunTimeExtents) {
  auto g = nm_group_shape<-1, 2>(NMPattern{4, 8});
  static_assert(std::is_same_v<decltype(g), tuple<Int<1>, index_t>>);
  EXPECT_EQ(get<1>(g), 8);
}

TEST(NMPattern, PrintsAsNColonM) {
  std::ostringstream os;
  os << P24{} << ' ' << NMPattern{1, 2};
  EXPECT_EQ(os.str(), "2:4 1:2");
}

TEST(NMPattern, InvalidRunTimePatternsAreErrors) {
  try {
    detail::check_pattern(NMPattern{5, 4});
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "N:M pattern 5:4 is invalid; it needs 0 <= N <= M and M > 0.");
  }
  EXPECT_THROW(detail::check_pattern(NMPattern{0, 0}), Error);
  EXPECT_THROW(detail::check_pattern(NMPattern{-1, 4}), Error);
  EXPECT_NO_THROW(detail::check_pattern(NMPattern{0, 4}));
}

}  // namespace
