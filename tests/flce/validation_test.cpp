// Every error of an FLCE call: the exact sentence, and that no output was written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <tessel/flce/backward.hpp>
#include <tessel/flce/forward.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;

constexpr float sentinel = 12345.0f;

// A valid call (BT=8, H=5, V=9, bias, class weights) whose pieces a test breaks one at a time.
struct Call {
  std::vector<float> x = std::vector<float>(8 * 5, 0.25f), w = std::vector<float>(9 * 5, -0.5f);
  std::vector<float> bias = std::vector<float>(9, 0.1f), cw = std::vector<float>(9, 1.0f);
  std::vector<std::int64_t> y = {0, 1, 2, 3, 4, 5, 6, -100};
  std::vector<float> loss = std::vector<float>(8, sentinel), z = std::vector<float>(8, sentinel);
  std::vector<float> dx = std::vector<float>(8 * 5, sentinel);
  std::vector<float> dw = std::vector<float>(9 * 5, sentinel), db = std::vector<float>(9, sentinel);

  Options<float> options() {
    return {.class_weights = make_tensor(cw.data(), make_shape(9)),
            .bias = make_tensor(bias.data(), make_shape(9))};
  }
  Outputs<float> outputs() {
    return {.loss = make_tensor(loss.data(), make_shape(1)),
            .z_loss = make_tensor(z.data(), make_shape(1)),
            .grad_input = make_tensor(dx.data(), make_shape(8, 5)),
            .grad_weight = make_tensor(dw.data(), make_shape(9, 5)),
            .grad_bias = make_tensor(db.data(), make_shape(9))};
  }
  void run(Options<float> const& o, Outputs<float> const& out) {
    forward(make_tensor(x.data(), make_shape(8, 5)), make_tensor(w.data(), make_shape(9, 5)),
            make_tensor(y.data(), make_shape(static_cast<index_t>(y.size()))), o, out);
  }
  bool untouched() const {
    for (auto const* v : {&loss, &z, &dx, &dw, &db})
      for (float e : *v)
        if (e != sentinel) return false;
    return true;
  }
};

using tessel::test::error_of;

// Breaks one thing, expects `message` and untouched outputs.
void expect_rejected(std::function<void(Call&, Options<float>&, Outputs<float>&)> const& breaker,
                     std::string const& message) {
  Call c;
  Options<float> o = c.options();
  Outputs<float> out = c.outputs();
  breaker(c, o, out);
  EXPECT_EQ(error_of([&] { c.run(o, out); }), message);
  EXPECT_TRUE(c.untouched()) << message;
}

TEST(FlceValidation, TheValidCallRuns) {
  Call c;
  c.run(c.options(), c.outputs());
  EXPECT_FALSE(c.untouched());
  EXPECT_TRUE(std::isfinite(c.loss[0]));
}

TEST(FlceValidation, NamesTheBriefsExampleShapes) {
  // Only shapes matter: validation fails before any element is read.
  auto* none = static_cast<float*>(nullptr);
  auto* targets = static_cast<std::int64_t*>(nullptr);
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(none, make_shape(4, 512)),
                      make_tensor(none, make_shape(32000, 511)),
                      make_tensor(targets, make_shape(4)), {}, {});
            }),
            "weight has shape (32000,511) but input has hidden size 512.");
  std::vector<float> x(18, 0.0f), w(32000, 0.0f);
  std::vector<std::int64_t> y(18, 1);
  y[17] = 40000;
  std::vector<float> loss(1, sentinel);
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(x.data(), make_shape(18, 1)),
                      make_tensor(w.data(), make_shape(32000, 1)),
                      make_tensor(y.data(), make_shape(18)), {},
                      {.loss = make_tensor(loss.data(), make_shape(1))});
            }),
            "target 40000 at row 17 is outside [0, 32000) and is not ignore_index (-100).");
  EXPECT_EQ(loss[0], sentinel);
}

