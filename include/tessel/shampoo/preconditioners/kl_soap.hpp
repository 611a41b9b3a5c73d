// KL-SOAP: SOAP (EigenvalueCorrected) whose factors take KL-Shampoo's estimate, as NVIDIA's
// Emerging-Optimizers has it (REKLS; Meta's Distributed Shampoo has no such config). SOAP keeps no
// inverse roots, so the other modes' roots come from its eigenbasis: with Q_i the eigenvectors of
// mode i and lambda_i = diag(Q_i^T (F_i / bc2) Q_i) the eigenvalue estimates taken when Q_i was
// last refreshed (ones before the first refresh, with Q_i = I),
//   P_i = Q_i diag((d_i max(lambda_i, epsilon))^(-1/2)) Q_i^T,
// and factor k accumulates X_k = G x_{i != k} P_i, so that a 2-D block's L gains G R^-1 G^T / n
// (the KL-minimizing update, arXiv:2509.03378) and its R gains G^T L^-1 G / m. The eigenbasis, the
// corrected eigenvalues and the direction are SOAP's. A block with one rotated mode accumulates G.
// State: SOAP's, plus [.., "shampoo", "factor_matrices_eigenvalues", j] (lambda_j).
// Run-time choice: Options::preconditioner eigenvalue_corrected with Options::kl_shampoo.
//
// This file is the whole family: it reuses SOAP's pieces and adds the estimate (the factor inputs,
// their roots P_i, and lambda at each refresh). docs/shampoo.md, "Writing a preconditioner", walks
// through it.
#pragma once

#include <vector>

#include "../../expr/math.hpp"
#include "../../expr/minmax.hpp"
#include "../../expr/reduce.hpp"
#include "../../tensor/views.hpp"
#include "eigenvalue_corrected.hpp"
#include "kl_estimate.hpp"

namespace tessel::shampoo {

struct KlSoap : EigenvalueCorrected {
  static constexpr bool kl = true;

  template <class T, class X>
  struct State : EigenvalueCorrected::State<T, X> {
    KlEstimate<T, X> kl;  // X_k per rotated mode (kl_estimate.hpp)
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    init_with(c, g, s, true);  // lambda starts at ones, Q at the identity
    s.kl.allocate(g, s.factors);
  }

  template <class T, class X>
  T const* factor_input(GroupState<T, X> const& g, State<T, X> const& s, std::size_t j) const {
    return s.kl.input(g, j);
  }

  // X_k for every mode k with P_i from the eigenbasis, before the pre-check bounds what the
  // factors accumulate.
  template <class T, class X>
  void prepare_factor_inputs(StepContext<T, X> const& c, GroupState<T, X>& g,
                             State<T, X>& s) const {
    if (!s.kl.inputs.data() || g.empty()) return;
    std::vector<typename StepContext<T, X>::Scratch> keep;
    std::vector<T const*> roots;
    keep.reserve(s.factors.modes.size());
    for (auto const& m : s.factors.modes) {
      keep.push_back(kl_root(c, g, m));
      roots.push_back(keep.back().data());
    }
    s.kl.compute(c, g, s.factors, roots);
  }

  // SOAP's accumulation with the KL inputs, and lambda estimated at every refresh.
  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                  StepScalars<T> const& sc) const {
    accumulate_with(
        c, g, s, sc, [&](std::size_t j) { return factor_input(g, s, j); },
        [&](std::vector<T*> const& factors) {
          refresh_eigenbasis(c, g, s, factors, sc, true,
                             [&](std::size_t, auto const& m, T const* q, T* lambda, T const* f) {
                               estimate_eigenvalues(c, g, m.d, q, f, sc, lambda);
                             });
        });
  }

  template <class T, class X, class F>
  void for_each_buffer(StepContext<T, X> const&, GroupState<T, X> const& g, State<T, X> const& s,
                       F&& f) const {
    for_each_buffer_with(g, s, "factor_matrices_eigenvalues", f);
  }

 private:
  // P = Q diag((d max(lambda, epsilon))^(-1/2)) Q^T for mode m of every slot, (count, d, d).
  template <class T, class X, class Mode>
  static auto kl_root(StepContext<T, X> const& c, GroupState<T, X> const& g, Mode const& m) {
    using B = exec::Memory<X>;
    index_t const d = m.d;
    auto const square = make_layout(make_shape(g.count, d, d));
    auto const q = B::view(static_cast<T const*>(m.matrices.data()), square);
    // lambda(b, j) read along the columns of slot b's matrix.
    auto const lambda =
        B::view(static_cast<T const*>(m.eigenvalues.data()),
                make_layout(make_shape(g.count, d, d), make_stride(d, Int<0>{}, Int<1>{})));
    auto scaled = B::template scratch<T>(c.executor, g.count * d * d);
    auto root = B::template scratch<T>(c.executor, g.count * d * d);
    T const eps = static_cast<T>(c.options.epsilon);
    assign(B::view(scaled.data(), square), q * (T(1) / sqrt(T(d) * max(lambda, eps))), c.executor);
    gemm(c.executor, B::view(root.data(), square),
         B::view(static_cast<T const*>(scaled.data()), square), permute<0, 2, 1>(q));
    return root;
  }

  // lambda(b, i) = (Q_b^T F_b Q_b)_ii / bc2 for the new eigenvectors q and the factors f.
  template <class T, class X>
  static void estimate_eigenvalues(StepContext<T, X> const& c, GroupState<T, X> const& g, index_t d,
                                   T const* q, T const* f, StepScalars<T> const& sc, T* lambda) {
    using B = exec::Memory<X>;
    auto const square = make_layout(make_shape(g.count, d, d));
    auto fq = B::template scratch<T>(c.executor, g.count * d * d);
    gemm(c.executor, B::view(fq.data(), square), B::view(f, square), B::view(q, square));
    assign(B::view(lambda, make_layout(make_shape(g.count, d))),
           sum(B::view(q, square) * B::view(static_cast<T const*>(fq.data()), square), mode<1>) /
               static_cast<T>(sc.bias_correction2),
           c.executor);
  }
};

}  // namespace tessel::shampoo
