// FLCE's chunk loop, written once for every executor: per chunk of rows, the logits GEMM, the
// fused row body over the chunk's rows, then the gradient GEMMs and the grad_bias column sums —
// each an exec call (exec::gemm, exec::for_each_row, tessel::assign) on the call's executor.
// ChunkLoop<Plan, T, Y, Executor> is instantiated with the call's plan *type*: a static-shape
// call keeps StaticFlcePlan<BT, H, V, Chunk>, so BT, H, V, the chunk size and the chunk count are
// Int<>s in the loop and in the row body (ChunkRows) that exec::for_each_row runs on the host's
// threads or as the CUDA row kernel; run-time shapes instantiate the same code with FlcePlan.
// lowered_t<X, W, Y, Executor> names the instantiation a call runs, for static_asserts.
#pragma once

#include <type_traits>

#include "../core/dtype.hpp"
#include "../core/int.hpp"
#include "../core/layout.hpp"
#include "../dist/communicator.hpp"
#include "../expr/cast.hpp"
#include "../expr/reduce.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "arguments.hpp"
#include "backend.hpp"
#include "call.hpp"
#include "host_rows.hpp"
#include "loop_bodies.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "row.hpp"
#include "types.hpp"
#include "validate.hpp"

namespace tessel::flce {

// The arguments of one call, validated (see validate_call), in the executor's memory space.
template <class T, class Y, class Space>
struct CallArgs {
  MatrixArg<T const, Space> input;   // (BT, H)
  MatrixArg<T const, Space> weight;  // (V, H)
  VectorArg<Y const, Space> target;  // (BT)
  Options<T, Space> const& options;
  Outputs<T, Space> const& outputs;
};

// Where a call's classes are: all here, or this rank's slice of a vocabulary-parallel call whose
// ranks share `communicator` (flce/vocab_parallel.hpp). Every rank runs the same chunks.
struct Sharding {
  dist::Communicator* communicator = nullptr;
  VocabSlice slice{};  // this rank's classes: its weight's rows
  index_t vocab = 0;   // the whole vocabulary
};

namespace detail {

// The buffers a vocabulary-parallel call allocates besides ScratchLayout's, in one allocation,
// each aligned to scratch_alignment: this rank's share of each row of a chunk (R records), every
// rank's (ranks x R), the part of d input its slice gives before the ranks add them (R x H in
// the compute type), and the two target-summary sums. R = min(chunk_size, BT).
template <class C>
struct ShardScratch {
  ShardRowStats<C>* local = nullptr;
  ShardRowStats<C>* gathered = nullptr;
  C* grad_input = nullptr;
  double* sums = nullptr;

  template <class Plan>
  static index_t bytes(Plan const& plan, Sharding const& s) {
    return carve(nullptr, plan, s).end;
  }
  template <class Plan>
  static ShardScratch carve(std::byte* base, Plan const& plan, Sharding const& s) {
    FlcePlan const p(plan);
    index_t const r = p.buffer_rows();
    index_t const record = static_cast<index_t>(sizeof(ShardRowStats<C>));
    index_t at = 0;
    auto place = [&](auto*& out, index_t bytes) {
      out = base ? reinterpret_cast<std::remove_reference_t<decltype(out)>>(base + at) : nullptr;
      at += bytes;
    };
    ShardScratch k;
    place(k.local, checked_bytes(r, 1, record));
    place(k.gathered, checked_bytes(r, s.communicator->size(), record));
    place(k.grad_input, checked_bytes(r, p.hidden, static_cast<index_t>(sizeof(C))));
    place(k.sums, checked_bytes(2, 1, 8));
    k.end = at;
    return k;
  }
  index_t end = 0;  // bytes used
};

}  // namespace detail

// The chunk loop of a call with plan type Plan, storage type T and target type Y on Executor.
// Sharded: a vocabulary-parallel call (Plan is the plan of this rank's slice), whose chunks
// exchange each row's statistics between the row reduction and the epilogue.
//   plan_type     the plan the loop is instantiated with (StaticFlcePlan: its extents are Int<>s)
//   row_body      the body each row of a chunk runs (exec::for_each_row: the host's rows, or the
//                 CUDA kernel exec::kernels::rows_kernel<row_threads, row_body>)
//   gemm_type     what the GEMMs read: T on CUDA (tensor cores for 16-bit), accum_t<T> on the host
//   gradient_type the logits gradient the gradient GEMMs read: accum_t<T> in place over the logits,
//                 or T in its own buffer (CUDA, 16-bit)
template <AnyFlcePlan Plan, Element T, TargetElement Y, class Executor, bool Sharded = false>
struct ChunkLoop {
  using plan_type = Plan;
  using backend = detail::Backend<Executor>;
  using space = typename backend::space;
  using compute_type = accum_t<T>;
  using gemm_type = typename backend::template gemm_t<T>;
  using gradient_type = gemm_type;
  using row_body = ChunkRows<Plan, compute_type, gradient_type, T, Y, Sharded>;
  // With soft targets: the same rows with the soft targets' cursor, its own kernel, so that calls
  // without them run row_body's code (and registers) unchanged.
  using soft_row_body = ChunkRows<Plan, compute_type, gradient_type, T, Y, Sharded, true>;
  // The host's one-exp row pass for plain rows (flce/host_rows.hpp), with row_body's vocab_type.
  using host_row_pass = HostPlainRows<Plan, compute_type, T, Y>;
  // Sharded: the pass that gives each row's share before the ranks exchange them.
  using shard_stats_body = ChunkShardStats<Plan, compute_type, gradient_type, T, Y>;

