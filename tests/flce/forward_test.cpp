// Host FLCE against the unfused float64 reference: every reduction x dtype x option combination,
// odd shapes, ignored rows, upstream gradients, static shapes and strided views.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tessel/flce/forward.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "flce/harness.hpp"
#include "flce/reference.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

template <class T>
class FlceForward : public ::testing::Test {};
using StorageTypes = ::testing::Types<double, float, half, bfloat16>;
TYPED_TEST_SUITE(FlceForward, StorageTypes);

// The six options as bits of a combination index.
struct Combination {
  bool ignore, class_weights, smoothing, z_loss, softcap, bias;
  explicit Combination(int bits)
      : ignore(bits & 1),
        class_weights(bits & 2),
        smoothing(bits & 4),
        z_loss(bits & 8),
        softcap(bits & 16),
        bias(bits & 32) {}
  std::string label() const {
    std::string s;
    for (auto [on, name] : {std::pair{ignore, "ignore"},
                            {class_weights, "class_weights"},
                            {smoothing, "label_smoothing"},
                            {z_loss, "z_loss"},
                            {softcap, "softcap"},
                            {bias, "bias"}})
      if (on) s += std::string(s.empty() ? "" : "+") + name;
    return s.empty() ? "plain" : s;
  }
};

template <class T>
void expect_matches_reference(Problem const& p, ReferenceOptions const& o, index_t chunk = 0) {
  Problem const q = rounded<T>(p);
  ReferenceResult const want = reference(q, o);
  FlceRun const got = run_tessel<T>(q, o, chunk);
  Tolerance const tol = tolerance<T>();
  EXPECT_TRUE(all_close(got.loss, want.loss, tol)) << "loss";
  EXPECT_TRUE(all_close(got.z_loss, want.z_loss, tol)) << "z_loss";
  EXPECT_TRUE(all_close(got.lse, want.lse, tol)) << "lse";
  EXPECT_TRUE(all_close(got.target_logprob, want.target_logprob, tol)) << "target_logprob";
  EXPECT_TRUE(all_close(got.entropy, want.entropy, tol)) << "entropy";
  EXPECT_TRUE(argmax_agrees(got.argmax, want, q.v, tol)) << "argmax";
  EXPECT_TRUE(accuracy_follows_argmax(
      got, shifted_targets(q.target, o.shift_sequence_length, o.ignore_index), o.reduction,
      o.ignore_index))
      << "accuracy";
  if (got.argmax == want.argmax) {
    EXPECT_TRUE(all_close(got.accuracy, want.accuracy, {1e-7, 1e-7})) << "accuracy";
  }
  EXPECT_TRUE(all_close(got.grad_input, want.grad_input, tol)) << "grad_input";
  EXPECT_TRUE(all_close(got.grad_weight, want.grad_weight, tol)) << "grad_weight";
  if (!p.bias.empty()) {
    EXPECT_TRUE(all_close(got.grad_bias, want.grad_bias, tol)) << "grad_bias";
  }
}

// BT=47 rows, H=31, V=123: the plan's chunks (16 rows) do not divide BT, and nothing is a power
// of two. All 64 combinations of the six options under each reduction.
TYPED_TEST(FlceForward, MatchesTheReferenceForEveryReductionAndOptionCombination) {
  using T = TypeParam;
  for (Reduction reduction : {Reduction::mean, Reduction::sum, Reduction::none}) {
    for (int bits = 0; bits < 64; ++bits) {
      Combination const c(bits);
      SCOPED_TRACE(dtype_label<T>() + " " + std::string(reduction_name(reduction)) + " " +
                   c.label());
      Problem const p = random_problem(47, 31, 123, 1000u + static_cast<unsigned>(bits), c.bias,
                                       c.class_weights, c.ignore ? 0.25 : 0.0);
      ReferenceOptions o;
      o.reduction = reduction;
      o.label_smoothing = c.smoothing ? 0.1 : 0.0;
      o.lse_square_scale = c.z_loss ? 1e-2 : 0.0;
      o.softcap = c.softcap ? 3.0 : 0.0;
      expect_matches_reference<T>(p, o);
    }
  }
}

