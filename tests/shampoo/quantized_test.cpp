// Quantized factor storage: the dequantize scope hands out the stored values themselves when the
// dtype matches, converted copies otherwise, writes them back rounded when the scope ends (also on
// an exception), and Shampoo with bf16 or f16 factors stays close to f32 factors.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/quantized.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

TEST(QuantizedTensorList, SameDtypeIsNotCopied) {
  std::vector<QuantizedTensor> ts{QuantizedTensor(DType::f32, 4)};
  QuantizedTensorList<float> list(ts);
  {
    auto scope = dequantize_scope(list);
    EXPECT_TRUE(list.is_dequantized_stored());
    EXPECT_EQ(static_cast<void*>(list.dequantized_value(0).data()),
              static_cast<void*>(ts[0].bytes().data()));
    list.dequantized_value(0)[2] = 1.25f;
  }
  EXPECT_FALSE(list.is_dequantized_stored());
  std::vector<float> out(4);
  ts[0].dequantize_into(std::span<float>(out));
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1.25f, 0}));
}

TEST(QuantizedTensorList, NarrowDtypesRoundOnWriteBack) {
  std::vector<QuantizedTensor> ts{QuantizedTensor(DType::bf16, 2), QuantizedTensor(DType::f16, 1)};
  EXPECT_EQ(ts[0].bytes().size(), 4u);
  QuantizedTensorList<double> list(ts);
  {
    auto scope = dequantize_scope(list);
    EXPECT_NE(static_cast<void*>(list.dequantized_value(0).data()),
              static_cast<void*>(ts[0].bytes().data()));
    list.dequantized_value(0)[0] = 1.0 + 1.0 / 512.0;  // halfway between two bfloat16 values
    list.dequantized_value(0)[1] = 3.0;
    list.dequantized_value(1)[0] = 1.0 / 3.0;
  }
  std::vector<double> b(2), h(1);
  ts[0].dequantize_into(std::span<double>(b));
  ts[1].dequantize_into(std::span<double>(h));
  EXPECT_EQ(b[0], 1.0);  // ties to even
  EXPECT_EQ(b[1], 3.0);
  EXPECT_EQ(h[0], static_cast<double>(static_cast<float>(half(1.0f / 3.0f))));
  EXPECT_NE(h[0], 1.0 / 3.0);
}

TEST(QuantizedTensorList, WritesBackWhenAnExceptionLeavesTheScope) {
  std::vector<QuantizedTensor> ts{QuantizedTensor(DType::bf16, 1)};
  QuantizedTensorList<float> list(ts);
  EXPECT_THROW(
      {
        auto scope = dequantize_scope(list);
        list.dequantized_value(0)[0] = 2.0f;
        throw std::runtime_error("inside");
      },
      std::runtime_error);
  std::vector<float> v(1);
  ts[0].dequantize_into(std::span<float>(v));
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_FALSE(list.is_dequantized_stored());
}

TEST(VisitFactorDtype, GivesTheStoredTypeAndRefusesOthers) {
  EXPECT_EQ(visit_factor_dtype(DType::bf16, [](auto u) { return sizeof(u); }), 2u);
  EXPECT_TRUE(visit_factor_dtype(DType::f16, [](auto u) { return std::is_same_v<decltype(u), half>; }));
  EXPECT_EQ(visit_factor_dtype(DType::f64, [](auto u) { return sizeof(u); }), 8u);
  try {
    visit_factor_dtype(DType::i32, [](auto) { return 0; });
    FAIL() << "i32 is not a factor dtype";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "factor matrices are stored as bf16, f16, f32 or f64, not i32.");
  }
}

TEST(QuantizedTensor, OnlyFloatingPointStorage) {
  try {
    QuantizedTensor(DType::i8, 3);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "quantized tensors are stored as bf16, f16, f32 or f64, not i8.");
  }
}

std::vector<float> run(DType factor_dtype) {
  auto plan = make_plan(PlanOptions<index_t, index_t>{8, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{8, 6}});
  Options o;
  o.factor_matrix_dtype = factor_dtype;
  o.epsilon = 1e-4;
  Shampoo<float> opt(plan, o);
  std::vector<float> w(48, 0.0f);
  for (int t = 0; t < 5; ++t) {
    std::vector<float> g(48);
    for (std::size_t i = 0; i < 48; ++i) g[i] = std::cos(0.3f * static_cast<float>(i * (t + 1)));
    opt.step({std::span<float>(w)}, {std::span<float const>(g)});
  }
  if (factor_dtype == DType::bf16) {
    for (float x : opt.factor_matrix(0, 0)) EXPECT_EQ(x, static_cast<float>(bfloat16(x)));
    EXPECT_EQ(opt.state_dict().at({"0", "block_0", "shampoo", "factor_matrices", "0"}).dtype,
              DType::bf16);
  }
  return w;
}

TEST(QuantizedFactors, NarrowFactorsStayCloseToFloatFactors) {
  auto f32 = run(DType::f32);
  for (DType d : {DType::bf16, DType::f16}) {
    auto q = run(d);
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < f32.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(q[i] - f32[i])));
      scale = std::max(scale, static_cast<double>(std::abs(f32[i])));
    }
    EXPECT_GT(diff, 0.0) << dtype_name(d);  // the factors really are narrower
    EXPECT_LT(diff / scale, 0.05) << dtype_name(d);
  }
}

}  // namespace
