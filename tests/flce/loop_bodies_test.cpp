// The chunk loop's small bodies (target summary, loss finalization) with one lane and with a
// block of threads: the same results either way.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <tessel/exec/body/context.hpp>
#include <tessel/flce/loop_bodies.hpp>

#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using tessel::test::ThreadBlock;

TEST(SummarizeTargets, SumsTheNonIgnoredTargetsAndFindsTheFirstBadRowWithAnyLaneCount) {
  std::vector<std::int64_t> y = {3, -100, 0, 9, 2, 12, 3, -1, -100, 5};
  std::vector<float> w = {0.5f, 1, 1, 2, 1, 4, 1, 1, 1};  // V = 9
  // Non-ignored, valid: rows 0, 2, 4, 6, 9 -> weights 2 + 0.5 + 1 + 2 + 4; bad: rows 3, 5, 7.
  for (int lanes : {1, 2, 3, 8, 16}) {
    SCOPED_TRACE(lanes);
    ThreadBlock block(lanes);
    TargetSummary const s = block.run([&](ThreadBlock::Context& ctx) {
      return summarize_targets(ctx, y.data(), 1, 0, 10, 9, -100, w.data(), 1, VocabSlice{0, 9});
    });
    EXPECT_EQ(s.count, 5);
    EXPECT_EQ(s.weight_sum, 9.5);
    EXPECT_EQ(s.class_weight_sum, 12.5);
    EXPECT_EQ(s.first_bad_row, 3);
  }
  exec::SequentialContext seq;
  TargetSummary const none = summarize_targets(
      seq, y.data(), 1, 0, 3, 9, -100, static_cast<float const*>(nullptr), 1, VocabSlice{0, 9});
  EXPECT_EQ(none.count, 2);
  EXPECT_EQ(none.weight_sum, 2.0);
  EXPECT_EQ(none.class_weight_sum, 9.0);
  EXPECT_EQ(none.first_bad_row, -1);
}

// A vocabulary-parallel rank's summary: every valid target counts, but only the targets of its
// slice add their weight (1 without class weights), and the class-weight sum is the slice's; the
// slices' summaries add up to the whole vocabulary's.
TEST(SummarizeTargets, ASliceWeighsOnlyItsOwnClassesAndTheSlicesAddUp) {
  std::vector<std::int64_t> y = {3, -100, 0, 9, 2, 12, 3, -1, -100, 5};
  std::vector<float> w = {0.5f, 1, 1, 2, 1, 4, 1, 1, 1};  // V = 9
  exec::SequentialContext seq;
  for (float const* weights :
       {static_cast<float const*>(w.data()), static_cast<float const*>(nullptr)}) {
    TargetSummary const whole =
        summarize_targets(seq, y.data(), 1, 0, 10, 9, -100, weights, 1, VocabSlice{0, 9});
    TargetSummary sum;
    for (VocabSlice slice : {VocabSlice{0, 4}, VocabSlice{4, 1}, VocabSlice{5, 4}}) {
      TargetSummary const s = summarize_targets(
          seq, y.data(), 1, 0, 10, 9, -100, weights ? weights + slice.offset : nullptr, 1, slice);
      EXPECT_EQ(s.count, whole.count);
      EXPECT_EQ(s.first_bad_row, whole.first_bad_row);
      sum.weight_sum += s.weight_sum;
      sum.class_weight_sum += s.class_weight_sum;
    }
    EXPECT_EQ(sum.weight_sum, whole.weight_sum);
    EXPECT_EQ(sum.class_weight_sum, whole.class_weight_sum);
  }
  TargetSummary const first =
      summarize_targets(seq, y.data(), 1, 0, 10, 9, -100, w.data(), 1, VocabSlice{0, 4});
  EXPECT_EQ(first.weight_sum, 2 + 0.5 + 1 + 2);  // targets 3, 0, 2, 3
  EXPECT_EQ(first.class_weight_sum, 4.5);
}

TEST(LossScales, DivideOnlyForMeanAndGiveZeroForAZeroDivisor) {
  TargetSummary s;
  s.weight_sum = 4;
  s.count = 2;
  EXPECT_EQ(loss_scales(s, Reduction::mean).ce, 0.25);
  EXPECT_EQ(loss_scales(s, Reduction::mean).z, 0.5);
  EXPECT_EQ(loss_scales(s, Reduction::sum).ce, 1.0);
  TargetSummary empty;
  EXPECT_EQ(loss_scales(empty, Reduction::mean).ce, 0.0);
  EXPECT_EQ(loss_scales(empty, Reduction::mean).z, 0.0);
}

TEST(FinalizeLosses, WritesScaledSumsOrPerRowLossesWithAnyLaneCount) {
  std::vector<float> ce = {1, 2, 3, 4, 5}, z = {0.5f, 0, 0.25f, 0, 1};
  LossScales const scales{0.5, 0.25};
  for (int lanes : {1, 4, 7}) {
    SCOPED_TRACE(lanes);
    ThreadBlock block(lanes);
    float loss = 0, zl = 0;
    block.run([&](ThreadBlock::Context& ctx) {
      finalize_losses(ctx, ce.data(), z.data(), 5, Reduction::mean, scales, &loss, 1, &zl, 1);
      return 0;
    });
    EXPECT_FLOAT_EQ(loss, 15 * 0.5 + 1.75 * 0.25);
    EXPECT_FLOAT_EQ(zl, 1.75 * 0.25);
    std::vector<float> rows(10, -1.0f);
    ThreadBlock again(lanes);
    again.run([&](ThreadBlock::Context& ctx) {
      finalize_losses(ctx, ce.data(), z.data(), 5, Reduction::none, LossScales{}, rows.data(), 2,
                      static_cast<float*>(nullptr), 1);
      return 0;
    });
    EXPECT_EQ(rows, (std::vector<float>{1.5f, -1, 2, -1, 3.25f, -1, 4, -1, 6, -1}));
  }
}

}  // namespace
