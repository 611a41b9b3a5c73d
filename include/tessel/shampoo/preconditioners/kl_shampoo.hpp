// KL-Shampoo (Distributed Shampoo's RootInvKLShampooPreconditionerConfig and
// EigendecomposedKLShampooPreconditionerConfig): Shampoo whose factor k accumulates the outer
// products of the gradient preconditioned along the block's other modes by their current inverse
// roots, G x_{i != k} R_i, instead of the gradient's (the Kullback-Leibler estimate of the factors,
// arXiv:2509.03378). Everything else is the base family's: KlShampoo<RootInv> or
// KlShampoo<Eigendecomposed>. A block with one preconditioned mode accumulates G itself.
#pragma once

#include <vector>

#include "eigendecomposed.hpp"
#include "kl_estimate.hpp"
#include "root_inverse.hpp"

namespace tessel::shampoo {

template <class Base = RootInv>
struct KlShampoo : Base {
  static constexpr bool kl = true;

  template <class T, class X>
  struct State : Base::template State<T, X> {
    KlEstimate<T, X> kl;
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    Base::init(c, g, s);
    s.kl.allocate(g, s.factors);
  }

  template <class T, class X>
  T const* factor_input(GroupState<T, X> const& g, State<T, X> const& s, std::size_t j) const {
    return s.kl.input(g, j);
  }

  // The KL inputs from the roots of the last amortized step.
  template <class T, class X>
  void prepare_factor_inputs(StepContext<T, X> const& c, GroupState<T, X>& g,
                             State<T, X>& s) const {
    if (!s.kl.inputs.data() || g.empty()) return;
    std::vector<typename StepContext<T, X>::Scratch> keep;
    std::vector<T const*> roots;
    for (std::size_t j = 0; j < s.factors.modes.size(); ++j)
      roots.push_back(Base::root(c, g, s, j, keep));
    s.kl.compute(c, g, s.factors, roots);
  }

  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                  StepScalars<T> const& sc) const {
    Base::accumulate_with(c, g, s, sc, [&](std::size_t j) { return factor_input(g, s, j); });
  }
};

}  // namespace tessel::shampoo