TYPED_TEST(FlceForward, MatchesTheReferenceOnOddShapes) {
  using T = TypeParam;
  struct Shape {
    std::int64_t bt, h, v, chunk;
    char const* what;
  };
  for (Shape s : {Shape{1, 31, 123, 0, "one row"}, Shape{47, 40, 5, 0, "V < H"},
                  Shape{47, 31, 123, 7, "chunk 7 does not divide 47"},
                  Shape{47, 31, 123, 1, "one row per chunk"},
                  Shape{47, 31, 123, 4096, "one chunk larger than BT"}, Shape{9, 1, 17, 0, "H = 1"},
                  Shape{9, 8, 1, 0, "V = 1"}}) {
    SCOPED_TRACE(s.what);
    Problem const p = random_problem(s.bt, s.h, s.v, 7u, true, true, 0.2);
    ReferenceOptions o;
    o.label_smoothing = 0.05;
    o.lse_square_scale = 1e-3;
    o.softcap = 4.0;
    for (Reduction r : {Reduction::mean, Reduction::none}) {
      o.reduction = r;
      expect_matches_reference<T>(p, o, s.chunk);
    }
  }
}

// RL-style options, each alone and under the softcap, smoothing, z-loss, bias and class weights,
// for every reduction, against the reference (which also gives the per-row lse, target
// log-probabilities and entropy): the sampling temperature (before the softcap), and the entropy
// bonus with its gradient (beta of either sign).
TYPED_TEST(FlceForward, MatchesTheReferenceWithTemperatureAndEntropyBonus) {
  using T = TypeParam;
  struct Case {
    double temperature, entropy_bonus;
  };
  for (Case c : {Case{0.7, 0}, Case{2.5, 0}, Case{1, 0.05}, Case{1, -0.3}, Case{1.3, 0.05}}) {
    for (bool others : {false, true}) {
      for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
        SCOPED_TRACE(dtype_label<T>() + " T=" + std::to_string(c.temperature) +
                     " beta=" + std::to_string(c.entropy_bonus) +
                     (others ? " with every option " : " alone ") + std::string(reduction_name(r)));
        Problem const p = random_problem(29, 17, 61, 31u, others, others, 0.2);
        ReferenceOptions o;
        o.reduction = r;
        o.temperature = c.temperature;
        o.entropy_bonus = c.entropy_bonus;
        if (others) {
          o.softcap = 2.5;
          o.label_smoothing = 0.1;
          o.lse_square_scale = 1e-2;
        }
        expect_matches_reference<T>(p, o);
      }
    }
  }
}

TEST(FlceForwardF64, AnEntropyOutputAloneChangesNoOtherResult) {
  Problem const p = random_problem(17, 7, 29, 3u, true, false, 0.2);
  ReferenceOptions const o;
  FlceRun const with = run_tessel<double>(p, o);
  Wanted without;
  without.entropy = false;
  FlceRun const plain = run_tessel<double>(p, o, 0, without);
  EXPECT_EQ(with.loss, plain.loss);
  EXPECT_EQ(with.grad_input, plain.grad_input);
  EXPECT_EQ(with.grad_weight, plain.grad_weight);
  for (double h : with.entropy) EXPECT_GE(h, 0.0);
}

// Soft targets (a teacher's top-5, one row repeating a class) against the reference, every
// reduction, alone (alpha 1) and mixed with the hard target (alpha 0.6), plain and with every
// other option, with ignored rows (their soft targets hold garbage that must not be read).
TYPED_TEST(FlceForward, MatchesTheReferenceWithSoftTargets) {
  using T = TypeParam;
  for (double alpha : {1.0, 0.6}) {
    for (bool others : {false, true}) {
      for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
        SCOPED_TRACE(dtype_label<T>() + " alpha " + std::to_string(alpha) +
                     (others ? " every option " : " alone ") + std::string(reduction_name(r)));
        Problem const p = random_problem(31, 13, 57, 41u, others, others, 0.2);
        ReferenceOptions o;
        o.reduction = r;
        add_soft_targets(o, p.bt, p.v, 5, 7u, alpha);
        for (std::int64_t i = 0; i < p.bt; ++i)
          if (p.target[i] == o.ignore_index) {
            o.soft_classes[i * 5] = -7;  // never read
            o.soft_probs[i * 5] = NAN;
          }
        if (others) {
          o.label_smoothing = 0.1;
          o.lse_square_scale = 1e-2;
          o.softcap = 3;
          o.temperature = 0.8;
          o.entropy_bonus = 0.05;
        }
        expect_matches_reference<T>(p, o);
      }
    }
  }
}