TEST(FlceValidation, RejectsBadInputShapesAndLayouts) {
  expect_rejected([](Call& c, auto&, auto&) { c.y.pop_back(); },
                  "target has 7 elements but input has 8 rows.");
  Call c;
  auto o = c.options();
  auto out = c.outputs();
  auto target = make_tensor(c.y.data(), make_shape(8));
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(c.x.data(), make_shape(8, 5)),
                      make_tensor(c.w.data(), make_shape(9, 4)), target, o, out);
            }),
            "weight has shape (9,4) but input has hidden size 5.");
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(c.x.data(), make_shape(8, 0)),
                      make_tensor(c.w.data(), make_shape(9, 0)), target, o, out);
            }),
            "input has hidden size 0; FLCE needs at least 1.");
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(c.x.data(), make_shape(8, 5)),
                      make_tensor(c.w.data(), make_shape(0, 5)), target, o, out);
            }),
            "weight has shape (0,5); FLCE needs a vocabulary (weight's rows) of at least 1.");
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(c.x.data(), make_layout(make_shape(4, 5), make_stride(10, 2))),
                      make_tensor(c.w.data(), make_shape(9, 5)),
                      make_tensor(c.y.data(), make_shape(4)), o, out);
            }),
            "input must be contiguous along its last mode (stride 1), got stride 2.");
  EXPECT_EQ(error_of([&] {
              forward(make_tensor(c.x.data(), make_shape(8, 5)),
                      make_tensor(c.w.data(), make_layout(make_shape(9, 5), make_stride(3, 1))),
                      target, o, out);
            }),
            "weight has row stride 3, less than its 5 columns.");
  EXPECT_TRUE(c.untouched());
}

TEST(FlceValidation, RejectsBadOptions) {
  expect_rejected(
      [](Call& c, auto& o, auto&) { o.bias = make_tensor(c.bias.data(), make_shape(8)); },
      "bias has 8 elements but the vocabulary size (weight's rows) is 9.");
  expect_rejected(
      [](Call& c, auto& o, auto&) { o.class_weights = make_tensor(c.cw.data(), make_shape(1)); },
      "class_weights has 1 element but the vocabulary size (weight's rows) is 9.");
  expect_rejected([](Call&, auto& o, auto&) { o.label_smoothing = 1.5; },
                  "label_smoothing must lie in [0, 1], got 1.5.");
  expect_rejected([](Call&, auto& o, auto&) { o.label_smoothing = std::nan(""); },
                  "label_smoothing must lie in [0, 1], got nan.");
  expect_rejected([](Call&, auto& o, auto&) { o.lse_square_scale = -0.5; },
                  "lse_square_scale must be finite and >= 0, got -0.5.");
  expect_rejected([](Call&, auto& o, auto&) { o.softcap = -30; },
                  "softcap must be finite and >= 0 (0 turns it off), got -30.");
  expect_rejected([](Call&, auto& o, auto&) { o.softcap = INFINITY; },
                  "softcap must be finite and >= 0 (0 turns it off), got inf.");
  expect_rejected([](Call&, auto& o, auto&) { o.shift_sequence_length = 3; },
                  "shift_sequence_length must be 0 (no shift) or divide input's 8 rows into "
                  "whole sequences, got 3.");
  expect_rejected([](Call&, auto& o, auto&) { o.shift_sequence_length = -1; },
                  "shift_sequence_length must be 0 (no shift) or divide input's 8 rows into "
                  "whole sequences, got -1.");
  expect_rejected([](Call&, auto& o, auto&) { o.entropy_bonus = INFINITY; },
                  "entropy_bonus must be finite, got inf.");
  expect_rejected([](Call&, auto& o, auto&) { o.temperature = 0; },
                  "temperature must be finite and > 0, got 0.");
  expect_rejected([](Call&, auto& o, auto&) { o.temperature = std::nan(""); },
                  "temperature must be finite and > 0, got nan.");
  expect_rejected([](Call&, auto& o, auto&) { o.grad_output = -INFINITY; },
                  "grad_output must be finite, got -inf.");
  expect_rejected([](Call&, auto& o, auto&) { o.chunk_size = -1; },
                  "chunk_size must be >= 0 (0 takes the plan's heuristic), got -1.");
  expect_rejected([](Call&, auto& o, auto&) { o.reduction = static_cast<Reduction>(7); },
                  "reduction has the invalid value 7.");
  expect_rejected(
      [](Call&, auto& o, auto& out) {
        o.accumulate = true;
        out.grad_weight = {};
        out.grad_bias = {};
      },
      "accumulate was set but neither grad_weight nor grad_bias is given: it would change "
      "nothing.");
  expect_rejected([](Call& c, auto& o,
                     auto&) { o.grad_output_rows = make_tensor(c.loss.data(), make_shape(8)); },
                  "grad_output_rows needs reduction none, got mean.");
  expect_rejected(
      [](Call& c, auto& o, auto& out) {
        o.reduction = Reduction::none;
        o.grad_output_rows = make_tensor(c.cw.data(), make_shape(3));
        out.loss = make_tensor(c.loss.data(), make_shape(8));
        out.z_loss = {};
      },
      "grad_output_rows has 3 elements but input's rows are 8.");
}

