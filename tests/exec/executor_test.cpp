// Serial, OpenMP (several team sizes) and Auto give bit-identical results for elementwise passes,
// row reductions, reductions over every mode (fixed blocks), argmax and softmax.
#include <gtest/gtest.h>

#include <cmath>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using test::elements;
using test::random_tensor;

static_assert(exec::HostExecutor<exec::Serial> && exec::HostExecutor<exec::OpenMP> &&
              exec::HostExecutor<exec::Auto>);
static_assert(!exec::HostExecutor<int>);
static_assert(exec::Executor<exec::Auto const&> && exec::Executor<exec::Cuda> &&
              !exec::Executor<int>);

TEST(Executors, OpenMPIsAvailableInThisBuild) {
  EXPECT_TRUE(exec::openmp_available());
  EXPECT_GE(exec::max_threads(), 1);
}

// Evaluates dst = f() with every executor and expects identical bits.
template <class Make, class Assign>
void expect_same_everywhere(Make make_dst, Assign assign_with) {
  auto reference = make_dst();
  assign_with(reference, exec::Serial{});
  auto const want = elements(reference);
  auto check = [&](auto executor, char const* name) {
    auto dst = make_dst();
    assign_with(dst, executor);
    auto const got = elements(dst);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name << " " << i;
      } else {
        EXPECT_EQ(got[i], want[i]) << name << " " << i;
      }
    }
  };
  check(exec::OpenMP{.threads = 1}, "OpenMP 1");
  check(exec::OpenMP{.threads = 2}, "OpenMP 2");
  check(exec::OpenMP{.threads = 3}, "OpenMP 3");
  check(exec::OpenMP{}, "OpenMP default");
  check(exec::Auto{.parallel_threshold = 0}, "Auto, always parallel");
  check(exec::Auto{}, "Auto");
}

TEST(Executors, ElementwiseIsIdentical) {
  auto x = random_tensor<float>(make_shape(129, 257), -3, 3, 1);
  auto t = random_tensor<float>(make_shape(257, 129), -3, 3, 2);
  auto r = random_tensor<float>(make_shape(257), -3, 3, 3);
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(129, 257)); },
                         [&](auto& dst, auto executor) {
                           assign(dst, 0.5f * x + exp(transpose(t)) - tanh(r), executor);
                         });
  auto n = random_tensor<int>(make_shape(77, 31), -50, 50, 4);
  expect_same_everywhere([] { return make_host_tensor<int>(make_shape(77, 31)); },
                         [&](auto& dst, auto executor) { assign(dst, n * 3 - abs(n), executor); });
}

TEST(Executors, ReductionsAreIdentical) {
  auto x = random_tensor<float>(make_shape(67, 1000), -10, 10, 5);
  expect_same_everywhere(
      [] { return make_host_tensor<float>(make_shape(67)); },
      [&](auto& dst, auto executor) { assign(dst, logsumexp(x, mode<1>), executor); });
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(1000)); },
                         [&](auto& dst, auto executor) { assign(dst, sum(x, mode<0>), executor); });
  expect_same_everywhere(
      [] { return make_host_tensor<index_t>(make_shape(67)); },
      [&](auto& dst, auto executor) { assign(dst, argmax(x, mode<1>), executor); });
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(67, 1000)); },
                         [&](auto& dst, auto executor) { assign(dst, softmax(x), executor); });
  // Over every mode: fixed 2^15-element blocks, combined in order.
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(1)); },
                         [&](auto& dst, auto executor) { assign(dst, sum(x * x), executor); });
  expect_same_everywhere([] { return make_host_tensor<float>(make_shape(1)); },
                         [&](auto& dst, auto executor) { assign(dst, logsumexp(x), executor); });
  expect_same_everywhere([] { return make_host_tensor<index_t>(make_shape(1)); },
                         [&](auto& dst, auto executor) { assign(dst, argmax(x), executor); });
}

}  // namespace