// A one-hot soft target on the hard target's class is the hard target: the same loss (without
// class weights both means divide by the non-ignored rows) and gradients, to rounding.
TEST(FlceForwardF64, OneHotSoftTargetsAreTheHardTarget) {
  Problem const p = random_problem(19, 6, 23, 12u, true, false, 0.2);
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    SCOPED_TRACE(std::string(reduction_name(r)));
    ReferenceOptions o;
    o.reduction = r;
    o.label_smoothing = 0.1;
    FlceRun const hard = run_tessel<double>(p, o);
    o.soft_k = 1;
    for (std::int64_t t : p.target) {
      o.soft_classes.push_back(t < 0 ? 0 : t);
      o.soft_probs.push_back(1.0);
    }
    FlceRun const soft = run_tessel<double>(p, o);
    EXPECT_TRUE(all_close(soft.loss, hard.loss, {1e-14, 1e-13}));
    EXPECT_TRUE(all_close(soft.grad_input, hard.grad_input, {1e-15, 1e-13}));
    EXPECT_TRUE(all_close(soft.grad_weight, hard.grad_weight, {1e-15, 1e-13}));
    EXPECT_TRUE(all_close(soft.grad_bias, hard.grad_bias, {1e-15, 1e-13}));
  }
}

// The argmax rides along the row's reduction: asking for it (and the accuracy) changes no bit
// of any other result, with every row variant (smoothing, entropy) and reduction.
TEST(FlceForwardF64, ArgmaxAndAccuracyAloneChangeNoOtherResult) {
  Problem const p = random_problem(23, 7, 41, 9u, true, true, 0.2);
  for (double smoothing : {0.0, 0.1}) {
    for (double bonus : {0.0, 0.2}) {
      for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
        SCOPED_TRACE("smoothing " + std::to_string(smoothing) + " entropy_bonus " +
                     std::to_string(bonus) + " " + std::string(reduction_name(r)));
        ReferenceOptions o;
        o.reduction = r;
        o.label_smoothing = smoothing;
        o.entropy_bonus = bonus;
        FlceRun const with = run_tessel<double>(p, o);
        Wanted without;
        without.argmax = without.accuracy = false;
        FlceRun const plain = run_tessel<double>(p, o, 0, without);
        EXPECT_EQ(with.loss, plain.loss);
        EXPECT_EQ(with.z_loss, plain.z_loss);
        EXPECT_EQ(with.lse, plain.lse);
        EXPECT_EQ(with.entropy, plain.entropy);
        EXPECT_EQ(with.grad_input, plain.grad_input);
        EXPECT_EQ(with.grad_weight, plain.grad_weight);
        EXPECT_EQ(with.grad_bias, plain.grad_bias);
        // Without an argmax output, the accuracy alone still counts the same hits.
        Wanted accuracy_only;
        accuracy_only.argmax = false;
        EXPECT_EQ(run_tessel<double>(p, o, 0, accuracy_only).accuracy, with.accuracy);
      }
    }
  }
}

