// Eigendecomposed Shampoo (Distributed Shampoo's EigendecomposedShampooPreconditionerConfig):
// Shampoo that caches each factor's eigendecomposition A + epsilon I = Q diag(lambda) Q^T
// (eigenvectors and eigenvalues, refreshed on amortized steps by eigh or the QR iteration, with
// the eigen root settings) instead of its inverse root, and forms the root Q diag(f(lambda)) Q^T
// from it on every step: the same direction as RootInv with the eigen root method, other state.
// Options read: RootInv's, with Options::root.eigendecomposition instead of the root method.
#pragma once

#include <vector>

#include "../roots/eigen.hpp"
#include "amortized.hpp"
#include "eigenbasis.hpp"
#include "root_inverse.hpp"

namespace tessel::shampoo {

struct Eigendecomposed {
  static constexpr PreconditionerType type = PreconditionerType::eigendecomposed;
  static constexpr bool kl = false;

  template <class T, class X>
  struct State {
    KroneckerFactors<T, X> factors;  // matrices: the eigenvectors Q; eigenvalues: lambda
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    // It decomposes the factors whatever the root method says.
    RootConfig root_config = c.options.root;
    root_config.method = RootMethod::eigen;
    detail::add_root_modes(c, g, s.factors, root_config, true);
  }

  // The inverse root of mode j, formed from its cached eigendecomposition in a scratch buffer
  // that `keep` holds.
  template <class T, class X>
  T const* root(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X> const& s,
                std::size_t j, std::vector<typename StepContext<T, X>::Scratch>& keep) const {
    using B = exec::Memory<X>;
    auto const& m = s.factors.modes[j];
    auto const layout = detail::matrices_layout(g.count, m.d);
    keep.push_back(B::template scratch<T>(c.executor, g.count * m.d * m.d));
    eigendecomposed_inverse_roots<T>(
        c.executor, B::view(static_cast<T const*>(m.matrices.data()), layout),
        static_cast<T const*>(m.eigenvalues.data()), g.count, m.d, m.root, c.options.epsilon,
        c.options.root.eigen, B::view(keep.back().data(), layout));
    return keep.back().data();
  }

  template <class T, class X, class Input>
  void accumulate_with(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                       StepScalars<T> const& sc, Input const& input) const {
    using B = exec::Memory<X>;
    auto open = s.factors.accumulate(c, g, input, sc);
    if (sc.amortized) {
      Options const& o = c.options;
      Decomposition const how{detail::adds_ridge(o.root.eigen) ? o.epsilon : 0.0,
                              o.use_trace_scaling, true};
      amortize_factors(
          c, g, s.factors, open.values, sc, "eigendecomposition", true,
          [&](std::size_t j, auto const& m, auto const& in, T* out, T* out_eigenvalues,
              std::span<RootResult> results) {
            auto const layout = detail::matrices_layout(g.count, m.d);
            decompose_mode(
                c, g, m, open.values[j], in, sc, how, out, out_eigenvalues, results, [&] {
                  auto const compute = [&](auto const& input_matrices) {
                    factor_eigendecomposition<T>(c.executor, input_matrices, B::view(out, layout),
                                                 out_eigenvalues, g.count, m.d, o.epsilon,
                                                 o.root.eigen, results);
                  };
                  compute(scaled_input(c, g, m.d, open.values[j], in, sc, o.use_trace_scaling));
                });
          });
    }
    s.factors.store(c, g, open);
  }
  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                  StepScalars<T> const& sc) const {
    accumulate_with(c, g, s, sc, [&](std::size_t) { return static_cast<T const*>(g.grad.data()); });
  }

  template <class T, class X>
  T* direction(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s, T* x,
               StepScalars<T> const&) const {
    std::vector<typename StepContext<T, X>::Scratch> keep;
    return detail::precondition_modes(c, g, s.factors, x,
                                      [&](std::size_t j) { return root(c, g, s, j, keep); });
  }

  template <class T, class X, class F>
  void for_each_buffer(StepContext<T, X> const&, GroupState<T, X> const&, State<T, X> const& s,
                       F&& f) const {
    s.factors.for_each_buffer("factor_matrices_eigenvectors", false, "factor_matrices_eigenvalues",
                              f);
  }
};

}  // namespace tessel::shampoo
