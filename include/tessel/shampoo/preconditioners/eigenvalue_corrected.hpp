// Eigenvalue-corrected Shampoo, SOAP (Distributed Shampoo's
// EigenvalueCorrectedShampooPreconditionerConfig): the factors' eigenvectors Q_k, refreshed on
// amortized steps (eigh, or the QR iteration, eigenbasis.hpp), rotate the gradient into their
// basis, where a per-element Adam-style second moment V <- beta2 V + w G'^2 (the corrected
// eigenvalues) divides it: direction = (x' / ((V / bc2)^e + epsilon)) rotated back, x' = x rotated,
// e = 1/2 or the block order's inverse_exponent_override. Modes named in
// Options::ignored_basis_change_dims are not rotated and keep no factor. With
// Options::keep_rotated_filtered_grad the filtered gradient is also kept in the eigenbasis, so
// that a step that keeps its eigenvectors rotates once instead of twice.
// Options read: beta2, epsilon, inverse_exponent_override (one exponent per order),
// ignored_basis_change_dims, root.eigendecomposition, factor_matrix_dtype, use_symmetric_packing,
// keep_rotated_filtered_grad, num_tolerated_failed_amortized_computations.
#pragma once

#include <vector>

#include "../../expr/math.hpp"
#include "../roots/eigen.hpp"
#include "../step/stages.hpp"
#include "amortized.hpp"
#include "eigenbasis.hpp"
#include "kronecker_factors.hpp"

namespace tessel::shampoo {

struct EigenvalueCorrected {
  static constexpr PreconditionerType type = PreconditionerType::eigenvalue_corrected;
  static constexpr bool kl = false;

  template <class T, class X>
  struct State {
    template <class U>
    using Buffer = typename exec::Memory<X>::template Buffer<U>;
    KroneckerFactors<T, X> factors;  // matrices: the eigenvectors Q
    Buffer<T> corrected;             // V, (count, block...)
    // keep_rotated_filtered_grad: the filtered gradient in the eigenbasis, and whether it is (to
    // rounding) the filtered gradient rotated by the current eigenvectors.
    Buffer<T> rotated_filtered;
    bool rotated_filtered_valid = false;
    // Where this step's accumulate left the direction already rotated into the eigenbasis
    // (search or spare), or null.
    T* rotated = nullptr;
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    init_with(c, g, s, false);
  }

  // A factor for every mode that changes basis (with eigenvalues too, for a variant that keeps
  // them), the corrected eigenvalues, and the rotated filtered gradient when asked for.
  template <class T, class X>
  static void init_with(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s,
                        bool with_eigenvalues) {
    using B = exec::Memory<X>;
    index_t const order = g.shape.rank();
    for (index_t k = 0; k < order; ++k)
      if (changes_basis(c.options.ignored_basis_change_dims, order, k))
        s.factors.add_mode(c, g, k, 2.0, with_eigenvalues);
    index_t const n = g.count * g.numel;
    s.corrected = B::template allocate<T>(n);
    assign(StepContext<T, X>::flat(s.corrected.data(), n), T(0), c.executor);
    if (c.options.keep_rotated_filtered_grad && c.options.beta1 != 0.0 && !s.factors.modes.empty())
      s.rotated_filtered = B::template allocate<T>(n);
  }

  // x rotated mode by mode by the eigenvectors (back: by their transposes, out of the eigenbasis),
  // through the search buffers: buffers[used % 2] is the next one written, and used counts the
  // writes; the last product goes to `last` when one is given. Returns where the result is (x
  // itself for a group without modes).
  template <class T, class X>
  static T* rotate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X> const& s, T* x,
                   std::size_t& used, bool back = false, T* last = nullptr) {
    T* const buffers[2] = {g.search.data(), g.spare.data()};
    T* cur = x;
    auto const& modes = s.factors.modes;
    for (std::size_t j = 0; j < modes.size(); ++j) {
      T* const next = last && j + 1 == modes.size() ? last : buffers[used++ % 2];
      stages::mode_product(c.executor, cur, next, modes[j].matrices.data(), g.count, g.shape,
                           modes[j].dim, back);
      cur = next;
    }
    return cur;
  }

