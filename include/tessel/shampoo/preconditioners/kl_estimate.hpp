// The Kullback-Leibler estimate of the Kronecker factors (arXiv:2509.03378), shared by KL-Shampoo
// (kl_shampoo.hpp) and KL-SOAP (kl_soap.hpp): factor k accumulates the outer products of
// X_k = G x_{i != k} P_i, the block's gradient preconditioned along its other modes by roots P_i
// that the family gives (KL-Shampoo its inverse roots, KL-SOAP roots from its eigenbasis), instead
// of G's. A block with one preconditioned mode accumulates G itself. The X_k are formed before the
// step's overflow pre-check, which then bounds what the factors will accumulate.
#pragma once

#include <cstddef>
#include <vector>

#include "../../exec/memory.hpp"
#include "../step/factors.hpp"
#include "kronecker_factors.hpp"

namespace tessel::shampoo {

template <class T, class X>
struct KlEstimate {
  using Ctx = StepContext<T, X>;
  // Per mode: X_k, (count, block...); allocated for blocks of two or more preconditioned modes.
  typename exec::Memory<X>::template Buffer<T> inputs;

  void allocate(GroupState<T, X> const& g, KroneckerFactors<T, X> const& kf) {
    if (kf.modes.size() >= 2)
      inputs = exec::Memory<X>::template allocate<T>(g.count * g.numel *
                                                     static_cast<index_t>(kf.modes.size()));
  }

  // Where factor j's input is.
  T const* input(GroupState<T, X> const& g, std::size_t j) const {
    if (!inputs.data()) return g.grad.data();
    return inputs.data() + static_cast<index_t>(j) * g.count * g.numel;
  }

  // X_k for every mode k, roots[i] the (count, d_i, d_i) root of mode i, through g's two search
  // buffers.
  void compute(Ctx const& c, GroupState<T, X>& g, KroneckerFactors<T, X> const& kf,
               std::vector<T const*> const& roots) {
    if (!inputs.data() || g.empty()) return;
    index_t const n = g.count * g.numel;
    T* buffers[2] = {g.search.data(), g.spare.data()};
    for (std::size_t k = 0; k < kf.modes.size(); ++k) {
      T const* cur = g.grad.data();
      std::size_t used = 0;
      for (std::size_t j = 0; j < kf.modes.size(); ++j) {
        if (j == k) continue;
        T* next = buffers[used++ % 2];
        stages::mode_product(c.executor, cur, next, roots[j], g.count, g.shape, kf.modes[j].dim);
        cur = next;
      }
      assign(Ctx::flat(inputs.data() + static_cast<index_t>(k) * n, n), Ctx::flat(cur, n),
             c.executor);
    }
  }
};

}  // namespace tessel::shampoo
