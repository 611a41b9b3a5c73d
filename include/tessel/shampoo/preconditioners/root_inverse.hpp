// Shampoo with cached inverse roots (Distributed Shampoo's RootInvShampooPreconditionerConfig, the
// default family): each block keeps one Kronecker factor per preconditioned mode and its inverse
// root R_k = (F_k / bias_correction2 + epsilon I)^(-1/root_k), recomputed on amortized steps (the
// eigen or coupled Newton method of Options::root, with trace scaling when asked), and moves along
// x x_1 R_1 ... x_n R_n. A mode's exponent 1 / root_k is 1 / (2 order) unless
// Options::inverse_exponent_override says otherwise; exponent 0 leaves the mode unpreconditioned.
// Options read: beta2, epsilon, inverse_exponent_override, root, factor_matrix_dtype,
// use_symmetric_packing (the roots are saved packed too), use_trace_scaling,
// trace_scaling_exponent, num_tolerated_failed_amortized_computations.
#pragma once

#include <string>
#include <vector>

#include "../roots/inverse_root.hpp"
#include "amortized.hpp"
#include "kronecker_factors.hpp"

namespace tessel::shampoo {

namespace detail {

// A factor for every mode of g's blocks whose exponent is not 0, its root checked against the root
// settings (a bad override is refused with the mode it gave the exponent to).
template <class T, class X>
void add_root_modes(StepContext<T, X> const& c, GroupState<T, X> const& g,
                    KroneckerFactors<T, X>& kf, RootConfig const& root_config,
                    bool with_eigenvalues) {
  index_t const order = g.shape.rank();
  for (index_t k = 0; k < order; ++k) {
    double const e = inverse_exponent(c.options.inverse_exponent_override, order, k);
    if (e == 0.0) continue;
    try {
      check_root_arguments(1.0 / e, c.options.epsilon, root_config);
    } catch (Error const& error) {
      tessel::detail::throw_error(sentence("inverse_exponent_override gives dimension ", k, " of ",
                                           order, "-D blocks the exponent ", e, ", but ",
                                           error.what()));
    }
    kf.add_mode(c, g, k, 1.0 / e, with_eigenvalues);
  }
}

// cur x_1 R_1 ... x_n R_n through g's two search buffers, R_j = root(j); returns where the result
// is (cur itself when there are no modes).
template <class T, class X, class Root>
T* precondition_modes(StepContext<T, X> const& c, GroupState<T, X>& g,
                      KroneckerFactors<T, X> const& kf, T* cur, Root const& root) {
  T* buffers[2] = {g.search.data(), g.spare.data()};
  for (std::size_t j = 0; j < kf.modes.size(); ++j) {
    T* next = buffers[j % 2];
    stages::mode_product(c.executor, cur, next, root(j), g.count, g.shape, kf.modes[j].dim);
    cur = next;
  }
  return cur;
}

}  // namespace detail

struct RootInv {
  static constexpr PreconditionerType type = PreconditionerType::shampoo;
  static constexpr bool kl = false;

  template <class T, class X>
  struct State {
    KroneckerFactors<T, X> factors;
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    detail::add_root_modes(c, g, s.factors, c.options.root, false);
  }

  // The current inverse root of mode j (the one the last amortized step computed).
  template <class T, class X>
  T const* root(StepContext<T, X> const&, GroupState<T, X> const&, State<T, X> const& s,
                std::size_t j, std::vector<typename StepContext<T, X>::Scratch>&) const {
    return s.factors.modes[j].matrices.data();
  }

  // The factors accumulate input(j) (the gradient; KL-Shampoo's preconditioned one), then, on
  // amortized steps, the inverse roots are recomputed.
  template <class T, class X, class Input>
  void accumulate_with(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                       StepScalars<T> const& sc, Input const& input) const {
    using B = exec::Memory<X>;
    auto open = s.factors.accumulate(c, g, input, sc);
    if (sc.amortized) {
      Options const& o = c.options;
      amortize_factors(
          c, g, s.factors, open.values, sc, "inverse root", false,
          [&](std::size_t j, auto const& m, auto const& in, T* out, T*,
              std::span<RootResult> results) {
            auto const layout = detail::matrices_layout(g.count, m.d);
            auto const compute = [&](auto const& input_matrices) {
              inverse_roots<T>(c.executor, input_matrices, B::view(out, layout), g.count, m.d,
                               m.root, o.epsilon, o.root, results);
            };
            compute(scaled_input(c, g, m.d, open.values[j], in, sc, o.use_trace_scaling));
            // Packed state keeps a root's upper triangle: the root is made exactly
            // symmetric from it, so a saved and resumed optimizer steps as this one
            // does (and as Distributed Shampoo's packed roots step). Eigen roots
            // already are (one SYRK, roots/eigen.hpp); coupled Newton's are symmetric
            // only up to rounding.
            if (o.use_symmetric_packing && o.root.method == RootMethod::coupled_newton)
              mirror_upper_triangle(c.executor, out, g.count, m.d);
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
  void for_each_buffer(StepContext<T, X> const& c, GroupState<T, X> const&, State<T, X> const& s,
                       F&& f) const {
    s.factors.for_each_buffer("inv_factor_matrices", c.options.use_symmetric_packing, nullptr, f);
  }
};

}  // namespace tessel::shampoo
