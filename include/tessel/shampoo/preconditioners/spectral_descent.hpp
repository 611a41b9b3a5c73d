// Spectral descent, Muon's direction (Distributed Shampoo's SpectralDescentPreconditionerConfig):
// a 2-D block moves along its orthogonalized (filtered) gradient U V^T, by the quintic
// Newton-Schulz iteration (the default) or the exact reduced SVD (step/orthogonalize.hpp). It keeps
// no factors and computes no roots; grafting, momentum and weight decay apply as to every family.
// Options read: orthogonalization, newton_schulz, svd.
#pragma once

#include <string>
#include <vector>

#include "../step/context.hpp"
#include "../step/orthogonalize.hpp"

namespace tessel::shampoo {

struct SpectralDescent {
  static constexpr PreconditionerType type = PreconditionerType::spectral_descent;
  static constexpr bool kl = false;

  template <class T, class X>
  struct State {};

  // Only 2-D blocks have an orthogonalization (named by the first block of the group).
  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>&) const {
    if (g.shape.rank() == 2 || g.empty()) return;
    tessel::detail::throw_error(detail::sentence(
        "spectral descent orthogonalizes 2-D blocks, but ", c.block_name(g, 0), " has shape ",
        tessel::detail::shape_text(g.shape),
        "; with target_parameter_dimensionality 2 every parameter of rank 2 or more merges to "
        "2-D blocks, and 0-D and 1-D parameters cannot be orthogonalized."));
  }

  // With the SVD, the direction is computed while the step accumulates (it depends on nothing the
  // update phase changes), so that a Gram matrix eigh cannot decompose refuses the step before any
  // parameter of any group moves; Distributed Shampoo's torch.linalg.svd raises too, and there is
  // no earlier direction to keep. Non-finite gradients are refused before the step, so what is
  // left is a Gram matrix that overflows.
  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>&,
                  StepScalars<T> const& sc) const {
    if (c.options.orthogonalization != OrthogonalizationMethod::svd || sc.grafting_only) return;
    T const* x = c.options.beta1 != 0.0 ? g.direction.data() : g.grad.data();
    std::vector<index_t> const failed =
        stages::svd_orthogonalize(c.executor, x, g.search.data(), g.count, g.shape[0], g.shape[1],
                                  c.options.svd, g.per_slot.data());
    for (index_t slot : failed)
      g.errors[static_cast<std::size_t>(slot)] = detail::sentence(
          "the SVD orthogonalization of ", c.block_name(g, slot),
          " failed: eigh did not converge on its Gram matrix (a gradient whose squares overflow "
          "f64 does this).");  // float blocks too: see stages::svd_orthogonalize
  }

  template <class T, class X>
  T* direction(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>&, T* x,
               StepScalars<T> const&) const {
    // No default: a new method must say how it orthogonalizes.
    switch (c.options.orthogonalization) {
      case OrthogonalizationMethod::newton_schulz:
        return stages::orthogonalize(c.executor, x, g.search.data(), g.spare.data(), g.count,
                                     g.shape[0], g.shape[1], c.options.newton_schulz,
                                     g.per_slot.data());
      case OrthogonalizationMethod::svd:
        return g.search.data();  // accumulate() wrote it
    }
    tessel::detail::throw_error(detail::sentence("orthogonalization ",
                                                 static_cast<int>(c.options.orthogonalization),
                                                 " is not an OrthogonalizationMethod."));
  }

  template <class T, class X, class F>
  void for_each_buffer(StepContext<T, X> const&, GroupState<T, X> const&, State<T, X> const&,
                       F&&) const {}
};

}  // namespace tessel::shampoo
