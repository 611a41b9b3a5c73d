// Vocabulary-parallel FLCE (Megatron's tensor-parallel cross-entropy, Apple CCE's
// VocabParallelOptions): the LM head's weight is split along V over the ranks of a
// dist::Communicator, rank r holding the r-th slice of the classes (slices follow rank order);
// every rank has the whole input and targets. Per chunk each rank reduces its slice of every row
// (log-sum-exp, softmax mean, smoothing sum, argmax, and the target's logit where it holds the
// target's class), the ranks all-gather those shares (a few numbers per row: one collective),
// and each rank finishes its rows from the combined statistics: the same loss and per-row
// outputs on every rank, the gradients of its own slice of weight and bias, and d input summed
// over the ranks (an all-reduce per chunk). No rank holds more than its slice of the logits.
// The host overload is here (MPI communicators); the device one (NCCL) in <tessel/flce/cuda.cuh>.
#pragma once

#include <array>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../dist/communicator.hpp"
#include "../exec/executors.hpp"
#include "../tensor/memory_space.hpp"
#include "call.hpp"
#include "chunk_loop.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "validate.hpp"

namespace tessel::flce {

// The ranks a vocabulary-parallel call runs over. On the host an MPI (or the single-process)
// communicator; on the device an NCCL one created on the executor's stream.
struct VocabParallel {
  dist::Communicator* communicator = nullptr;
};

// What a vocabulary-parallel call ran on this rank: its plan (its slice as the vocabulary; the
// ranks agree on one chunk size), its slice of the classes, and the whole vocabulary.
struct VocabParallelPlan {
  FlcePlan plan;
  VocabSlice slice;
  index_t vocab = 0;
  int ranks = 1;
};

// Rank `rank`'s classes when `vocab` classes are split as evenly as they go over `ranks` ranks
// in rank order (the first vocab % ranks slices one class larger): the usual tensor-parallel
// split of an LM head. @pre 0 <= rank < ranks
constexpr VocabSlice even_vocab_slice(index_t vocab, int rank, int ranks) {
  index_t const base = vocab / ranks, extra = vocab % ranks;
  return {rank * base + (rank < extra ? rank : extra), base + (rank < extra ? 1 : 0)};
}

namespace detail {

// Every rank's `mine` (the same count on each), gathered through Executor's memory (device memory
// for NCCL) in rank order.
template <class Executor>
std::vector<index_t> all_gather_indices(Executor const& executor, dist::Communicator& comm,
                                        std::span<index_t const> mine) {
  using memory = Backend<Executor>;
  auto const n = static_cast<index_t>(mine.size());
  index_t const ranks = comm.size();
  auto const buffer =
      memory::template scratch<index_t>(executor, n * (ranks + 1), "FLCE vocabulary-parallel");
  memory::from_host(executor, mine.data(), n, buffer.data());
  memory::wait(executor);
  comm.all_gather(std::as_bytes(std::span(buffer.data(), mine.size())),
                  std::as_writable_bytes(std::span(buffer.data() + n, mine.size() * ranks)));
  std::vector<index_t> all(mine.size() * static_cast<std::size_t>(ranks));
  memory::to_host(executor, buffer.data() + n, n * ranks, all.data());
  memory::wait(executor);
  return all;
}

// The vocabulary-parallel forward for every executor: local validation (an error held until the
// ranks have compared notes, so that every rank throws and none waits for the others), the
// agreement on shapes and chunking, the slices, then the sharded chunk loop.
template <class X, class W, class Y, class Executor>
VocabParallelPlan run_vocab_parallel(
    X const& input, W const& weight, Y const& target, VocabParallel const& parallel,
    Options<tensor_value_t<X>, typename Backend<Executor>::space> const& options,
    Outputs<tensor_value_t<X>, typename Backend<Executor>::space> const& outputs,
    Executor const& executor) {
  static_assert(SameElement<X, W>::ok && static_shapes_agree<X, W, Y>());
  using T = tensor_value_t<X>;
  using TargetT = tensor_value_t<Y>;
  using Space = typename Backend<Executor>::space;
  using tessel::detail::sentence;
  if (parallel.communicator == nullptr)
    fail(
        "VocabParallel::communicator is null; a vocabulary-parallel call needs the communicator "
        "of the ranks that hold the weight's slices.");
  dist::Communicator& comm = *parallel.communicator;
  MatrixArg<T const, Space> const x(input);
  MatrixArg<T const, Space> const w(weight);
  VectorArg<TargetT const, Space> const y(target);
  std::string error;
  try {
    validate_call(x, w, y, options, outputs);
  } catch (Error const& e) {
    error = e.what();
  }
  index_t const own_chunk =
      !error.empty()           ? 0
      : options.chunk_size > 0 ? options.chunk_size
                               : FlcePlan(make_call_plan<Space>(x.rows, x.cols, w.rows)).chunk_size;
  std::array<index_t, 5> const mine = {error.empty() ? 1 : 0, x.rows, x.cols, w.rows, own_chunk};
  std::vector<index_t> const all = all_gather_indices(executor, comm, mine);
  auto at = [&](int rank, int field) { return all[static_cast<std::size_t>(rank) * 5 + field]; };
  int const ranks = comm.size();
  for (int r = 0; r < ranks; ++r) {
    if (at(r, 0) != 0) continue;
    if (!error.empty()) fail(error);
    fail(sentence("vocabulary-parallel FLCE: the call on rank ", r,
                  " is invalid (that rank names why); no rank ran it."));
  }
  VocabParallelPlan result;
  result.ranks = ranks;
  index_t chunk = own_chunk;
  for (int r = 0; r < ranks; ++r) {
    if (at(r, 1) != x.rows || at(r, 2) != x.cols)
      fail(sentence("vocabulary-parallel FLCE: rank ", r, " has input ",
                    tessel::detail::shape_text(make_shape(at(r, 1), at(r, 2))), " but rank ",
                    comm.rank(), " has ", tessel::detail::shape_text(make_shape(x.rows, x.cols)),
                    "; every rank needs the whole input and targets."));
    if (r == comm.rank()) result.slice.offset = result.vocab;
    result.vocab += at(r, 3);
    chunk = at(r, 4) < chunk ? at(r, 4) : chunk;
  }
  result.slice.size = w.rows;
  // The ranks run the same chunks: the smallest of their plans' chunk sizes (a static plan stays
  // static when it is everyone's).
  bool agreed = options.chunk_size == 0;
  for (int r = 0; r < ranks; ++r) agreed = agreed && at(r, 4) == own_chunk;
  with_plan(input, weight, agreed ? 0 : chunk, [&](auto const& plan) {
    using Plan = std::remove_cvref_t<decltype(plan)>;
    result.plan = plan;
    ChunkLoop<Plan, T, TargetT, Executor, true>::run(plan, {x, w, y, options, outputs}, executor,
                                                     Sharding{&comm, result.slice, result.vocab});
  });
  return result;
}

}  // namespace detail

// forward with the weight split along the vocabulary over `parallel.communicator`'s ranks:
//   input (BT, H), target (BT): the same on every rank
//   weight (V_r, H): rank r's slice of the classes, [V_0 + ... + V_{r-1}, ... + V_r)
//   options: the same on every rank, except bias and class_weights, which are the rank's slices
//   outputs: loss, z_loss, lse, target_logprob, entropy, argmax, accuracy and grad_input are the
//            whole call's (the same on every rank); grad_weight (V_r, H) and grad_bias (V_r) the
//            rank's slice's
// Results equal the single-process call on the whole weight up to rounding (the ranks' shares
// are combined in another order). Every rank must make the call (it is collective); an invalid
// argument on any rank makes every rank throw (nothing written).
template <class X, class W, class Y, exec::HostExecutor Executor = exec::Auto>
requires MatrixTensor<X, HostSpace> && MatrixTensor<W, HostSpace> && TargetTensor<Y, HostSpace>
    VocabParallelPlan
    forward(X const& input, W const& weight, Y const& target, VocabParallel const& parallel,
            std::type_identity_t<Options<tensor_value_t<X>, HostSpace>> const& options,
            std::type_identity_t<Outputs<tensor_value_t<X>, HostSpace>> const& outputs,
            Executor const& executor = {}) {
  return detail::run_vocab_parallel(input, weight, target, parallel, options, outputs, executor);
}

}  // namespace tessel::flce
