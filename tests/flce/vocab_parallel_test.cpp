// Vocabulary-parallel FLCE without MPI: on the single-process communicator it is the plain call,
// bit for bit, for every option; the combination of slices' row statistics against the whole
// row's (any split, ties across slices, a slice of -inf logits); its argument errors. The
// multi-rank runs are tests/mpi/flce_vocab_parallel_test.cpp (ctest's mpi.np1..3).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tessel/dist/single_process.hpp>
#include <tessel/exec/body/context.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/flce/row.hpp>
#include <tessel/flce/vocab_parallel.hpp>

#include "flce/harness.hpp"
#include "flce/reference.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;
using tessel::test::error_of;

template <class T>
class FlceVocabParallelOneRank : public ::testing::Test {};
using StorageTypes = ::testing::Types<double, float, half, bfloat16>;
TYPED_TEST_SUITE(FlceVocabParallelOneRank, StorageTypes);

// One rank's share is the whole row's statistics exactly, so every output has the plain call's
// bits, through the exchange and the separate epilogue pass.
TYPED_TEST(FlceVocabParallelOneRank, IsThePlainCallBitForBit) {
  using T = TypeParam;
  dist::SingleProcessCommunicator comm;
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    for (bool options : {false, true}) {
      SCOPED_TRACE(std::string(reduction_name(r)) + (options ? " every option" : " plain"));
      Problem const p = rounded<T>(random_problem(29, 11, 41, 8u, options, options, 0.2));
      ReferenceOptions o;
      o.reduction = r;
      if (options) {
        o.label_smoothing = 0.1;
        o.lse_square_scale = 1e-2;
        o.softcap = 3;
        o.temperature = 0.8;
        o.entropy_bonus = 0.05;
        o.shift_sequence_length = 29;
        add_soft_targets(o, p.bt, p.v, 3, 4u, 0.7);
      }
      for (index_t chunk : {0, 5}) {
        FlceRun const plain = run_tessel<T>(p, o, chunk);
        FlceRun const sharded = run_tessel<T>(p, o, chunk, {}, exec::Auto{}, &comm);
        EXPECT_EQ(sharded.loss, plain.loss);
        EXPECT_EQ(sharded.z_loss, plain.z_loss);
        EXPECT_EQ(sharded.lse, plain.lse);
        EXPECT_EQ(sharded.target_logprob, plain.target_logprob);
        EXPECT_EQ(sharded.entropy, plain.entropy);
        EXPECT_EQ(sharded.argmax, plain.argmax);
        EXPECT_EQ(sharded.accuracy, plain.accuracy);
        EXPECT_EQ(sharded.grad_input, plain.grad_input);
        EXPECT_EQ(sharded.grad_weight, plain.grad_weight);
        EXPECT_EQ(sharded.grad_bias, plain.grad_bias);
        EXPECT_EQ(sharded.plan.chunk_size, plain.plan.chunk_size);
      }
    }
  }
}

// A row split into slices at every pair of cut points: the combined statistics are the whole
// row's (lse, softmax mean, smoothing sum; argmax exactly, ties to the lowest class across
// slices), and w_t, z_t come from the slice that holds the target. Cuts 3 and 4 leave a slice
// whose only logit is -inf (lse -inf, no softmax mass): it adds nothing.
TEST(CombineShardStats, SlicesOfARowCombineToTheWholeRow) {
  std::vector<double> const z = {0.5, -1.0, 4.0, -INFINITY, 4.0, 3.5, -7.0, 2.0, 4.0};
  std::vector<double> const weights = {1, 2, 0.5, 1, 1, 3, 1, 0.25, 2};
  index_t const v = static_cast<index_t>(z.size()), target = 5;
  RowConstants<double> k;
  k.smoothing = k.entropy = k.argmax = true;
  exec::SequentialContext seq;
  auto refs = [&](index_t offset) {
    RowRefs<double, double, double> r;
    r.logits = z.data() + offset;
    r.class_weights = weights.data() + offset;
    return r;
  };
  ShardRowStats<double> const whole = shard_row_stats(seq, refs(0), v, target, target, 0, k);
  for (index_t a = 1; a < v; ++a) {
    for (index_t b = a; b < v; ++b) {
      SCOPED_TRACE(testing::Message() << "cuts " << a << ", " << b);
      std::vector<ShardRowStats<double>> shares;
      for (VocabSlice s : {VocabSlice{0, a}, VocabSlice{a, b - a}, VocabSlice{b, v - b}}) {
        if (s.size == 0) continue;
        shares.push_back(shard_row_stats(seq, refs(s.offset), s.size, target,
                                         local_class(target, s.offset, s.size), s.offset, k));
      }
      double w_t = 0, z_t = 0;
      RowStats<double> const c =
          combine_shard_stats(shares.data(), 1, static_cast<index_t>(shares.size()), w_t, z_t);
      EXPECT_NEAR(c.lse, whole.lse, 1e-14);
      EXPECT_NEAR(c.mean, whole.mean, 1e-14);
      EXPECT_EQ(c.smooth, whole.smooth);  // -inf: class 3's logit is -inf
      EXPECT_EQ(c.argmax, 2);             // 4.0 at classes 2, 4 and 8: the lowest
      EXPECT_EQ(w_t, 3);
      EXPECT_EQ(z_t, 3.5);
    }
  }
}

// The even split: contiguous, in rank order, covering the vocabulary, sizes differing by at most
// one (larger first); static in, static out.
static_assert(even_vocab_slice(10, 0, 3).offset == 0 && even_vocab_slice(10, 0, 3).size == 4);
static_assert(even_vocab_slice(10, 1, 3).offset == 4 && even_vocab_slice(10, 1, 3).size == 3);
static_assert(even_vocab_slice(10, 2, 3).offset == 7 && even_vocab_slice(10, 2, 3).size == 3);
static_assert(even_vocab_slice(2, 2, 3).offset == 2 && even_vocab_slice(2, 2, 3).size == 0);

TEST(FlceVocabParallelErrors, NamesANullCommunicatorAndLocalErrors) {
  std::vector<float> x(12, 0.5f), w(8, 0.25f);
  std::vector<std::int64_t> y = {0, 1, 3};
  float loss = -1;
  auto call = [&](dist::Communicator* comm, index_t target_rows) {
    forward(make_tensor(x.data(), make_shape(3, 4)), make_tensor(w.data(), make_shape(2, 4)),
            make_tensor(y.data(), make_shape(target_rows)), VocabParallel{comm}, {},
            {.loss = &loss});
  };
  EXPECT_EQ(error_of([&] { call(nullptr, 3); }),
            "VocabParallel::communicator is null; a vocabulary-parallel call needs the "
            "communicator of the ranks that hold the weight's slices.");
  dist::SingleProcessCommunicator comm;
  EXPECT_EQ(error_of([&] { call(&comm, 2); }), "target has 2 elements but input has 3 rows.");
  // Target 3 is outside the whole vocabulary (2 classes on one rank).
  EXPECT_EQ(error_of([&] { call(&comm, 3); }),
            "target 3 at row 2 is outside [0, 2) and is not ignore_index (-100).");
  EXPECT_EQ(loss, -1.0f);
}

}  // namespace