// Soft targets: both or neither, their shapes, the weight's range and its pointless settings,
// and (after the shape checks, from the target pass) an invalid class or probability of a
// non-ignored row.
TEST(FlceValidation, RejectsBadSoftTargets) {
  static std::vector<index_t> classes(8 * 2, 1);
  static std::vector<float> probs(8 * 2, 0.5f);
  auto with_soft = [](auto& o, index_t rows, index_t k, index_t prob_k) {
    o.soft_target_indices =
        make_tensor(static_cast<index_t const*>(classes.data()), make_shape(rows, k));
    o.soft_target_probs =
        make_tensor(static_cast<float const*>(probs.data()), make_shape(rows, prob_k));
  };
  expect_rejected(
      [](Call&, auto& o, auto&) {
        o.soft_target_indices =
            make_tensor(static_cast<index_t const*>(classes.data()), make_shape(8, 2));
      },
      "soft_target_indices and soft_target_probs go together, but only soft_target_indices was "
      "given.");
  expect_rejected([&](Call&, auto& o, auto&) { with_soft(o, 7, 2, 2); },
                  "soft_target_indices has shape (7,2) but needs (rows, K) with input's 8 rows "
                  "and K >= 1.");
  expect_rejected([&](Call&, auto& o, auto&) { with_soft(o, 8, 0, 0); },
                  "soft_target_indices has shape (8,0) but needs (rows, K) with input's 8 rows "
                  "and K >= 1.");
  expect_rejected([&](Call&, auto& o, auto&) { with_soft(o, 8, 2, 1); },
                  "soft_target_probs has shape (8,1) but soft_target_indices has shape (8,2).");
  expect_rejected(
      [&](Call&, auto& o, auto&) {
        with_soft(o, 8, 2, 2);
        o.soft_target_weight = 1.5;
      },
      "soft_target_weight must lie in [0, 1], got 1.5.");
  expect_rejected(
      [&](Call&, auto& o, auto&) {
        with_soft(o, 8, 2, 2);
        o.soft_target_weight = 0;
      },
      "soft targets were given with soft_target_weight 0: they would change nothing.");
  expect_rejected([](Call&, auto& o, auto&) { o.soft_target_weight = 0.5; },
                  "soft_target_weight is 0.5 but no soft targets are given: it would change "
                  "nothing.");
  classes[2 * 2 + 1] = 9;  // row 2, entry 1: class 9 of 9
  expect_rejected([&](Call&, auto& o, auto&) { with_soft(o, 8, 2, 2); },
                  "soft target 1 of row 2 names class 9, outside [0, 9).");
  classes[2 * 2 + 1] = 1;
  probs[5 * 2] = -0.25f;
  expect_rejected([&](Call&, auto& o, auto&) { with_soft(o, 8, 2, 2); },
                  "soft target 0 of row 5 has probability -0.25; probabilities must be finite "
                  "and >= 0.");
  // Row 7's target is ignored: its soft targets are never read.
  probs[5 * 2] = 0.5f;
  probs[7 * 2] = NAN;
  Call c;
  auto o = c.options();
  with_soft(o, 8, 2, 2);
  EXPECT_EQ(error_of([&] { c.run(o, c.outputs()); }), "no error");
  probs[7 * 2] = 0.5f;
}

TEST(FlceValidation, RejectsOutputsOfTheWrongShape) {
  expect_rejected(
      [](Call& c, auto&, auto& out) { out.loss = make_tensor(c.loss.data(), make_shape(8)); },
      "loss has 8 elements but reduction mean gives 1.");
  expect_rejected([](Call&, auto& o, auto&) { o.reduction = Reduction::none; },
                  "loss has 1 element but reduction none gives 8 (one per row).");
  expect_rejected(
      [](Call& c, auto& o, auto& out) {
        o.reduction = Reduction::sum;
        out.z_loss = make_tensor(c.z.data(), make_shape(2));
      },
      "z_loss has 2 elements but reduction sum gives 1.");
  // lse and target_logprob are per row whatever the reduction.
  expect_rejected(
      [](Call& c, auto&, auto& out) { out.lse = make_tensor(c.loss.data(), make_shape(1)); },
      "lse has 1 element but input's rows are 8.");
  expect_rejected([](Call& c, auto&,
                     auto& out) { out.target_logprob = make_tensor(c.z.data(), make_shape(1)); },
                  "target_logprob has 1 element but input's rows are 8.");
  expect_rejected(
      [](Call& c, auto&, auto& out) { out.entropy = make_tensor(c.z.data(), make_shape(2)); },
      "entropy has 2 elements but input's rows are 8.");
  expect_rejected(
      [](Call&, auto&, auto& out) {
        static std::vector<index_t> classes(7);
        out.argmax = make_tensor(classes.data(), make_shape(7));
      },
      "argmax has 7 elements but input's rows are 8.");
  // The accuracy is reduced like the loss.
  expect_rejected(
      [](Call& c, auto&, auto& out) { out.accuracy = make_tensor(c.z.data(), make_shape(8)); },
      "accuracy has 8 elements but reduction mean gives 1.");
  expect_rejected([](Call& c, auto&,
                     auto& out) { out.grad_input = make_tensor(c.dx.data(), make_shape(8, 4)); },
                  "grad_input has shape (8,4) but input has shape (8,5).");
  expect_rejected(
      [](Call& c, auto&, auto& out) {
        out.grad_input = make_tensor(c.dx.data(), make_layout(make_shape(8, 5), make_stride(4, 1)));
      },
      "grad_input has row stride 4, less than its 5 columns.");
  expect_rejected([](Call& c, auto&,
                     auto& out) { out.grad_weight = make_tensor(c.dw.data(), make_shape(5, 9)); },
                  "grad_weight has shape (5,9) but weight has shape (9,5).");
  expect_rejected([](Call&, auto& o, auto&) { o.bias = {}; },
                  "grad_bias was given but there is no bias (Options::bias).");
  expect_rejected(
      [](Call& c, auto&, auto& out) { out.grad_bias = make_tensor(c.db.data(), make_shape(10)); },
      "grad_bias has 10 elements but the vocabulary size (weight's rows) is 9.");
}

