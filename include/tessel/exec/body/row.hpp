// Row kernel bodies: reductions of one row (sum, max, min, mean, argmax, logsumexp) and the row
// reduction with a fused epilogue, which softmax, log-softmax and FLCE's fused cross-entropy row
// are. A row is a callable, row(i) for i in [0, n); an output row has out.store(i, v). Lanes
// stride through the row and combine their partials with ctx.reduce, so the same bodies are the
// host twins (SequentialContext) of the CUDA row kernels (one block per row).
#pragma once

#include <type_traits>
#include <utility>

#include "../../core/config.hpp"
#include "../../core/int.hpp"
#include "../../expr/scalar_math.hpp"
#include "context.hpp"
#include "reduce_ops.hpp"

namespace tessel::exec {

// The partial state of op over row(i), i in [begin, end), elements numbered index_base + i (the
// numbering argmax reports); combined over all lanes. `end` may be a static Int<N> (a row length
// the compiler knows, e.g. FLCE's vocabulary): the loop bound is then a constant.
template <class Ctx, class Op, class Row, Integer End>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE typename Op::state_type row_reduce_body(
    Ctx const& ctx, Op const& op, Row const& row, index_t begin, End end, index_t index_base = 0) {
  auto s = op.identity();
  for (index_t i = begin + ctx.lane(); i < end; i += ctx.lanes())
    s = op.update(s, row(i), index_base + i);
  return ctx.reduce(s, op);
}

namespace detail {
template <class Row>
using row_value_t = std::remove_cvref_t<decltype(std::declval<Row const&>()(index_t{}))>;
}  // namespace detail

// op over row(0..n), finalized.
template <class Ctx, class Op, class Row, Integer N>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto row_reduction(Ctx const& ctx, Op const& op,
                                                         Row const& row, N n) {
  return op.finalize(row_reduce_body(ctx, op, row, 0, n), n);
}

// A row reduction with a fused epilogue: op over row(0..n), combined over the lanes and finalized
// to r; then write = epilogue(r) makes each lane's writer of this row, and lane l calls write(i)
// for its elements i = l, l + lanes, ... in increasing order (so a writer may keep a cursor, as
// FLCE's does over a row's soft targets). Returns r. The reduction hands every lane r only after
// every lane has read its elements (on the GPU it is a block barrier), so write(i) may overwrite
// what row(i) read: softmax in place, FLCE's gradient over its logits.
// @post write(i) was called exactly once for every i in [0, n)
template <class Ctx, class Op, class Row, Integer N, class Epilogue>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto row_reduce_epilogue_body(Ctx const& ctx, Op const& op,
                                                                    Row const& row, N n,
                                                                    Epilogue const& epilogue) {
  auto const r = row_reduction(ctx, op, row, n);
  auto write = epilogue(r);
  for (index_t i = ctx.lane(); i < n; i += ctx.lanes()) write(i);
  return r;
}

template <class Ctx, class Row>
TESSEL_HOST_DEVICE auto row_sum_body(Ctx const& ctx, Row const& row, index_t n) {
  using T = detail::row_value_t<Row>;
  return row_reduction(ctx, reduce_op_t<reduction::Sum, T>{}, row, n);
}
template <class Ctx, class Row>
TESSEL_HOST_DEVICE auto row_mean_body(Ctx const& ctx, Row const& row, index_t n) {
  using T = detail::row_value_t<Row>;
  return row_reduction(ctx, reduce_op_t<reduction::Mean, T>{}, row, n);
}
template <class Ctx, class Row>
TESSEL_HOST_DEVICE auto row_max_body(Ctx const& ctx, Row const& row, index_t n) {
  using T = detail::row_value_t<Row>;
  return row_reduction(ctx, reduce_op_t<reduction::Max, T>{}, row, n);
}
template <class Ctx, class Row>
TESSEL_HOST_DEVICE auto row_min_body(Ctx const& ctx, Row const& row, index_t n) {
  using T = detail::row_value_t<Row>;
  return row_reduction(ctx, reduce_op_t<reduction::Min, T>{}, row, n);
}
template <class Ctx, class Row>
TESSEL_HOST_DEVICE index_t row_argmax_body(Ctx const& ctx, Row const& row, index_t n) {
  using T = detail::row_value_t<Row>;
  return row_reduction(ctx, reduce_op_t<reduction::Argmax, T>{}, row, n);
}
// log(sum(exp(row))) in one pass over the row.
template <class Ctx, class Row>
TESSEL_HOST_DEVICE auto row_logsumexp_body(Ctx const& ctx, Row const& row, index_t n) {
  using T = detail::row_value_t<Row>;
  return row_reduction(ctx, reduce_op_t<reduction::LogSumExp, T>{}, row, n);
}

// What a softmax row is shifted by, given its logsumexp: +inf (the row holds +inf) becomes NaN,
// so that the whole row is NaN, as PyTorch gives, and not NaN at the +inf and 0 elsewhere. An
// all -inf row is NaN through -inf - -inf already.
template <class T>
TESSEL_HOST_DEVICE constexpr T softmax_shift(T lse) {
  return lse == math::infinity<T>() ? lse - lse : lse;
}

// out(i) = exp(row(i) - logsumexp(row)): one pass for the logsumexp, one to write.
template <class Ctx, class Row, class Out>
TESSEL_HOST_DEVICE void row_softmax_body(Ctx const& ctx, Row const& row, Out& out, index_t n) {
  using Op = reduce_op_t<reduction::LogSumExp, detail::row_value_t<Row>>;
  row_reduce_epilogue_body(ctx, Op{}, row, n, [&](auto const lse) {
    using T = std::remove_cvref_t<decltype(lse)>;
    T const shift = softmax_shift(lse);
    return [&, shift](index_t i) { out.store(i, math::exp(static_cast<T>(row(i)) - shift)); };
  });
}

// out(i) = row(i) - logsumexp(row).
template <class Ctx, class Row, class Out>
TESSEL_HOST_DEVICE void row_log_softmax_body(Ctx const& ctx, Row const& row, Out& out, index_t n) {
  using Op = reduce_op_t<reduction::LogSumExp, detail::row_value_t<Row>>;
  row_reduce_epilogue_body(ctx, Op{}, row, n, [&](auto const lse) {
    using T = std::remove_cvref_t<decltype(lse)>;
    T const shift = softmax_shift(lse);
    return [&, shift](index_t i) { out.store(i, static_cast<T>(row(i)) - shift); };
  });
}

}  // namespace tessel::exec
