// Optimizer state: Distributed Shampoo's key paths, a bit-exact state_dict / load_state_dict round
// trip that continues identically, key flattening, and every load error with the optimizer left
// exactly as it was.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/state_keys.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

using tessel::test::error_of;

Plan state_plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{6, 5}, {3}});
}

Options state_options() {
  Options o;
  o.momentum = 0.9;
  o.grafting = adam_grafting();
  o.beta2 = 0.99;
  return o;
}

struct Trainer {
  std::vector<std::vector<float>> params{std::vector<float>(30, 0.5f),
                                         std::vector<float>(3, -1.0f)};
  void steps(Shampoo<float>& opt, int from, int count) {
    for (int t = from; t < from + count; ++t) {
      std::vector<std::vector<float>> grads{std::vector<float>(30), std::vector<float>(3)};
      for (std::size_t p = 0; p < 2; ++p)
        for (std::size_t i = 0; i < grads[p].size(); ++i)
          grads[p][i] = std::sin(0.7f * static_cast<float>(i + 3 * p) + static_cast<float>(t));
      std::vector<std::span<float>> ps(params.begin(), params.end());
      std::vector<std::span<float const>> gs(grads.begin(), grads.end());
      opt.step(ps, gs);
    }
  }
};

TEST(ShampooState, KeysFollowDistributedShampoo) {
  Shampoo<float> opt(state_plan(), state_options());
  auto sd = opt.state_dict();
  // (6,5) in 4x4 blocks: 4 blocks; (3): 1 block. Each: 2 factors + 2 inverse roots (1 each for
  // the 1-D block) + filtered_grad + momentum_buffer + adagrad; plus one step per parameter.
  EXPECT_EQ(sd.size(), 4u * 7u + 5u + 2u);
  auto const& f = sd.at({"0", "block_1", "shampoo", "factor_matrices", "1"});
  EXPECT_EQ(f.dtype, DType::f32);
  EXPECT_EQ(f.shape, (std::vector<index_t>{1, 1}));  // block 1 is (4, 1)
  EXPECT_EQ(sd.at({"0", "block_2", "filtered_grad"}).shape, (std::vector<index_t>{2, 4}));
  EXPECT_TRUE(sd.contains({"1", "block_0", "shampoo", "inv_factor_matrices", "0"}));
  EXPECT_TRUE(sd.contains({"1", "block_0", "momentum_buffer"}));
  EXPECT_TRUE(sd.contains({"1", "block_0", "adagrad"}));
  EXPECT_EQ(sd.at({"1", "step"}).dtype, DType::i64);
  EXPECT_TRUE(sd.at({"1", "step"}).shape.empty());
  // Without momentum, filtering or grafting their entries are absent.
  Options plain;
  plain.beta1 = 0.0;
  auto bare = Shampoo<float>(state_plan(), plain).state_dict();
  EXPECT_EQ(bare.size(), 4u * 4u + 2u + 2u);
  EXPECT_FALSE(bare.contains({"0", "block_0", "filtered_grad"}));
}

TEST(ShampooState, RoundTripContinuesBitExactly) {
  Shampoo<float> a(state_plan(), state_options());
  Trainer ra;
  ra.steps(a, 0, 3);
  auto sd = a.state_dict();
  Shampoo<float> b(state_plan(), state_options());
  b.load_state_dict(sd);
  EXPECT_EQ(b.step_count(), 3);
  EXPECT_TRUE(b.state_dict() == sd);
  Trainer rb;
  rb.params = ra.params;
  ra.steps(a, 3, 3);
  rb.steps(b, 3, 3);
  EXPECT_EQ(ra.params, rb.params);  // bit for bit
  EXPECT_TRUE(a.state_dict() == b.state_dict());
}

TEST(ShampooState, KeysFlattenToJsonAndBack) {
  StateKey key{"0", "block_1", "shampoo", "factor_matrices", "0"};
  EXPECT_EQ(flatten_state_key(key), "[\"0\",\"block_1\",\"shampoo\",\"factor_matrices\",\"0\"]");
  EXPECT_EQ(parse_state_key(flatten_state_key(key)), key);
  EXPECT_EQ(parse_state_key("[\"a \\\"quoted\\\" name\"]"), (StateKey{"a \"quoted\" name"}));
  for (char const* bad : {"", "[]", "[1]", "{\"a\": 1}", "[\"0\"", "\"0\""})
    EXPECT_EQ(error_of([&] { parse_state_key(bad); }),
              std::string("the state key \"") + bad +
                  "\" is not a JSON array of strings such as [\"0\",\"step\"].");
}

// Each broken state must be refused with its sentence and change nothing.
void expect_refused(StateDict const& broken, std::string const& message) {
  Shampoo<float> opt(state_plan(), state_options());
  Trainer r;
  r.steps(opt, 0, 2);
  auto const before = opt.state_dict();
  EXPECT_EQ(error_of([&] { opt.load_state_dict(broken); }), message);
  EXPECT_TRUE(opt.state_dict() == before);
  EXPECT_EQ(opt.step_count(), 2);
}

TEST(ShampooState, LoadErrorsLeaveTheOptimizerAsItWas) {
  Shampoo<float> source(state_plan(), state_options());
  Trainer r;
  r.steps(source, 0, 5);
  auto const good = source.state_dict();

  auto missing = good;
  missing.erase({"0", "block_3", "momentum_buffer"});
  expect_refused(missing,
                 "the state has no key [\"0\",\"block_3\",\"momentum_buffer\"]; it holds " +
                     std::to_string(good.size() - 1) + " keys where this optimizer has " +
                     std::to_string(good.size()) + ".");

  auto misshaped = good;
  misshaped[{"0", "block_0", "shampoo", "factor_matrices", "1"}].shape = {2, 8};
  expect_refused(misshaped,
                 "the state's [\"0\",\"block_0\",\"shampoo\",\"factor_matrices\",\"1\"] has shape "
                 "(2,8) but this optimizer keeps (4,4).");

  auto retyped = good;
  auto& t = retyped[{"1", "block_0", "adagrad"}];
  t.dtype = DType::i32;
  expect_refused(retyped,
                 "the state's [\"1\",\"block_0\",\"adagrad\"] has dtype i32 but this optimizer "
                 "keeps f32.");

  auto truncated = good;
  truncated[{"1", "block_0", "filtered_grad"}].data.pop_back();
  expect_refused(truncated,
                 "the state's [\"1\",\"block_0\",\"filtered_grad\"] holds 11 bytes but its shape "
                 "and dtype need 12.");

  auto extra = good;
  extra[{"2", "step"}] = good.at({"0", "step"});
  expect_refused(extra,
                 "the state has the key [\"2\",\"step\"], which this optimizer does not keep.");

  auto steps_differ = good;
  std::int64_t other = 4;
  steps_differ[{"1", "step"}] = make_state_tensor<std::int64_t>({}, std::span(&other, 1));
  expect_refused(steps_differ,
                 "the state's step of parameter 1 is 4 but parameter 0's is 5; all parameters "
                 "share one step.");

  auto negative = good;
  std::int64_t minus = -1;
  negative[{"0", "step"}] = make_state_tensor<std::int64_t>({}, std::span(&minus, 1));
  expect_refused(negative, "the state's step of parameter 0 is -1; steps are >= 0.");
}

}  // namespace
