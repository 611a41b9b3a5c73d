// Vocabulary-parallel FLCE on however many ranks mpirun started (ctest runs 1, 2 and 3): each rank
// holds its slice of the classes, and every result equals the single-process call on the whole
// weight (which each rank computes for itself) up to rounding — loss, z-loss, the per-row outputs
// and grad_input on every rank, grad_weight and grad_bias for the rank's slice — for every
// reduction and option (soft targets too, their classes spread over the ranks), f64 and f32,
// the plan's and a forced chunking; invalid calls make every rank throw.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/flce/vocab_parallel.hpp>

#include "flce/harness.hpp"
#include "flce/reference.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

template <class T>
void expect_sharded_equals_whole(Problem const& whole, ReferenceOptions const& o, index_t chunk,
                                 Tolerance tol) {
  dist::MpiCommunicator comm;
  Problem const p = rounded<T>(whole);
  VocabSlice const slice = even_vocab_slice(p.v, comm.rank(), comm.size());
  FlceRun const want = sliced(run_tessel<T>(p, o, chunk), slice, p.h);
  FlceRun const got = run_tessel<T>(sliced(p, slice), o, chunk, {}, exec::Auto{}, &comm);
  EXPECT_TRUE(all_close(got.loss, want.loss, tol)) << "loss";
  EXPECT_TRUE(all_close(got.z_loss, want.z_loss, tol)) << "z_loss";
  EXPECT_TRUE(all_close(got.lse, want.lse, tol)) << "lse";
  EXPECT_TRUE(all_close(got.target_logprob, want.target_logprob, tol)) << "target_logprob";
  EXPECT_TRUE(all_close(got.entropy, want.entropy, tol)) << "entropy";
  EXPECT_EQ(got.argmax, want.argmax);
  EXPECT_EQ(got.accuracy, want.accuracy);
  EXPECT_TRUE(all_close(got.grad_input, want.grad_input, tol)) << "grad_input";
  EXPECT_TRUE(all_close(got.grad_weight, want.grad_weight, tol)) << "grad_weight";
  EXPECT_TRUE(all_close(got.grad_bias, want.grad_bias, tol)) << "grad_bias";
}

struct Case {
  char const* what;
  bool extras;  // bias and class weights
  double smoothing, z_loss, softcap, temperature, entropy_bonus;
  std::int64_t shift;
  double soft_weight = 0;  // > 0: a teacher's top-4 (classes on every rank)
};

template <class T>
void run_cases(Tolerance tol) {
  for (Case const& c :
       {Case{"plain", false, 0, 0, 0, 1, 0, 0},
        Case{"smoothing, z-loss, softcap", true, 0.1, 1e-2, 3, 1, 0, 0},
        Case{"temperature, entropy bonus, shift", true, 0, 0, 0, 0.7, 0.2, 5},
        Case{"every option", true, 0.05, 1e-3, 4, 1.3, -0.1, 5},
        Case{"soft targets", true, 0.1, 0, 3, 0.9, 0, 0, 0.6},
        Case{"soft targets alone, every option", true, 0.05, 1e-3, 4, 1.3, 0.1, 5, 1.0}}) {
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      for (index_t chunk : {0, 7}) {
        SCOPED_TRACE(std::string(c.what) + " " + std::string(reduction_name(r)) + " chunk " +
                     std::to_string(chunk));
        // V = 37 over up to 3 ranks: slices 13, 12, 12 (uneven), 25 rows with ignored targets.
        Problem const p = random_problem(25, 9, 37, 11u, c.extras, c.extras, 0.2);
        ReferenceOptions o;
        o.reduction = r;
        o.label_smoothing = c.smoothing;
        o.lse_square_scale = c.z_loss;
        o.softcap = c.softcap;
        o.temperature = c.temperature;
        o.entropy_bonus = c.entropy_bonus;
        o.shift_sequence_length = c.shift;
        if (c.soft_weight > 0) add_soft_targets(o, p.bt, p.v, 4, 3u, c.soft_weight);
        expect_sharded_equals_whole<T>(p, o, chunk, tol);
      }
    }
  }
}

TEST(FlceVocabParallel, EqualsTheSingleProcessCallInF64) {
  run_cases<double>({1e-12, 1e-11});
}
TEST(FlceVocabParallel, EqualsTheSingleProcessCallInF32) {
  run_cases<float>(tolerance<float>());
}

// As many classes as ranks: every rank holds one class, and most rows' targets live elsewhere.
TEST(FlceVocabParallel, OneClassPerRank) {
  dist::MpiCommunicator comm;
  Problem const p = random_problem(8, 3, comm.size(), 5u, true, true, 0.25);
  ReferenceOptions o;
  o.label_smoothing = 0.1;
  expect_sharded_equals_whole<double>(p, o, 0, {1e-12, 1e-11});
}

// The slices and the whole vocabulary the call reports; an invalid argument on one rank makes
// every rank throw, that rank with its own sentence; ranks whose inputs differ are named.
TEST(FlceVocabParallel, ReportsTheSlicesAndFailsOnEveryRankTogether) {
  dist::MpiCommunicator comm;
  int const rank = comm.rank(), ranks = comm.size();
  Problem const p = random_problem(6, 4, 10, 3u);
  VocabSlice const slice = even_vocab_slice(10, rank, ranks);
  Problem const q = sliced(p, slice);
  std::vector<float> x(p.x.begin(), p.x.end()), w(q.w.begin(), q.w.end());
  float loss = 0;
  auto const call = [&](index_t rows, Outputs<float> const& out) {
    return forward(make_tensor(x.data(), make_shape(rows, index_t{4})),
                   make_tensor(w.data(), make_shape(q.v, index_t{4})),
                   make_tensor(p.target.data(), make_shape(rows)), VocabParallel{&comm}, {}, out);
  };
  VocabParallelPlan const plan = call(6, {.loss = &loss});
  EXPECT_EQ(plan.vocab, 10);
  EXPECT_EQ(plan.slice.offset, slice.offset);
  EXPECT_EQ(plan.slice.size, slice.size);
  EXPECT_EQ(plan.ranks, ranks);

  // Rank 0 asks for a loss of the wrong size.
  std::vector<float> two(2);
  Outputs<float> bad{.loss = &loss};
  if (rank == 0) bad.loss = two;
  try {
    call(6, bad);
    ADD_FAILURE() << "no error";
  } catch (Error const& e) {
    EXPECT_EQ(std::string(e.what()),
              rank == 0 ? "loss has 2 elements but reduction mean gives 1."
                        : "vocabulary-parallel FLCE: the call on rank 0 is invalid (that rank "
                          "names why); no rank ran it.");
  }
  if (ranks > 1) {  // the last rank has one row fewer
    try {
      call(rank == ranks - 1 ? 5 : 6, {.loss = &loss});
      ADD_FAILURE() << "no error";
    } catch (Error const& e) {
      std::string const want =
          rank == ranks - 1 ? "vocabulary-parallel FLCE: rank 0 has input (6,4) but rank " +
                                  std::to_string(rank) +
                                  " has (5,4); every rank needs the whole input and targets."
                            : "vocabulary-parallel FLCE: rank " + std::to_string(ranks - 1) +
                                  " has input (5,4) but rank " + std::to_string(rank) +
                                  " has (6,4); every rank needs the whole input and targets.";
      EXPECT_EQ(std::string(e.what()), want);
    }
  }
}

}  // namespace
