// The host's row pass for the rows most calls have — hard targets, no label smoothing, entropy,
// argmax, softcap or soft targets: per row one exp per element, in the host executor's SIMD
// packets (exec::exp_shifted_in_place: the row's maximum, exp(z - max) written over the logits and
// summed), then the gradient as that row scaled by coefficient / sum, while the row is still in
// cache. The fused row body (flce/row.hpp), which the CUDA kernel and every other host call run,
// computes exp twice per element (the online logsumexp, then exp(z - lse) in the epilogue) with
// the C library's scalar expf. The per-row scalars (target, loss terms, outputs, gradient
// coefficients) are the fused body's functions, so both paths compute the same formulas and
// differ only in rounding. The CUDA row kernel keeps the fused body: it reads each row from memory
// once, which matters more on a GPU than how exp is computed.
#pragma once

#include <algorithm>

#include "../core/int.hpp"
#include "../core/layout.hpp"
#include "../exec/host.hpp"
#include "../exec/rows.hpp"
#include "../expr/cast.hpp"
#include "../expr/scalar_math.hpp"
#include "../tensor/tensor.hpp"
#include "row.hpp"

namespace tessel::flce {

// Whether a call's rows can take host_plain_rows: what the fused body's variants add (label
// smoothing, entropy, argmax, softcap, soft targets) is absent.
template <class C>
bool plain_rows(RowConstants<C> const& k) {
  return !k.smoothing && !k.entropy && !k.argmax && k.softcap == C(0) && k.soft_weight == C(0);
}

// The row pass of a chunk of `rows` rows on a host executor, over a's arguments; `logits` is the
// chunk's logits buffer (a.logits, writable: the pass adds the bias and divides by the temperature
// in place, then overwrites each row with its gradient when a.grad is set, which must then equal
// it, or with scratch values when not). Writes what ChunkRows writes. V is the plan's
// vocab_extent() down to the row's exp and scale loops: an Int<V> for a static plan (vocab_type),
// as in ChunkRows.
// @pre plain_rows(a.k); a.grad == nullptr or a.grad == logits; not a vocabulary-parallel call
template <AnyFlcePlan Plan, class C, class T, class Y>
struct HostPlainRows {
  using vocab_type = decltype(Plan{}.vocab_extent());  // Int<V>, or index_t

  template <class Executor>
  static void run(Executor const& executor, ChunkRowsArgs<Plan, C, C, T, Y> const& a, C* logits,
                  index_t rows) {
    vocab_type const v = a.plan.vocab_extent();
    RowConstants<C> const& k = a.k;
    // z = (logits + bias) / T, as the fused body's RowReader::raw computes it (T = 1 and no bias:
    // the GEMM's logits as they are).
    if (a.bias != nullptr || k.inv_temperature != C(1)) {
      auto const z =
          make_tensor(logits, make_layout(make_shape(rows, v), make_stride(v, Int<1>{})));
      if (a.bias != nullptr) {
        auto const bias = make_tensor(
            a.bias, make_layout(make_shape(rows, v), make_stride(Int<0>{}, a.bias_stride)));
        assign(z, (z + cast<C>(bias)) * k.inv_temperature, executor);
      } else {
        assign(z, z * k.inv_temperature, executor);
      }
    }
    exec::for_each_row(executor, rows, to_index(v), [&](exec::SequentialContext const&, index_t i) {
      C* const z = logits + i * v;
      index_t const t = a.row_target(i);
      if (t == k.ignore_index) {
        a.write_row(i, t, RowLoss<C>{});
        if (a.grad != nullptr) std::fill_n(z, to_index(v), C(0));
        return;
      }
      RowRefs<C, C, T> const refs = a.row_refs(i, v);
      C const w_t = RowReader<C, C, T, C>(refs, k).weight(t);
      C const z_t = z[t];
      exec::ShiftedExp<C> const e = exec::exp_shifted_in_place(z, v);
      bool const finite = math::isfinite(e.max);
      RowStats<C> s;
      s.lse = finite ? e.max + math::log(e.sum) : e.max;  // +inf, NaN or -inf: the row's logsumexp
      a.write_row(i, t, row_loss<false, false>(s, w_t, z_t, k));
      if (a.grad == nullptr) return;
      C ce_scale, z_scale;
      a.row_scales(i, ce_scale, z_scale);
      RowGradientScales<C> const g = row_gradient_scales(k, s, w_t, ce_scale, z_scale, C(0));
      if (finite) {  // g_j = p_coefficient p_j - a [j = t], p_j = e_j / sum
        exec::scale_in_place(z, v, g.p_coefficient / e.sum);
      } else {  // the row is unwritten: p_j = exp(z_j - lse), as the fused body computes it
        for (index_t j = 0; j < v; ++j) z[j] = g.p_coefficient * math::exp(z[j] - s.lse);
      }
      z[t] -= g.a;
    });
  }
};

// HostPlainRows<...>::run with its types deduced from the arguments.
template <class Executor, AnyFlcePlan Plan, class C, class T, class Y>
void host_plain_rows(Executor const& executor, ChunkRowsArgs<Plan, C, C, T, Y> const& a, C* logits,
                     index_t rows) {
  HostPlainRows<Plan, C, T, Y>::run(executor, a, logits, rows);
}

}  // namespace tessel::flce