// Exact ties (integer inputs, duplicated weight rows): the lowest tied class wins, as torch.argmax
// gives, whatever the chunking; a tie with the target's class below it is a miss.
TEST(FlceForwardF64, ArgmaxTakesTheLowestTiedClass) {
  Problem p;
  p.bt = 4;
  p.h = 3;
  p.v = 9;
  p.x = {1, 2, 0, 0, 1, 1, 2, 0, 1, -1, 0, 0};
  p.w.assign(p.v * p.h, 0.0);
  // Rows 2, 5 and 7 of the weight are equal and larger than the rest for x rows 0-2.
  for (int j : {2, 5, 7}) p.w[j * 3 + 0] = p.w[j * 3 + 1] = p.w[j * 3 + 2] = 3;
  p.w[4 * 3 + 0] = 1;
  p.target = {5, 2, 7, 3};
  // Rows 0-2 tie on classes 2, 5, 7; row 3 is x = (-1, 0, 0): logits -3 for classes 2, 5, 7, -1
  // for class 4, 0 elsewhere. (Not written as the literal {2, 2, 2, 0}: GCC 12.2 at -O2 with an
  // AVX-512 -march stores that as {2, 2, 2, 2} here, docs/design.md "Tests".)
  std::vector<std::int64_t> want_argmax(4, 2);
  want_argmax[3] = 0;
  for (index_t chunk : {0, 1, 3}) {
    for (Reduction r : {Reduction::none, Reduction::mean}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " " + std::string(reduction_name(r)));
      ReferenceOptions o;
      o.reduction = r;
      FlceRun const got = run_tessel<double>(p, o, chunk);
      EXPECT_EQ(got.argmax, want_argmax);
      if (r == Reduction::none) {
        EXPECT_EQ(got.accuracy, (std::vector<double>{0, 1, 0, 0}));
      } else {
        EXPECT_EQ(got.accuracy, (std::vector<double>{0.25}));
      }
    }
  }
}

// Ignored rows predict nothing (-1) and are not counted; with every row ignored the mean
// accuracy is 0, like the loss.
TEST(FlceForwardF64, IgnoredRowsHaveNoArgmaxAndDoNotCount) {
  Problem p = random_problem(12, 5, 19, 4u);
  for (std::size_t i = 0; i < p.target.size(); i += 3) p.target[i] = -100;
  ReferenceOptions o;
  FlceRun const got = run_tessel<double>(p, o);
  ReferenceResult const want = reference(p, o);
  EXPECT_EQ(got.argmax, want.argmax);
  for (std::size_t i = 0; i < p.target.size(); i += 3) EXPECT_EQ(got.argmax[i], -1);
  EXPECT_TRUE(all_close(got.accuracy, want.accuracy, {1e-15, 1e-15}));
  for (auto& t : p.target) t = -100;
  FlceRun const none = run_tessel<double>(p, o);
  EXPECT_EQ(none.accuracy, (std::vector<double>{0.0}));
  EXPECT_EQ(none.argmax, std::vector<std::int64_t>(12, -1));
}

// The causal-LM shift: sequences of 6 rows, every reduction, with ignored targets and every
// option; and the same call equals an unshifted one on targets shifted by hand, bit for bit.
TYPED_TEST(FlceForward, ShiftsTargetsWithinSequences) {
  using T = TypeParam;
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    SCOPED_TRACE(dtype_label<T>() + " " + std::string(reduction_name(r)));
    Problem const p = random_problem(30, 11, 41, 77u, true, true, 0.2);
    ReferenceOptions o;
    o.reduction = r;
    o.shift_sequence_length = 6;
    o.label_smoothing = 0.05;
    o.lse_square_scale = 1e-3;
    expect_matches_reference<T>(p, o);

    Problem q = rounded<T>(p);
    FlceRun const shifted = run_tessel<T>(q, o);
    q.target = shifted_targets(q.target, 6, o.ignore_index);
    o.shift_sequence_length = 0;
    FlceRun const by_hand = run_tessel<T>(q, o);
    EXPECT_EQ(shifted.loss, by_hand.loss);
    EXPECT_EQ(shifted.grad_input, by_hand.grad_input);
    EXPECT_EQ(shifted.grad_weight, by_hand.grad_weight);
    EXPECT_EQ(shifted.target_logprob, by_hand.target_logprob);
  }
}

// Without smoothing and z-loss a row's loss is -target_logprob: the per-row outputs agree with it,
// so grad_output_rows = -advantages differentiates sum_i A_i logp_i (the policy gradient).
TEST(FlceForwardF64, TargetLogprobIsMinusTheRowLoss) {
  Problem const p = random_problem(13, 9, 37, 5u, false, false, 0.25);
  ReferenceOptions o;
  o.reduction = Reduction::none;
  o.temperature = 0.8;
  FlceRun const got = run_tessel<double>(p, o);
  for (std::size_t i = 0; i < got.loss.size(); ++i)
    EXPECT_NEAR(got.target_logprob[i], -got.loss[i], 1e-12) << "row " << i;
}