  // The factors accumulate input(j) (the gradient; KL-SOAP's estimate), refresh(factors) renews
  // the eigenbasis on amortized steps, then the corrected eigenvalues accumulate the gradient
  // rotated into the (new) eigenbasis.
  template <class T, class X, class Input, class Refresh>
  static void accumulate_with(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                              StepScalars<T> const& sc, Input const& input,
                              Refresh const& refresh) {
    auto open = s.factors.accumulate(c, g, input, sc);
    if (sc.amortized) refresh(open.values);
    after_refresh(c, g, s, sc);
    s.factors.store(c, g, open);
  }
  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                  StepScalars<T> const& sc) const {
    accumulate_with(
        c, g, s, sc, [&](std::size_t) { return static_cast<T const*>(g.grad.data()); },
        [&](std::vector<T*> const& factors) {
          refresh_eigenbasis(c, g, s, factors, sc, false,
                             [](std::size_t, auto const&, T const*, T*, T const*) {});
        });
  }

  // The eigenvectors of F_k (scale-free, so F itself, not F / bc2), warm-started as configured,
  // committed slot by slot. With eigenvalues, estimate(j, mode, Q, lambda, F) writes each new
  // basis's eigenvalues (count, d), committed with it.
  template <class T, class X, class Estimate>
  static void refresh_eigenbasis(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                                 std::vector<T*> const& factors, StepScalars<T> const& sc,
                                 bool eigenvalues, Estimate const& estimate) {
    using B = exec::Memory<X>;
    Decomposition const how{c.options.epsilon, false, false};
    // The name is the pre-family optimizer's, which tests and users match on.
    amortize_factors(c, g, s.factors, factors, sc, "inverse root", eigenvalues,
                     [&](std::size_t j, auto const& m, auto const& in, T* out, T* out_eigenvalues,
                         std::span<RootResult> results) {
                       auto const layout = detail::matrices_layout(g.count, m.d);
                       decompose_mode(c, g, m, factors[j], in, sc, how, out,
                                      static_cast<T*>(nullptr), results, [&] {
                                        factor_eigenvectors<T>(
                                            c.executor, B::view(factors[j], layout),
                                            B::view(out, layout), g.count, m.d, results);
                                      });
                       if (eigenvalues) estimate(j, m, out, out_eigenvalues, factors[j]);
                     });
  }

  // V <- beta2 V + w G'^2 with G' the raw gradient rotated into the eigenbasis, and where the
  // direction can be taken rotated already: G' itself (beta1 == 0: the same products on the same
  // operands, bit for bit), or the filtered gradient kept rotated.
  template <class T, class X>
  static void after_refresh(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                            StepScalars<T> const& sc) {
    using Ctx = StepContext<T, X>;
    s.rotated = nullptr;
    index_t const n = g.count * g.numel;
    std::size_t used = 0;
    T* const rotated_grad = rotate(c, g, s, g.grad.data(), used);
    auto const v = Ctx::flat(s.corrected.data(), n);
    auto const r = Ctx::flat(rotated_grad, n);
    assign(v, sc.beta2 * v + sc.weight * r * r, c.executor);
    if (c.options.beta1 == 0.0 && !s.factors.modes.empty())
      s.rotated = rotated_grad;
    else if (s.rotated_filtered.data() && !sc.grafting_only)
      rotate_filtered_gradient(c, g, s, sc, rotated_grad);
  }

  // keep_rotated_filtered_grad: the filtered gradient kept in the eigenbasis, S', filtered there
  // as S is here (stages::filter_gradient on G' instead of G), gives this step's direction in the
  // eigenbasis without rotating x: rotation is linear, so S' stays S rotated (to rounding) while
  // the eigenvectors stay. When they change (amortized steps), S' is S rotated afresh, and x' is
  // S' / bias1 (x is S / bias1 when beta3 == beta1) or x rotated. After load_state_dict or a step
  // that skipped a block, S' is not S rotated: until the next refresh the direction is rotated as
  // without the option.
  template <class T, class X>
  static void rotate_filtered_gradient(StepContext<T, X> const& c, GroupState<T, X>& g,
                                       State<T, X>& s, StepScalars<T> const& sc, T* rotated_grad) {
    using Ctx = StepContext<T, X>;
    index_t const n = g.count * g.numel;
    T* const free = rotated_grad == g.search.data() ? g.spare.data() : g.search.data();
    auto const kept = Ctx::flat(s.rotated_filtered.data(), n);
    if (!sc.amortized) {
      if (!s.rotated_filtered_valid) return;
      stages::filter_gradient(c.executor, kept, Ctx::flat(rotated_grad, n), Ctx::flat(free, n), sc);
      s.rotated = free;
      return;
    }
    std::size_t used = 0;
    rotate(c, g, s, g.filtered.data(), used, false, s.rotated_filtered.data());
    s.rotated_filtered_valid = true;
    if (sc.beta3 == sc.beta1) {
      assign(Ctx::flat(g.search.data(), n), kept * sc.inv_bias1, c.executor);
      s.rotated = g.search.data();
    } else {
      s.rotated = rotate(c, g, s, g.direction.data(), used);
    }
  }

  // Into the eigenbasis (or from where accumulate left x rotated), divided by
  // (V / bc2)^e + epsilon, and back.
  template <class T, class X>
  T* direction(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s, T* x,
               StepScalars<T> const& sc) const {
    using Ctx = StepContext<T, X>;
    index_t const n = g.count * g.numel;
    T* buffers[2] = {g.search.data(), g.spare.data()};
    std::size_t used = 0;
    T* cur = x;
    if (s.rotated) {
      cur = s.rotated;
      used = cur == buffers[0] ? 1 : 0;  // the other buffer is the next one written
    } else {
      cur = rotate(c, g, s, cur, used);
    }
    if (s.factors.modes.empty()) {  // a 0-D block: no basis to change
      assign(Ctx::flat(buffers[0], n), Ctx::flat(cur, n), c.executor);
      cur = buffers[used++ % 2];
    }
    auto const cv = Ctx::flat(cur, n);
    auto const v = Ctx::flat(s.corrected.data(), n) / static_cast<T>(sc.bias_correction2);
    auto const eps = static_cast<T>(c.options.epsilon);
    double const e =
        corrected_eigenvalue_exponent(c.options.inverse_exponent_override, g.shape.rank());
    if (e == 0.5)  // the default: sqrt, exact where pow need not be
      assign(cv, cv / (sqrt(v) + eps), c.executor);
    else
      assign(cv, cv / (pow(v, e) + eps), c.executor);
    return rotate(c, g, s, cur, used, true);
  }

  template <class T, class X, class F>
  void for_each_buffer(StepContext<T, X> const&, GroupState<T, X> const& g, State<T, X> const& s,
                       F&& f) const {
    for_each_buffer_with(g, s, nullptr, f);
  }
  // The same, with the modes' eigenvalues under eigenvalues_key when a variant keeps them.
  template <class T, class X, class F>
  static void for_each_buffer_with(GroupState<T, X> const& g, State<T, X> const& s,
                                   char const* eigenvalues_key, F&& f) {
    s.factors.for_each_buffer("factor_matrices_eigenvectors", false, eigenvalues_key, f);
    f(StateBuffer(s.corrected, g.numel * static_cast<index_t>(sizeof(T)),
                  {"shampoo", "corrected_eigenvalues"}, dtype_of_v<T>, block_of(g), block_of(g)));
  }

  // The rotated filtered gradient no longer follows the filtered one (a loaded state, a skipped
  // block): it is derived again at the next refresh.
  template <class T, class X>
  void invalidate(State<T, X>& s) const {
    s.rotated_filtered_valid = false;
  }

 protected:
  template <class T, class X>
  static std::vector<index_t> block_of(GroupState<T, X> const& g) {
    return std::vector<index_t>(g.shape.begin(), g.shape.end());
  }
};

// SOAP's name in the literature.
using Soap = EigenvalueCorrected;

}  // namespace tessel::shampoo
