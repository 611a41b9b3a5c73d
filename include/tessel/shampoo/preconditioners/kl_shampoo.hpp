// KL-Shampoo (Distributed Shampoo's RootInvKLShampooPreconditionerConfig and
// EigendecomposedKLShampooPreconditionerConfig): Shampoo whose factor k accumulates the outer
// products of the gradient preconditioned along the block's other modes by their current inverse
// roots, G x_{i != k} R_i, instead of the gradient's (the Kullback-Leibler estimate of the factors,
// arXiv:2509.03378). Everything else is the base family's: KlShampoo<RootInv> or
// KlShampoo<Eigendecomposed>. A block with one preconditioned mode accumulates G itself.
#pragma once

#include <vector>

#include "eigendecomposed.hpp"
#include "root_inverse.hpp"

namespace tessel::shampoo {

template <class Base = RootInv>
struct KlShampoo : Base {
  static constexpr bool kl = true;

  template <class T, class X>
  struct State : Base::template State<T, X> {
    // Per mode: G preconditioned along the other modes, (count, block...) each; allocated for
    // blocks of two or more preconditioned modes.
    typename exec::Memory<X>::template Buffer<T> kl;
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    Base::init(c, g, s);
    if (s.factors.modes.size() >= 2)
      s.kl = exec::Memory<X>::template allocate<T>(g.count * g.numel *
                                                   static_cast<index_t>(s.factors.modes.size()));
  }

  // What factor j accumulates.
  template <class T, class X>
  T const* factor_input(GroupState<T, X> const& g, State<T, X> const& s, std::size_t j) const {
    if (!s.kl.data()) return g.grad.data();
    return s.kl.data() + static_cast<index_t>(j) * g.count * g.numel;
  }

  // Before the pre-check (which bounds what the factors accumulate): G x_{i != k} R_i for every
  // mode k, with the roots of the last amortized step, through the group's search buffers.
  template <class T, class X>
  void prepare_factor_inputs(StepContext<T, X> const& c, GroupState<T, X>& g,
                             State<T, X>& s) const {
    if (!s.kl.data() || g.empty()) return;
    index_t const n = g.count * g.numel;
    std::vector<typename StepContext<T, X>::Scratch> keep;
    std::vector<T const*> roots;
    for (std::size_t j = 0; j < s.factors.modes.size(); ++j)
      roots.push_back(Base::root(c, g, s, j, keep));
    T* buffers[2] = {g.search.data(), g.spare.data()};
    for (std::size_t k = 0; k < s.factors.modes.size(); ++k) {
      T const* cur = g.grad.data();
      std::size_t used = 0;
      for (std::size_t j = 0; j < s.factors.modes.size(); ++j) {
        if (j == k) continue;
        T* next = buffers[used++ % 2];
        stages::mode_product(c.executor, cur, next, roots[j], g.count, g.shape,
                             s.factors.modes[j].dim);
        cur = next;
      }
      assign(StepContext<T, X>::flat(s.kl.data() + static_cast<index_t>(k) * n, n),
             StepContext<T, X>::flat(cur, n), c.executor);
    }
  }

  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                  StepScalars<T> const& sc) const {
    Base::accumulate_with(c, g, s, sc, [&](std::size_t j) { return factor_input(g, s, j); });
  }
};

}  // namespace tessel::shampoo