TYPED_TEST(FlceForward, IgnoresTargetsEqualToAnIgnoreIndexInsideTheVocabulary) {
  using T = TypeParam;
  Problem p = random_problem(40, 16, 10, 11u, true, true);
  for (std::size_t i = 0; i < p.target.size(); i += 3) p.target[i] = 4;  // many rows hit class 4
  ReferenceOptions o;
  o.ignore_index = 4;
  o.label_smoothing = 0.2;
  expect_matches_reference<T>(p, o);
  // And class 4 really is dropped: the reference with those rows removed gives the same mean.
  Problem kept = p;
  kept.target.clear();
  kept.x.clear();
  for (std::int64_t i = 0; i < p.bt; ++i)
    if (p.target[i] != 4) {
      kept.target.push_back(p.target[i]);
      kept.x.insert(kept.x.end(), p.x.begin() + i * p.h, p.x.begin() + (i + 1) * p.h);
    }
  kept.bt = static_cast<std::int64_t>(kept.target.size());
  ReferenceOptions plain = o;
  plain.ignore_index = -100;
  FlceRun const got = run_tessel<T>(rounded<T>(p), o);
  EXPECT_TRUE(all_close(got.loss, reference(rounded<T>(kept), plain).loss, tolerance<T>()));
}

// tessel's documented difference from PyTorch: a mean over no rows is 0 with zero gradients
// (PyTorch divides 0 by 0 and returns NaN).
TYPED_TEST(FlceForward, AMeanOverOnlyIgnoredRowsIsZeroWithZeroGradients) {
  using T = TypeParam;
  Problem p = random_problem(12, 8, 20, 5u, true, true, 1.0);
  ReferenceOptions o;
  o.label_smoothing = 0.1;
  o.lse_square_scale = 0.1;
  for (Reduction r : {Reduction::mean, Reduction::sum}) {
    o.reduction = r;
    FlceRun const got = run_tessel<T>(rounded<T>(p), o);
    EXPECT_EQ(got.loss, std::vector<double>{0.0});
    EXPECT_EQ(got.z_loss, std::vector<double>{0.0});
    for (auto const* g : {&got.grad_input, &got.grad_weight, &got.grad_bias})
      for (double e : *g) ASSERT_EQ(e, 0.0);
  }
}

TYPED_TEST(FlceForward, AnEmptyBatchGivesZeroLossAndZeroWeightGradients) {
  using T = TypeParam;
  Problem p = random_problem(0, 8, 20, 5u, true);
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    ReferenceOptions o;
    o.reduction = r;
    FlceRun const got = run_tessel<T>(p, o);
    EXPECT_EQ(got.plan.num_chunks, 0);
    EXPECT_EQ(got.loss, r == Reduction::none ? std::vector<double>{} : std::vector<double>{0.0});
    EXPECT_EQ(got.grad_weight, std::vector<double>(20 * 8, 0.0));
    EXPECT_EQ(got.grad_bias, std::vector<double>(20, 0.0));
  }
}

TYPED_TEST(FlceForward, MultipliesTheGradientsByGradOutput) {
  using T = TypeParam;
  Problem const p = random_problem(30, 12, 50, 21u, true, true, 0.1);
  ReferenceOptions o;
  o.reduction = Reduction::sum;
  o.lse_square_scale = 1e-2;
  o.grad_output = -2.5;
  expect_matches_reference<T>(p, o);
  // The loss itself does not depend on grad_output.
  ReferenceOptions unit = o;
  unit.grad_output = 1.0;
  EXPECT_EQ(run_tessel<T>(rounded<T>(p), o).loss, run_tessel<T>(rounded<T>(p), unit).loss);
}

TYPED_TEST(FlceForward, FoldsPerRowGradOutputIntoEveryGradientForReductionNone) {
  using T = TypeParam;
  Problem const p = random_problem(30, 12, 50, 22u, true, true, 0.1);
  ReferenceOptions o;
  o.reduction = Reduction::none;
  o.label_smoothing = 0.1;
  for (std::int64_t i = 0; i < p.bt; ++i)
    o.grad_output_rows.push_back(0.25 * static_cast<double>(i % 7) - 0.5);
  expect_matches_reference<T>(p, o);
}

