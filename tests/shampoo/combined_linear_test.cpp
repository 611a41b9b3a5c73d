// CombinedLinear: weight and bias are write-through views of one (out, in + 1) parameter; forward
// is x W^T + b; backward matches sums written out by hand; nn.Linear's initialization bounds;
// Shampoo sees one matrix; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <tessel/shampoo/combined_linear.hpp>
#include <tessel/shampoo/plan.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

TEST(CombinedLinear, WeightAndBiasViewTheCombinedParameter) {
  CombinedLinear<float> layer(3, 2);
  EXPECT_EQ(layer.in_features_with_bias(), 4);
  auto p = layer.parameter();
  ASSERT_EQ(p.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) p[i] = static_cast<float>(i);
  auto w = layer.weight();
  auto b = layer.bias();
  EXPECT_EQ(w(1, 2), 6.0f);  // row 1, column 2 of the (2, 4) parameter
  EXPECT_EQ(b(0), 3.0f);
  EXPECT_EQ(b(1), 7.0f);
  w(0, 1) = -1.0f;
  b(1) = -2.0f;
  EXPECT_EQ(p[1], -1.0f);
  EXPECT_EQ(p[7], -2.0f);
  EXPECT_EQ(to_vector(shape(w)), (std::vector<std::int64_t>{2, 3}));
}

TEST(CombinedLinear, ForwardAndBackward) {
  CombinedLinear<double> layer(3, 2, true, 42);
  auto p = layer.parameter();
  std::vector<double> x{1, 2, 3, -1, 0.5, 2};  // batch 2
  std::vector<double> y(4);
  layer.forward(x, 2, y);
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 2; ++o) {
      double s = p[static_cast<std::size_t>(o * 4 + 3)];
      for (int i = 0; i < 3; ++i)
        s += x[static_cast<std::size_t>(r * 3 + i)] * p[static_cast<std::size_t>(o * 4 + i)];
      EXPECT_NEAR(y[static_cast<std::size_t>(r * 2 + o)], s, 1e-14);
    }
  std::vector<double> dy{0.5, -1, 2, 0.25};
  std::vector<double> dw(8), dx(6);
  layer.backward(x, dy, 2, dw, dx);
  for (int o = 0; o < 2; ++o) {
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int r = 0; r < 2; ++r)
        s += dy[static_cast<std::size_t>(r * 2 + o)] * x[static_cast<std::size_t>(r * 3 + i)];
      EXPECT_NEAR(dw[static_cast<std::size_t>(o * 4 + i)], s, 1e-14);
    }
    EXPECT_NEAR(dw[static_cast<std::size_t>(o * 4 + 3)],
                dy[static_cast<std::size_t>(o)] + dy[static_cast<std::size_t>(2 + o)], 1e-14);
  }
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int o = 0; o < 2; ++o)
        s += dy[static_cast<std::size_t>(r * 2 + o)] * p[static_cast<std::size_t>(o * 4 + i)];
      EXPECT_NEAR(dx[static_cast<std::size_t>(r * 3 + i)], s, 1e-14);
    }
}

TEST(CombinedLinear, InitializationFollowsNnLinear) {
  CombinedLinear<float> layer(100, 50, true, 7);
  double const bound = 0.1;
  double mean = 0.0, largest = 0.0;
  for (float v : layer.parameter()) {
    mean += v;
    largest = std::max(largest, static_cast<double>(std::abs(v)));
  }
  mean /= static_cast<double>(layer.parameter().size());
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.9 * bound);
  EXPECT_LT(std::abs(mean), 0.01);
  CombinedLinear<float> again(100, 50, true, 7);
  EXPECT_TRUE(
      std::equal(layer.parameter().begin(), layer.parameter().end(), again.parameter().begin()));
}

TEST(CombinedLinear, WithoutBias) {
  CombinedLinear<float> layer(3, 2, false);
  EXPECT_EQ(layer.in_features_with_bias(), 3);
  EXPECT_EQ(layer.parameter().size(), 6u);
  std::vector<float> x{1, 1, 1}, y(2);
  layer.forward(x, 1, y);
  auto p = layer.parameter();
  EXPECT_FLOAT_EQ(y[0], p[0] + p[1] + p[2]);
  try {
    layer.bias();
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "this CombinedLinear was built without a bias.");
  }
}

TEST(CombinedLinear, ShampooSeesOneMatrix) {
  CombinedLinear<float> layer(1023, 512);
  auto plan = make_plan(plan_options(1024, 1, 1),
                        make_shape(layer.out_features(), layer.in_features_with_bias()));
  ASSERT_EQ(plan.num_blocks(), 1u);
  EXPECT_EQ(plan.block_shape(0), (Extents{512, 1024}));
}

TEST(CombinedLinear, Errors) {
  auto message = [](auto f) {
    try {
      f();
    } catch (Error const& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { CombinedLinear<float>(-1, 2); }), "in_features must be >= 0, got -1.");
  CombinedLinear<float> layer(3, 2);
  std::vector<float> x(5), y(4);
  EXPECT_EQ(message([&] { layer.forward(x, 2, y); }),
            "input has 5 elements but must be (2,3), 6 elements.");
  std::vector<float> x6(6), dy(4), dw(7);
  EXPECT_EQ(message([&] { layer.backward(x6, dy, 2, dw); }),
            "grad_combined has 7 elements but must be (2,4), 8 elements.");
}

}  // namespace
