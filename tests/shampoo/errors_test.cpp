// Shampoo checks whose other tests do not assert the sentence: option enums holding values outside
// their enumerators (a cast from an int read from a config file, say) and a quantized tensor of a
// negative size. Each is raised before anything is built.
#include <gtest/gtest.h>

#include <string>

#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/quantized.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

using tessel::test::error_of;

TEST(ShampooErrors, OptionEnumsOutsideTheirEnumeratorsAreRejected) {
  Options g;
  g.grafting.type = static_cast<GraftingType>(42);
  EXPECT_EQ(error_of([&] { validate(g); }), "grafting type 42 is not a GraftingType.");
  Options r;
  r.root.method = static_cast<RootMethod>(9);
  EXPECT_EQ(error_of([&] { validate(r); }), "root method 9 is not a RootMethod.");
  Options w;
  w.weight_decay_type = static_cast<WeightDecayType>(5);
  EXPECT_EQ(error_of([&] { validate(w); }), "weight_decay_type 5 is not a WeightDecayType.");
  // The constructor validates too, so no optimizer exists with such options.
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{3}});
  EXPECT_EQ(error_of([&] { Shampoo<float>(plan, w); }),
            "weight_decay_type 5 is not a WeightDecayType.");
}

TEST(ShampooErrors, AQuantizedTensorOfNegativeSizeIsRejected) {
  EXPECT_EQ(error_of([] { QuantizedTensor(DType::f32, -2); }),
            "a quantized tensor cannot hold -2 elements.");
}

}  // namespace