// Gradient accumulation: two micro-batches with accumulate add their gradients to what grad_weight
// and grad_bias held, which is the full batch's gradient (reduction sum) plus that; grad_input is
// each call's own. Several chunks per call, so the first chunk's GEMM must not overwrite.
TYPED_TEST(FlceForward, AccumulateAddsTheGradientsOfMicroBatches) {
  using T = TypeParam;
  using C = accum_t<T>;
  Problem const p = rounded<T>(random_problem(24, 8, 30, 31u, true, true, 0.1));
  ReferenceOptions o;
  o.reduction = Reduction::sum;
  o.label_smoothing = 0.1;
  ReferenceResult const want = reference(p, o);

  auto const x = to_storage<T>(p.x), w = to_storage<T>(p.w), b = to_storage<T>(p.bias);
  auto const cw = to_storage<T>(p.class_weights);
  std::vector<C> dw(30 * 8), db(30), dx(24 * 8);
  for (std::size_t i = 0; i < dw.size(); ++i) dw[i] = C(0.25) * static_cast<C>(i % 5);
  for (std::size_t i = 0; i < db.size(); ++i) db[i] = C(-0.5) * static_cast<C>(i % 3);
  std::vector<double> const dw0 = to_double(dw), db0 = to_double(db);
  auto micro_batch = [&](index_t r0, index_t rows, bool accumulate, T* grad_input, C* gw, C* gb) {
    forward(make_tensor(x.data() + r0 * 8, make_shape(rows, 8)),
            make_tensor(w.data(), make_shape(30, 8)),
            make_tensor(p.target.data() + r0, make_shape(rows)),
            {.reduction = Reduction::sum,
             .label_smoothing = 0.1,
             .class_weights = make_tensor(cw.data(), make_shape(30)),
             .bias = make_tensor(b.data(), make_shape(30)),
             .chunk_size = 5,
             .accumulate = accumulate},
            {.grad_input = make_tensor(grad_input, make_shape(rows, 8)),
             .grad_weight = make_tensor(gw, make_shape(30, 8)),
             .grad_bias = make_tensor(gb, make_shape(30))});
  };
  std::vector<T> dx_a(12 * 8), dx_b(12 * 8);
  micro_batch(0, 12, true, dx_a.data(), dw.data(), db.data());
  micro_batch(12, 12, true, dx_b.data(), dw.data(), db.data());
  micro_batch(0, 0, true, dx_a.data(), dw.data(), db.data());  // no rows: adds nothing

  std::vector<double> want_dw = want.grad_weight, want_db = want.grad_bias;
  for (std::size_t i = 0; i < want_dw.size(); ++i) want_dw[i] += dw0[i];
  for (std::size_t i = 0; i < want_db.size(); ++i) want_db[i] += db0[i];
  EXPECT_TRUE(all_close(to_double(dw), want_dw, tolerance<T>()));
  EXPECT_TRUE(all_close(to_double(db), want_db, tolerance<T>()));

  // grad_input is overwritten: the second micro-batch's equals that of a call without accumulate.
  std::vector<C> fresh_dw(30 * 8), fresh_db(30);
  std::vector<T> dx_fresh(12 * 8);
  micro_batch(12, 12, false, dx_fresh.data(), fresh_dw.data(), fresh_db.data());
  EXPECT_EQ(to_double(dx_b), to_double(dx_fresh));
  std::vector<double> want_dx_b(want.grad_input.begin() + 12 * 8, want.grad_input.end());
  EXPECT_TRUE(all_close(to_double(dx_b), want_dx_b, tolerance<T>()));
}

TEST(FlceForwardF32, AnEvaluationPassWritesTheLossAndNoGradient) {
  Problem const p = random_problem(20, 8, 30, 3u, true);
  ReferenceOptions o;
  o.lse_square_scale = 1e-2;
  Wanted loss_only;
  loss_only.grad_input = loss_only.grad_weight = loss_only.grad_bias = false;
  FlceRun const eval = run_tessel<float>(p, o, 0, loss_only);
  FlceRun const train = run_tessel<float>(p, o);
  EXPECT_EQ(eval.loss, train.loss);
  EXPECT_EQ(eval.grad_input, std::vector<double>(20 * 8, 0.0));  // the zeros it was given
  EXPECT_TRUE(all_close(eval.loss, reference(p, o).loss, tolerance<float>()));
}