  // Threads per row of the CUDA row kernel: a row of 128256 logits is ~250 elements per thread
  // per pass, and four blocks fit an SM; the body holds a few scalars per thread.
  static constexpr int row_threads = 512;
  // Threads of the one-block bodies (target check, loss reduction), which read every row once.
  static constexpr int single_block_threads = 1024;

  // Runs the call. Everything has been validated except the targets' values, which are checked
  // (tessel::Error, nothing written) before the first output is written.
  // Sharded: `sharding` names the communicator and the slice; every rank must run the same call
  // (the same input, targets and options) on its slice, or the ranks wait for each other forever.
  static void run(Plan const& plan, CallArgs<T, Y, space> const& call, Executor const& executor,
                  Sharding const& sharding = {});
};

template <AnyFlcePlan Plan, Element T, TargetElement Y, class Executor, bool Sharded>
void ChunkLoop<Plan, T, Y, Executor, Sharded>::run(Plan const& plan,
                                                   CallArgs<T, Y, space> const& call,
                                                   Executor const& executor,
                                                   Sharding const& sharding) {
  using C = compute_type;
  using A = gemm_type;
  using G = gradient_type;
  // The host widens 16-bit operands for Eigen; CUDA reads them as they are.
  constexpr bool widen = !std::is_same_v<A, T>;
  constexpr bool in_place = std::is_same_v<G, C>;
  static_assert(sizeof(TargetCheck) <= scratch_scalar_bytes);

  auto const& x = call.input;
  auto const& w = call.weight;
  auto const& y = call.target;
  auto const& o = call.options;
  auto const& out = call.outputs;
  auto const bt = plan.batch_extent();
  auto const h = plan.hidden_extent();
  auto const v = plan.vocab_extent();
  backend::check_call(plan, call);

  // (rows, cols) at p with row stride ld; and (n) at p with stride s.
  auto const matrix = [](auto* p, auto rows, auto cols, auto ld) {
    return backend::view(p, make_layout(make_shape(rows, cols), make_stride(ld, Int<1>{})));
  };
  auto const vector = [](auto* p, index_t n, index_t s) {
    return backend::view(p, make_layout(make_shape(n), make_stride(s)));
  };

  ScratchLayout const layout = plan.scratch_layout(dtype_of_v<T>, backend::device);
  auto const scratch = backend::template scratch<std::byte>(executor, layout.total, "FLCE");
  std::byte* const base = scratch.data();
  C* const logits = reinterpret_cast<C*>(base + layout.logits);  // (R, V)
  G* const gradient = in_place ? reinterpret_cast<G*>(logits)    // (R, V)
                               : reinterpret_cast<G*>(base + layout.gradient);
  C* const row_ce = reinterpret_cast<C*>(base + layout.row_loss);                         // (BT)
  C* const row_z = reinterpret_cast<C*>(base + layout.row_z);                             // (BT)
  auto* const row_correct = reinterpret_cast<unsigned char*>(base + layout.row_correct);  // (BT)
  C* const row_soft = reinterpret_cast<C*>(base + layout.row_soft);                       // (BT)
  auto* const check_at = reinterpret_cast<TargetCheck*>(base + layout.scalars);

  // The whole vocabulary, and this rank's slice of it.
  index_t const vocab = Sharded ? sharding.vocab : index_t{v};
  VocabSlice const slice = Sharded ? sharding.slice : VocabSlice{0, v};
  // The soft targets, (BT, K) (count 0: none), over this rank's logits.
  SoftTargets<C> soft;
  if (o.soft_target_indices.present)
    soft = {o.soft_target_indices.data,
            o.soft_target_indices.row_stride,
            o.soft_target_indices.col_stride,
            o.soft_target_probs.data,
            o.soft_target_probs.row_stride,
            o.soft_target_probs.col_stride,
            o.soft_target_indices.cols,
            slice.offset,
            slice.size};
  // Sharded: the extra buffers (detail::ShardScratch), and the collectives on this executor's
  // memory, each after the executor's queued work.
  detail::ShardScratch<C> shard;
  auto const shard_buffer = [&] {
    if constexpr (Sharded)
      return backend::template scratch<std::byte>(
          executor, detail::ShardScratch<C>::bytes(plan, sharding), "FLCE vocabulary-parallel");
    else
      return 0;
  }();
  if constexpr (Sharded)
    shard = detail::ShardScratch<C>::carve(shard_buffer.data(), plan, sharding);
  auto const all_reduce = [&](auto* data, index_t n) {
    backend::wait(executor);
    sharding.communicator->all_reduce_sum(std::span(data, static_cast<std::size_t>(n)));
  };

  // The targets first: an invalid one throws before anything is written.
  backend::template rows<single_block_threads>(
      executor, 1, bt,
      SummarizeTargets<Y, T>{y.data, y.stride, o.shift_sequence_length, bt, vocab, o.ignore_index,
                             o.class_weights.data, o.class_weights.stride, check_at, slice, soft});
  TargetCheck check = backend::read(executor, check_at);
  if (check.summary.first_bad_row >= 0)
    detail::fail_bad_target(check.bad_target, check.summary.first_bad_row, vocab, o.ignore_index,
                            o.shift_sequence_length);
  if (check.summary.first_bad_soft >= 0)
    detail::fail_bad_soft_target(check.summary.first_bad_soft / soft.count,
                                 check.summary.first_bad_soft % soft.count, check.bad_soft_class,
                                 check.bad_soft_prob, vocab);
  if constexpr (Sharded) {  // each rank weighed the targets and classes of its slice
    double sums[2] = {check.summary.weight_sum, check.summary.class_weight_sum};
    backend::from_host(executor, sums, 2, shard.sums);
    all_reduce(shard.sums, 2);
    backend::to_host(executor, shard.sums, 2, sums);
    backend::wait(executor);
    check.summary.weight_sum = sums[0];
    check.summary.class_weight_sum = sums[1];
  }

  bool const grads = out.wants_gradients();
  row_body body;
  body.plan = plan;
  body.logits = logits;
  body.grad = grads ? gradient : nullptr;
  body.bias = o.bias.data;
  body.bias_stride = o.bias.stride;
  body.class_weights = o.class_weights.data;
  body.class_weight_stride = o.class_weights.stride;
  body.target = y.data;
  body.target_stride = y.stride;
  body.shift = o.shift_sequence_length;
  body.grad_output_rows = o.grad_output_rows.present ? o.grad_output_rows.data : nullptr;
  body.grad_output_stride = o.grad_output_rows.stride;
  body.grad_output = o.grad_output;
  body.scales = loss_scales(check.summary, o.reduction);
  body.k = detail::row_constants<C>(
      o.label_smoothing, o.lse_square_scale, o.softcap, o.temperature, o.entropy_bonus,
      out.entropy.present, out.argmax.present || out.accuracy.present, o.ignore_index, vocab,
      check.summary.class_weight_sum, soft.count > 0 ? o.soft_target_weight : 0.0);
  body.row_ce = row_ce;
  body.row_z = row_z;
  body.lse = out.lse.present ? out.lse.data : nullptr;
  body.lse_stride = out.lse.stride;
  body.target_logprob = out.target_logprob.present ? out.target_logprob.data : nullptr;
  body.target_logprob_stride = out.target_logprob.stride;
  body.entropy = out.entropy.present ? out.entropy.data : nullptr;
  body.entropy_stride = out.entropy.stride;
  body.argmax = out.argmax.present ? out.argmax.data : nullptr;
  body.argmax_stride = out.argmax.stride;
  body.row_correct = out.accuracy.present ? row_correct : nullptr;
  body.soft = soft;
  body.row_soft = soft.count > 0 ? row_soft : nullptr;
  shard_stats_body stats;
  if constexpr (Sharded) {
    body.shard_stats = shard.gathered;
    body.ranks = sharding.communicator->size();
    body.vocab_offset = slice.offset;
    // The same arguments as the rows' (the gradient unused), its own output.
    static_cast<typename row_body::args_type&>(stats) = body;
    stats.out = shard.local;
  }

  // The host's row pass for rows without the fused body's variants (flce/host_rows.hpp).
  constexpr bool host_rows_possible = backend::device == Device::host && !Sharded;
  bool const host_rows = host_rows_possible && soft.count == 0 && plain_rows(body.k);

  // The weight as the GEMMs read it: the caller's memory, or a widened copy made once.
  A const* w_data = nullptr;
  index_t w_ld = w.row_stride;
  if constexpr (widen) {
    A* const w32 = reinterpret_cast<A*>(base + layout.weight_f32);
    backend::assign(executor, matrix(w32, v, h, h), cast<A>(matrix(w.data, v, h, w.row_stride)));
    w_data = w32;
    w_ld = h;
  } else {
    w_data = w.data;
  }
  auto const weight = matrix(w_data, v, h, w_ld);  // (V, H)
  auto const grad_weight = matrix(out.grad_weight.data, v, h, out.grad_weight.row_stride);
  auto const grad_bias = vector(out.grad_bias.data, v, out.grad_bias.stride);
  // The accumulated gradients: grad_weight's first GEMM overwrites it (zeroed here only when no
  // chunk runs); grad_bias starts at zero and every chunk adds its column sums, one expression
  // for all chunks (one set of kernels to compile on the device). With o.accumulate both keep
  // what they hold and every chunk adds to it.
  if (!o.accumulate) {
    if (out.grad_weight.present && bt == 0) backend::assign(executor, grad_weight, C(0));
    if (out.grad_bias.present) backend::assign(executor, grad_bias, C(0));
  }

  for (index_t chunk = 0; chunk < plan.chunk_count(); ++chunk) {
    index_t const r0 = chunk * plan.rows_per_chunk();
    index_t const rows = bt - r0 < plan.rows_per_chunk() ? bt - r0 : plan.rows_per_chunk();
    auto const x_chunk = [&] {  // (rows, H) as the GEMMs read it
      auto const x_rows = matrix(x.row(r0), rows, h, x.row_stride);
      if constexpr (widen) {
        auto const x32 = matrix(reinterpret_cast<A*>(base + layout.input_f32), rows, h, h);
        backend::assign(executor, x32, cast<A>(x_rows));
        return x32;
      } else {
        return x_rows;
      }
    }();
    backend::gemm(executor, matrix(logits, rows, v, v), x_chunk, transpose(weight), {});
    body.first_row = r0;
    if constexpr (Sharded) {  // each rank's share of every row, then all ranks' shares everywhere
      stats.first_row = r0;
      backend::template rows<row_threads>(executor, rows, v, stats);
      backend::wait(executor);
      auto const record = static_cast<std::size_t>(rows) * sizeof(ShardRowStats<C>);
      sharding.communicator->all_gather(
          std::span(reinterpret_cast<std::byte const*>(shard.local), record),
          std::span(reinterpret_cast<std::byte*>(shard.gathered),
                    record * static_cast<std::size_t>(body.ranks)));
      body.shard_stride = rows;
    }
    if (soft.count > 0) {
      soft_row_body soft_body;
      static_cast<typename row_body::args_type&>(soft_body) = body;
      backend::template rows<row_threads>(executor, rows, v, soft_body);
    } else if constexpr (host_rows_possible) {
      if (host_rows)
        host_row_pass::run(executor, static_cast<typename row_body::args_type const&>(body), logits,
                           rows);
      else
        backend::template rows<row_threads>(executor, rows, v, body);
    } else {
      backend::template rows<row_threads>(executor, rows, v, body);
    }
    if (!grads) continue;

    auto const g = matrix(static_cast<G const*>(gradient), rows, v, v);  // d loss / d logits
    // grad_weight and grad_bias before grad_input, so a grad_input that overwrites the input
    // still works.
    if (out.grad_weight.present)
      backend::gemm(executor, grad_weight, transpose(g), x_chunk,
                    {.alpha = 1.0, .beta = chunk == 0 && !o.accumulate ? 0.0 : 1.0});
    if (out.grad_bias.present) backend::assign(executor, grad_bias, grad_bias + sum(g, mode<0>));
    if (out.grad_input.present) {
      auto const dx = matrix(out.grad_input.row(r0), rows, h, out.grad_input.row_stride);
      if constexpr (Sharded) {  // each rank's slice gives a part of d input: the ranks add them
        auto const part = matrix(shard.grad_input, rows, h, h);
        backend::gemm(executor, part, g, weight, {});
        all_reduce(shard.grad_input, rows * index_t{h});
        backend::assign(executor, dx, cast<T>(part));
      } else if constexpr (widen) {
        auto const dx32 = matrix(reinterpret_cast<A*>(base + layout.grad_input_f32), rows, h, h);
        backend::gemm(executor, dx32, g, weight, {});
        backend::assign(executor, dx, dx32);
      } else {
        backend::gemm(executor, dx, g, weight, {});
      }
    }
  }

  backend::template rows<single_block_threads>(
      executor, 1, bt,
      FinalizeLosses<C>{
          row_ce,
          row_z,
          bt,
          o.reduction,
          body.scales,
          out.loss.data,
          out.loss.stride,
          out.z_loss.data,
          out.z_loss.stride,
          {row_correct, out.accuracy.present ? out.accuracy.data : nullptr, out.accuracy.stride},
          soft.count > 0 ? row_soft : nullptr});
}

// The chunk loop a call flce::forward(input, weight, target, options, outputs, executor) runs
// when options.chunk_size is 0 (a forced chunk size gives ChunkLoop<FlcePlan, ...>): with static
// BT, H and V its plan_type is the StaticFlcePlan, and row_body's vocab_type an Int<V>. A call
// given its plan, forward(plan, input, ...), runs ChunkLoop<decltype(plan), ...>: a static chunk
// size is make_plan(Int<BT>{}, Int<H>{}, Int<V>{}, Int<C>{}).
template <class X, class W, class Y, class Executor>
using lowered_t = ChunkLoop<call_plan_t<X, W>, tensor_value_t<X>, tensor_value_t<Y>, Executor>;

namespace detail {

// forward's work for every executor: validation, the plan (given, or the call's: with_plan), the
// chunk loop. Returns the plan used.
// No plan given: forward computes the call's own.
struct CallPlan {};

template <class X, class W, class Y, class Executor, class Given = CallPlan>
FlcePlan run_forward(X const& input, W const& weight, Y const& target,
                     Options<tensor_value_t<X>, typename Backend<Executor>::space> const& options,
                     Outputs<tensor_value_t<X>, typename Backend<Executor>::space> const& outputs,
                     Executor const& executor, Given const& given = {}) {
  static_assert(SameElement<X, W>::ok && static_shapes_agree<X, W, Y>());
  using T = tensor_value_t<X>;
  using TargetT = tensor_value_t<Y>;
  using Space = typename Backend<Executor>::space;
  MatrixArg<T const, Space> const x(input);
  MatrixArg<T const, Space> const w(weight);
  VectorArg<TargetT const, Space> const y(target);
  validate_call(x, w, y, options, outputs);
  FlcePlan used;
  auto const run = [&](auto const& plan) {
    using P = std::remove_cvref_t<decltype(plan)>;
    used = plan;
    ChunkLoop<P, T, TargetT, Executor>::run(plan, {x, w, y, options, outputs}, executor);
  };
  if constexpr (std::is_same_v<Given, CallPlan>) {
    with_plan(input, weight, options.chunk_size, run);
  } else {
    check_given_plan(input, weight, given, options.chunk_size);
    run(given);
  }
  return used;
}

}  // namespace detail

}  // namespace tessel::flce
