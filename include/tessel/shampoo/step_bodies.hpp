// The elementwise parts of a Shampoo step, written once as TESSEL_HOST_DEVICE bodies over an
// execution context: the host calls them with HostContext (one sequential visitor), the CUDA
// kernels in shampoo/cuda/step_kernels.cuh with a grid-stride context. Each body works on
// one block: gathering its gradient out of the parameter, the filtered gradient, the diagonal
// grafting state and direction, and the final update (weight decay, momentum, learning rate)
// written back into the parameter.
#pragma once

#include <cmath>

#include "../core/config.hpp"
#include "context.hpp"
#include "plan.hpp"

namespace tessel::shampoo {

// Where a block's elements live in its parameter: the parameter's merged extents are a row-major
// view of its contiguous storage; the block is the box [offset, offset + shape).
struct BlockGeometry {
  index_t rank = 0;
  index_t numel = 1;
  index_t shape[max_param_rank]{};
  index_t offset[max_param_rank]{};
  index_t stride[max_param_rank]{};  // of the merged parameter

  // Offset in the parameter of the block's i-th element (row-major within the block).
  TESSEL_HOST_DEVICE constexpr index_t param_offset(index_t i) const {
    index_t off = 0;
    for (index_t k = rank - 1; k >= 0; --k) {
      off += (offset[k] + i % shape[k]) * stride[k];
      i /= shape[k];
    }
    return off;
  }
};

template <class P, class B, class G>
constexpr BlockGeometry block_geometry(BasicPlan<P, B, G> const& plan, std::size_t b) {
  BlockGeometry g{};
  auto const& merged = plan.params[static_cast<std::size_t>(plan.blocks[b].param)].merged_shape;
  Extents const off = plan.block_offset(b);
  Extents const& shape = plan.block_shape(b);
  g.rank = merged.rank();
  index_t stride = 1;
  for (index_t k = g.rank - 1; k >= 0; --k) {
    g.shape[k] = shape[k];
    g.offset[k] = off[k];
    g.stride[k] = stride;
    stride *= merged[k];
    g.numel *= shape[k];
  }
  return g;
}

// out = grad + l2 * param over the block (l2 = 0 unless weight decay is L2).
template <class Ctx, class T>
TESSEL_HOST_DEVICE void gather_gradient(Ctx const& ctx, BlockGeometry const& g, T const* grad,
                                        T const* param, T l2, T* out) {
  for (index_t i = ctx.first(); i < g.numel; i += ctx.stride()) {
    index_t const o = g.param_offset(i);
    out[i] = l2 != T(0) ? grad[o] + l2 * param[o] : grad[o];
  }
}

// state <- lerp(state, grad, 1 - beta1); out = (beta3 == beta1 ? new state : lerp(old state, grad,
// 1 - beta3)) * inv_bias_correction1.
template <class Ctx, class T>
TESSEL_HOST_DEVICE void filter_gradient(Ctx const& ctx, index_t n, T* state, T const* grad, T beta1,
                                        T beta3, T inv_bias_correction1, T* out) {
  for (index_t i = ctx.first(); i < n; i += ctx.stride()) {
    T const old = state[i];
    T const updated = old + (T(1) - beta1) * (grad[i] - old);
    state[i] = updated;
    T const filtered = beta3 == beta1 ? updated : old + (T(1) - beta3) * (grad[i] - old);
    out[i] = filtered * inv_bias_correction1;
  }
}

// Diagonal second moment of the grafting method: a <- beta2 * a + weight * g^2.
template <class Ctx, class T>
TESSEL_HOST_DEVICE void accumulate_grafting(Ctx const& ctx, index_t n, T* a, T const* grad, T beta2,
                                            T weight) {
  for (index_t i = ctx.first(); i < n; i += ctx.stride())
    a[i] = (beta2 != T(1) ? beta2 * a[i] : a[i]) + weight * grad[i] * grad[i];
}

// The grafting direction: g / (sqrt(a / bias_correction2) + epsilon).
template <class Ctx, class T>
TESSEL_HOST_DEVICE void grafting_direction(Ctx const& ctx, index_t n, T const* a, T const* grad,
                                           T inv_bias_correction2, T epsilon, T* out) {
  for (index_t i = ctx.first(); i < n; i += ctx.stride()) {
    using std::sqrt;
    out[i] = grad[i] / (sqrt(a[i] * inv_bias_correction2) + epsilon);
  }
}

// One element of a block's update u (the parameter then moves by -lr * u): u = scale * direction;
// u += weight_decay * param (decoupled); momentum m <- mu m + (1 - dampening) u and u <- m, or
// u <- (1 - dampening) u + mu m with Nesterov. `momentum` is the element's buffer or nullptr.
template <class T>
TESSEL_HOST_DEVICE T update_element(T direction, T scale, T weight_decay, T param, T* momentum,
                                    T mu, T dampening, bool nesterov) {
  T p = direction * scale;
  if (weight_decay != T(0)) p += weight_decay * param;
  if (momentum != nullptr) {
    T const m = mu * *momentum + (T(1) - dampening) * p;
    *momentum = m;
    p = nesterov ? (T(1) - dampening) * p + mu * m : m;
  }
  return p;
}

// The rest of the step for one block, element by element: the update (update_element) applied as
// w <- w - lr * u in the parameter.
template <class Ctx, class T>
TESSEL_HOST_DEVICE void update_parameter(Ctx const& ctx, BlockGeometry const& g, T* param,
                                         T const* direction, T scale, T weight_decay, T* momentum,
                                         T mu, T dampening, bool nesterov, T lr) {
  for (index_t i = ctx.first(); i < g.numel; i += ctx.stride()) {
    index_t const o = g.param_offset(i);
    T const u =
        update_element(direction[i], scale, weight_decay, param[o],
                       momentum != nullptr ? momentum + i : nullptr, mu, dampening, nesterov);
    param[o] -= lr * u;
  }
}

// update_parameter split in two, for a distributed step: the owner of a block computes its update
// into `out` (block order, row-major) without touching the parameter...
template <class Ctx, class T>
TESSEL_HOST_DEVICE void block_update(Ctx const& ctx, BlockGeometry const& g, T const* param,
                                     T const* direction, T scale, T weight_decay, T* momentum, T mu,
                                     T dampening, bool nesterov, T* out) {
  for (index_t i = ctx.first(); i < g.numel; i += ctx.stride())
    out[i] = update_element(direction[i], scale, weight_decay, param[g.param_offset(i)],
                            momentum != nullptr ? momentum + i : nullptr, mu, dampening, nesterov);
}

// ...and every rank applies the gathered update: w <- w - lr * u, the same expression as
// update_parameter's, so the parameters come out bit for bit the same.
template <class Ctx, class T>
TESSEL_HOST_DEVICE void apply_update(Ctx const& ctx, BlockGeometry const& g, T* param,
                                     T const* update, T lr) {
  for (index_t i = ctx.first(); i < g.numel; i += ctx.stride())
    param[g.param_offset(i)] -= lr * update[i];
}

}  // namespace tessel::shampoo