TEST(FlceForwardF32, ResultsAgreeAcrossChunkSizes) {
  Problem const p = random_problem(64, 16, 40, 9u, true, true, 0.1);
  ReferenceOptions o;
  o.label_smoothing = 0.1;
  FlceRun const one = run_tessel<float>(p, o, 1);
  for (index_t chunk : {3, 16, 64, 100}) {
    FlceRun const other = run_tessel<float>(p, o, chunk);
    EXPECT_EQ(other.plan.chunk_size, chunk);
    // The row body and the per-row loss sums are independent of the chunking; GEMMs of other
    // shapes may round differently.
    EXPECT_EQ(other.loss, one.loss);
    EXPECT_TRUE(all_close(other.grad_input, one.grad_input, {1e-7, 1e-5}));
    EXPECT_TRUE(all_close(other.grad_weight, one.grad_weight, {1e-6, 1e-5}));
  }
}

TEST(FlceForwardF32, StaysFiniteForLargeLogits) {
  Problem const p = random_problem(16, 8, 30, 4u, false, false, 0.0, -100, 100.0, 10.0);
  ReferenceOptions o;
  FlceRun const got = run_tessel<float>(p, o);
  ReferenceResult const want = reference(p, o);
  EXPECT_TRUE(std::isfinite(got.loss[0]));
  EXPECT_TRUE(all_close(got.loss, want.loss, {1e-3, 1e-5}));
}

TEST(FlceForwardF32, ReturnsThePlanItUsed) {
  Problem const p = random_problem(47, 31, 123, 1u);
  EXPECT_EQ(run_tessel<float>(p, {}).plan, make_host_plan(47, 31, 123));
  EXPECT_EQ(run_tessel<float>(p, {}, 5).plan, make_plan(47, 31, 123, 5));
}

TEST(FlceForwardF32, StaticShapesGiveTheSameResultsAsRunTimeShapes) {
  Problem const p = random_problem(24, 8, 40, 6u, true, false, 0.2);
  ReferenceOptions o;
  o.label_smoothing = 0.1;
  FlceRun const dynamic = run_tessel<float>(p, o);

  auto x = to_storage<float>(p.x);
  auto w = to_storage<float>(p.w);
  auto b = to_storage<float>(p.bias);
  std::vector<float> loss(1), dx(24 * 8), dw(40 * 8), db(40);
  auto xs = make_tensor(x.data(), make_shape(Int<24>{}, Int<8>{}));
  auto ws = make_tensor(w.data(), make_shape(Int<40>{}, Int<8>{}));
  auto ys = make_tensor(p.target.data(), make_shape(Int<24>{}));
  static_assert(decltype(make_host_plan(Int<24>{}, Int<8>{}, Int<40>{}))::chunk_size == 2);
  FlcePlan const plan =
      forward(xs, ws, ys, {.label_smoothing = 0.1, .bias = make_tensor(b.data(), make_shape(40))},
              {.loss = make_tensor(loss.data(), make_shape(1)),
               .grad_input = make_tensor(dx.data(), make_shape(Int<24>{}, Int<8>{})),
               .grad_weight = make_tensor(dw.data(), make_shape(40, 8)),
               .grad_bias = make_tensor(db.data(), make_shape(40))});
  EXPECT_EQ(plan, make_host_plan(24, 8, 40));
  EXPECT_EQ(to_double(loss), dynamic.loss);
  EXPECT_EQ(to_double(dx), dynamic.grad_input);
  EXPECT_EQ(to_double(dw), dynamic.grad_weight);
  EXPECT_EQ(to_double(db), dynamic.grad_bias);
}

