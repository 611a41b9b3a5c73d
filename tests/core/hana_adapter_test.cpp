// Boost.Hana algorithms accept tessel tuples.
#include <gtest/gtest.h>

#include <boost/hana/at.hpp>
#include <boost/hana/filter.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/transform.hpp>

#include <tessel/core/hana_adapter.hpp>
#include <tessel/core/shape.hpp>

namespace {

using namespace tessel;
namespace hana = boost::hana;

constexpr auto s = make_shape(Int<2>{}, Int<3>{}, Int<4>{});
static_assert(decltype(hana::length(s))::value == 3);
static_assert(std::is_same_v<decltype(hana::at_c<1>(s)), Int<3>>);
static_assert(std::is_same_v<decltype(hana::transform(s, [](auto x) { return x * Int<2>{}; })),
                             tuple<Int<4>, Int<6>, Int<8>>>);
static_assert(
    std::is_same_v<decltype(hana::fold_left(s, Int<1>{}, [](auto a, auto b) { return a * b; })),
                   Int<24>>);

TEST(HanaAdapter, AlgorithmsWorkOnRunTimeShapes) {
  auto t = make_shape(3, 5, 7);
  EXPECT_EQ(hana::fold_left(t, index_t{0}, [](auto a, auto b) { return a + b; }), 15);
  auto doubled = hana::transform(t, [](auto x) { return 2 * x; });
  EXPECT_EQ(to_vector(doubled), (std::vector<std::int64_t>{6, 10, 14}));
}

}  // namespace
