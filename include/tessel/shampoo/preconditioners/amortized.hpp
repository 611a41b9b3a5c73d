// The amortized work of the factor families, committed slot by slot: on an amortized step each
// mode's new matrices (inverse roots, or eigenvectors and eigenvalues) are computed for every slot
// of the group from F / bias_correction2 by the family, then each slot keeps them where the
// computation succeeded and keeps its previous ones where it failed (a failed root keeps the old
// root, as Distributed Shampoo does), counting failures in a row; a non-finite factor or result,
// or more failures in a row than tolerated, becomes that slot's error for this step.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../../expr/cast.hpp"
#include "../../expr/compare.hpp"
#include "../../expr/where.hpp"
#include "../roots/batch.hpp"
#include "../roots/status.hpp"
#include "../step/factors.hpp"
#include "kronecker_factors.hpp"

namespace tessel::shampoo {

// What the amortized work of a mode computes from: A = F / bias_correction2 (`in`) times the
// per-slot trace scale max(trace(A), epsilon)^(-exponent) when trace_scaled (kept in g.per_slot),
// times 1 otherwise (exact): one expression either way, so the roots and decompositions are
// compiled once.
template <class T, class X, class In>
auto scaled_input(StepContext<T, X> const& c, GroupState<T, X>& g, index_t d, T const* factor,
                  In const& in, StepScalars<T> const& s, bool trace_scaled) {
  using B = exec::Memory<X>;
  double* scale = g.per_slot.data();
  if (trace_scaled)
    stages::trace_scales(c.executor, factor, g.count, d, s.bias_correction2, c.options.epsilon,
                         c.options.trace_scaling_exponent, scale);
  else
    assign(B::view(scale, make_layout(make_shape(g.count))), 1.0, c.executor);
  auto const per_matrix =
      make_layout(make_shape(g.count, d, d), make_stride(Int<1>{}, Int<0>{}, Int<0>{}));
  return in * B::view(static_cast<double const*>(scale), per_matrix);
}

// compute(j, mode, in, out, out_eigenvalues, results): the family's new matrices of mode j for
// every slot into out ((count, d, d) scratch) and, when the family keeps eigenvalues,
// out_eigenvalues ((count, d)), from `in` = F_j / bias_correction2 in double; results[slot] says
// how each went. `computed` names the work in sentences ("inverse root", "eigendecomposition").
template <class T, class X, class Compute>
void amortize_factors(StepContext<T, X> const& c, GroupState<T, X>& g, KroneckerFactors<T, X>& kf,
                      std::vector<T*> const& factors, StepScalars<T> const& s, char const* computed,
                      bool eigenvalues, Compute&& compute) {
  using B = exec::Memory<X>;
  std::vector<char> failed(static_cast<std::size_t>(g.count), 0);
  std::vector<RootStatus> last(static_cast<std::size_t>(g.count), RootStatus::ok);
  std::vector<RootResult> results(static_cast<std::size_t>(g.count));
  for (std::size_t j = 0; j < kf.modes.size(); ++j) {
    auto& m = kf.modes[j];
    auto const layout = detail::matrices_layout(g.count, m.d);
    auto const in = cast<double>(B::view(factors[j], layout)) / s.bias_correction2;
    auto out = B::template scratch<T>(c.executor, g.count * m.d * m.d);
    auto out_eigenvalues = B::template scratch<T>(c.executor, eigenvalues ? g.count * m.d : 0);
    compute(j, m, in, out.data(), out_eigenvalues.data(), std::span<RootResult>(results));
    std::vector<T> commit(static_cast<std::size_t>(g.count), T(0));
    for (index_t slot = 0; slot < g.count; ++slot) {
      auto const i = static_cast<std::size_t>(slot);
      if (!g.errors[i].empty()) continue;
      switch (results[i].status) {
        case RootStatus::ok:
          commit[i] = T(1);
          break;
        case RootStatus::non_finite_input:
          g.errors[i] = tessel::detail::sentence("factor matrix ", j, " of ", c.block_name(g, slot),
                                                 " has NaN or Inf values at step ", c.step, ".");
          break;
        case RootStatus::non_finite:
          g.errors[i] = tessel::detail::sentence("the ", computed, " of factor matrix ", j, " of ",
                                                 c.block_name(g, slot),
                                                 " has NaN or Inf values at step ", c.step, ".");
          break;
        case RootStatus::solver_failed:
        case RootStatus::not_converged:
          failed[i] = 1;  // keep the previous matrices
          last[i] = results[i].status;
          break;
      }
    }
    auto mask = B::template scratch<T>(c.executor, g.count);
    B::from_host(c.executor, commit.data(), g.count, mask.data());
    auto const kept = B::view(m.matrices.data(), layout);
    assign(kept,
           where(B::view(mask.data(), detail::per_matrix_layout(g.count, m.d)) != T(0),
                 B::view(out.data(), layout), kept),
           c.executor);
    if (eigenvalues) {
      auto const values = B::view(m.eigenvalues.data(), make_layout(make_shape(g.count, m.d)));
      assign(values,
             where(B::view(mask.data(), detail::per_row_layout(g.count, m.d)) != T(0),
                   B::view(out_eigenvalues.data(), make_layout(make_shape(g.count, m.d))), values),
             c.executor);
    }
    B::wait(c.executor);  // commit's host memory
  }
  index_t const tolerated = c.options.num_tolerated_failed_amortized_computations;
  for (index_t slot = 0; slot < g.count; ++slot) {
    auto const i = static_cast<std::size_t>(slot);
    if (!g.errors[i].empty()) continue;
    index_t& failures = g.failures[i];
    failures = failed[i] ? failures + 1 : 0;
    if (failures > tolerated)
      g.errors[i] = tessel::detail::sentence(
          "the ", computed, "s of ", c.block_name(g, slot), " failed ", failures,
          " amortized computations in a row, more than the ", tolerated,
          " tolerated; the last time ", root_status_name(last[i]), ".");
  }
}

}  // namespace tessel::shampoo