TEST(FlceForwardF32, ReadsAndWritesStridedViewsAndLeavesTheirGapsAlone) {
  Problem const p = random_problem(10, 6, 15, 8u, true, true, 0.2);
  ReferenceOptions o;
  o.reduction = Reduction::none;
  ReferenceResult const want = reference(p, o);

  float const gap = -7.0f;
  std::int64_t const xs = 9, ws = 8, dxs = 11, dws = 7;  // padded row strides
  std::vector<float> x(10 * xs, gap), w(15 * ws, gap), b(15 * 2, gap), cw(15 * 3, gap);
  for (int i = 0; i < 10; ++i)
    for (int k = 0; k < 6; ++k) x[i * xs + k] = static_cast<float>(p.x[i * 6 + k]);
  for (int j = 0; j < 15; ++j) {
    for (int k = 0; k < 6; ++k) w[j * ws + k] = static_cast<float>(p.w[j * 6 + k]);
    b[j * 2] = static_cast<float>(p.bias[j]);
    cw[j * 3] = static_cast<float>(p.class_weights[j]);
  }
  std::vector<std::int64_t> y(10 * 2, -100);
  for (int i = 0; i < 10; ++i) y[i * 2] = p.target[i];
  std::vector<float> loss(10 * 3, gap), dx(10 * dxs, gap), dw(15 * dws, gap), db(15 * 2, gap);

  auto strided = [](auto* data, auto rows, auto cols, auto row_stride) {
    return make_tensor(data, make_layout(make_shape(rows, cols), make_stride(row_stride, 1)));
  };
  auto vec = [](auto* data, auto n, auto stride) {
    return make_tensor(data, make_layout(make_shape(n), make_stride(stride)));
  };
  forward(strided(x.data(), 10, 6, xs), strided(w.data(), 15, 6, ws), vec(y.data(), 10, 2),
          {.reduction = Reduction::none,
           .class_weights = vec(cw.data(), 15, 3),
           .bias = vec(b.data(), 15, 2)},
          {.loss = vec(loss.data(), 10, 3),
           .grad_input = strided(dx.data(), 10, 6, dxs),
           .grad_weight = strided(dw.data(), 15, 6, dws),
           .grad_bias = vec(db.data(), 15, 2)});

  std::vector<double> got_loss, got_dx, got_dw, got_db;
  for (int i = 0; i < 10; ++i) {
    got_loss.push_back(loss[i * 3]);
    EXPECT_EQ(loss[i * 3 + 1], gap);
    for (int k = 0; k < 6; ++k) got_dx.push_back(dx[i * dxs + k]);
    for (int k = 6; k < dxs; ++k) EXPECT_EQ(dx[i * dxs + k], gap);
  }
  for (int j = 0; j < 15; ++j) {
    for (int k = 0; k < 6; ++k) got_dw.push_back(dw[j * dws + k]);
    EXPECT_EQ(dw[j * dws + 6], gap);
    got_db.push_back(db[j * 2]);
    EXPECT_EQ(db[j * 2 + 1], gap);
  }
  Tolerance const tol = tolerance<float>();
  EXPECT_TRUE(all_close(got_loss, want.loss, tol));
  EXPECT_TRUE(all_close(got_dx, want.grad_input, tol));
  EXPECT_TRUE(all_close(got_dw, want.grad_weight, tol));
  EXPECT_TRUE(all_close(got_db, want.grad_bias, tol));
}

TEST(FlceForwardF32, AcceptsInt32TargetsAndOwningTensors) {
  Problem const p = random_problem(12, 5, 9, 12u);
  auto x = make_host_tensor<float>(make_shape(12, 5));
  auto w = make_host_tensor<float>(make_shape(9, 5));
  auto y = make_host_tensor<std::int32_t>(make_shape(12));
  for (int i = 0; i < 60; ++i) x[i] = static_cast<float>(p.x[i]);
  for (int i = 0; i < 45; ++i) w[i] = static_cast<float>(p.w[i]);
  for (int i = 0; i < 12; ++i) y[i] = static_cast<std::int32_t>(p.target[i]);
  auto loss = make_host_tensor<float>(make_shape(1));
  forward(x, w, y, {}, {.loss = loss});
  EXPECT_TRUE(all_close({loss[0]}, reference(p, {}).loss, tolerance<float>()));
}

}  // namespace