TEST(FlceValidation, RejectsTargetsOutsideTheVocabulary) {
  expect_rejected([](Call& c, auto&, auto&) { c.y[3] = 9; },
                  "target 9 at row 3 is outside [0, 9) and is not ignore_index (-100).");
  expect_rejected([](Call& c, auto&, auto&) { c.y[0] = -1; },
                  "target -1 at row 0 is outside [0, 9) and is not ignore_index (-100).");
  // With another ignore_index, -100 is just an out-of-range target.
  expect_rejected([](Call&, auto& o, auto&) { o.ignore_index = 3; },
                  "target -100 at row 7 is outside [0, 9) and is not ignore_index (3).");
  // Under the causal shift the sentence names where the bad target is and which row predicts it.
  expect_rejected(
      [](Call& c, auto& o, auto&) {
        o.shift_sequence_length = 4;
        c.y[3] = 9;
      },
      "target 9 at row 3 (what row 2 predicts under shift_sequence_length 4) is outside [0, 9) "
      "and is not ignore_index (-100).");
}

TEST(FlceValidation, BackwardRejectsWhatItCannotScale) {
  Call c;
  Outputs<float> const out = c.outputs();
  EXPECT_EQ(error_of([&] { backward(std::nan(""), out); }), "grad_output must be finite, got nan.");
  std::vector<float> rows(8, 2.0f);
  EXPECT_EQ(error_of([&] { backward(make_tensor(rows.data(), make_shape(8)), out); }),
            "a per-row grad_output cannot rescale grad_weight or grad_bias after forward summed "
            "the rows into them; pass it to forward as Options::grad_output_rows instead.");
  Outputs<float> dx_only{.grad_input = make_tensor(c.dx.data(), make_shape(8, 5))};
  EXPECT_EQ(error_of([&] { backward(make_tensor(rows.data(), make_shape(7)), dx_only); }),
            "grad_output_rows has 7 elements but grad_input has 8 rows.");
  EXPECT_TRUE(c.untouched());
}

// What users write for outputs besides tensor views: a pointer to a scalar loss, a std::vector or
// std::span of per-row losses. Each is the same argument as the view it stands for, and a size
// that does not fit is the view's sentence.
TEST(FlceArguments, OutputsAcceptAPointerAndContiguousRanges) {
  Call c;
  float scalar = sentinel;
  c.run(c.options(), {.loss = &scalar});
  Call v;
  v.run(v.options(), {.loss = make_tensor(v.loss.data(), make_shape(1))});
  EXPECT_EQ(scalar, v.loss[0]);

  Options<float> none = c.options();
  none.reduction = Reduction::none;
  std::vector<float> rows(8, sentinel);
  c.run(none, {.loss = rows});
  std::vector<float> from_span(8, sentinel);
  c.run(none, {.loss = std::span<float>(from_span)});
  v.run(none, {.loss = make_tensor(v.loss.data(), make_shape(8))});
  EXPECT_EQ(rows, v.loss);
  EXPECT_EQ(from_span, v.loss);

  EXPECT_EQ(error_of([&] { c.run(none, {.loss = &scalar}); }),
            error_of([&] { c.run(none, {.loss = make_tensor(&scalar, make_shape(1))}); }));
  Outputs<float> const absent{.loss = static_cast<float*>(nullptr)};
  EXPECT_FALSE(absent.loss.present);
}

}  // namespace
