// The amortized eigendecomposition shared by the families that keep their factors' eigenvectors
// (eigendecomposed Shampoo, eigenvalue-corrected Shampoo / SOAP, KL-SOAP), as Distributed
// Shampoo's EighEigendecompositionConfig and QREigendecompositionConfig do it. Both start from the
// eigenvectors Q the state keeps (the identity before the first computation): with a tolerance,
// eigh keeps Q (and takes diag(Q^T A Q) as the eigenvalues) for the slots that Q still diagonalizes
// within it; the QR iteration refines Q in place (roots/qr_iteration.hpp).
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "../../expr/compare.hpp"
#include "../../expr/where.hpp"
#include "../roots/batch.hpp"
#include "../roots/qr_iteration.hpp"
#include "../roots/status.hpp"
#include "kronecker_factors.hpp"

namespace tessel::shampoo {

// How a family decomposes one mode's factors on an amortized step.
struct Decomposition {
  double ridge = 0;           // added to A before it is decomposed (Distributed Shampoo's epsilon)
  bool trace_scaled = false;  // A times max(trace(A), epsilon)^(-exponent) per slot
  bool eigenvalues = false;   // the family keeps the eigenvalues (else only Q)
};

// The slots in `skip` keep their eigenvectors (m.matrices) and, when the family keeps eigenvalues,
// take the estimate as their eigenvalues, whatever the computation said of them.
template <class T, class X>
void keep_skipped(StepContext<T, X> const& c, GroupState<T, X> const& g,
                  typename KroneckerFactors<T, X>::Mode const& m, std::vector<char> const& skip,
                  T const* estimate, T* out, T* out_eigenvalues, std::span<RootResult> results) {
  using B = exec::Memory<X>;
  std::vector<T> keep(skip.size(), T(0));
  for (std::size_t i = 0; i < skip.size(); ++i)
    if (skip[i]) {
      keep[i] = T(1);
      results[i] = RootResult{};
    }
  auto mask = B::template scratch<T>(c.executor, g.count);
  B::from_host(c.executor, keep.data(), g.count, mask.data());
  auto const layout = detail::matrices_layout(g.count, m.d);
  auto const o = B::view(out, layout);
  assign(o,
         where(B::view(static_cast<T const*>(mask.data()),
                       detail::per_matrix_layout(g.count, m.d)) != T(0),
               B::view(static_cast<T const*>(m.matrices.data()), layout), o),
         c.executor);
  if (out_eigenvalues) {
    auto const e = B::view(out_eigenvalues, make_layout(make_shape(g.count, m.d)));
    assign(e,
           where(B::view(static_cast<T const*>(mask.data()),
                         detail::per_row_layout(g.count, m.d)) != T(0),
                 B::view(estimate, make_layout(make_shape(g.count, m.d))), e),
           c.executor);
  }
  B::wait(c.executor);  // keep's host memory
}

// One mode's warm-started decomposition into out (Q, (count, d, d)) and out_eigenvalues ((count,
// d), when kept): eigh's tolerance checked first; with the QR iteration, Q refined from the kept
// one; otherwise eigh(in) by `by_eigh(input)`, which the family gives (its own eigh call, its own
// input: eigendecomposed Shampoo's ridge and trace scale, SOAP's raw factor).
template <class T, class X, class In, class ByEigh>
void decompose_mode(StepContext<T, X> const& c, GroupState<T, X>& g,
                    typename KroneckerFactors<T, X>::Mode const& m, T const* factor, In const& in,
                    StepScalars<T> const& s, Decomposition const& how, T* out, T* out_eigenvalues,
                    std::span<RootResult> results, ByEigh const& by_eigh) {
  using B = exec::Memory<X>;
  EigendecompositionConfig const& ed = c.options.root.eigendecomposition;
  auto const layout = detail::matrices_layout(g.count, m.d);
  std::vector<char> skip;  // eigh's tolerance: 1 for a slot that keeps its eigenvectors
  auto skip_estimate = B::template scratch<T>(c.executor, 0);
  if (ed.tolerance != 0.0 && ed.method == EigendecompositionMethod::eigh) {
    skip_estimate = B::template scratch<T>(c.executor, g.count * m.d);
    skip = eigh_estimates_within_tolerance<T>(
        c.executor, scaled_input(c, g, m.d, factor, in, s, how.trace_scaled),
        B::view(m.matrices.data(), layout), skip_estimate.data(), g.count, m.d, how.ridge,
        ed.tolerance);
  }
  if (ed.method == EigendecompositionMethod::qr) {
    // Warm start: the iteration refines the eigenvectors the state keeps.
    assign(B::view(out, layout), B::view(m.matrices.data(), layout), c.executor);
    auto lambda = B::template scratch<T>(c.executor, how.eigenvalues ? 0 : g.count * m.d);
    qr_iteration<T>(c.executor, scaled_input(c, g, m.d, factor, in, s, how.trace_scaled),
                    B::view(out, layout), how.eigenvalues ? out_eigenvalues : lambda.data(),
                    g.count, m.d, how.ridge, ed.max_iterations, ed.tolerance, results);
  } else {
    by_eigh();
  }
  if (std::find(skip.begin(), skip.end(), char{1}) != skip.end())
    keep_skipped(c, g, m, skip, skip_estimate.data(), out,
                 how.eigenvalues ? out_eigenvalues : nullptr, results);
}

}  // namespace tessel::shampoo
