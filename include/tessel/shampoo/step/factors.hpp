// The dense stages of a Shampoo step, one batched primitive per group (exec::syrk, exec::gemm)
// over the group's slots. A block seen around its mode k is (P, d, S): P the extents before k, S
// after. The factor of mode k gains w G x_k G, the contraction of the block with itself over every
// mode but k: a syrk of the (d, P) matrices when k is the last mode, else one syrk of the (d, S)
// slices per outer index (accumulated in place). Preconditioning multiplies mode k by the inverse
// root Q: (P, d) Q when k is last, Q^T (d, S) per outer index otherwise.
//
// The primitives (here and in roots/) are called unqualified, gemm(executor, ...): argument-
// dependent lookup on the executor finds exec::gemm for host executors and, in a CUDA translation
// unit that includes exec/cuda/dense.hpp, the device overload, whatever the include order.
#pragma once

#include "../../core/layout.hpp"
#include "../../exec/dense.hpp"
#include "../../exec/memory.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/math.hpp"
#include "../../expr/minmax.hpp"
#include "../../expr/reduce.hpp"
#include "../../tensor/views.hpp"
#include "../plan/plan.hpp"

namespace tessel::shampoo {

namespace detail {

// A block around mode k: P = extents before k, d = extent k, S = extents after k.
struct AroundMode {
  index_t outer = 1;
  index_t d = 0;
  index_t inner = 1;
};

constexpr AroundMode around_mode(Extents const& shape, index_t k) {
  AroundMode a{1, shape[k], 1};
  for (index_t i = 0; i < k; ++i) a.outer *= shape[i];
  for (index_t i = k + 1; i < shape.rank(); ++i) a.inner *= shape[i];
  return a;
}

}  // namespace detail

namespace stages {

// F (count, d, d) <- beta2 F + w G x_k G for the count blocks (of shape `block`) stored back to
// back at g.
template <class X, class T>
void accumulate_factor(X const& x, T* factor, T const* g, index_t count, Extents const& block,
                       index_t k, T beta2, T w) {
  using B = exec::Memory<X>;
  auto const a = detail::around_mode(block, k);
  index_t const numel = a.outer * a.d * a.inner;
  auto const f = B::view(factor, make_layout(make_shape(count, a.d, a.d)));
  if (a.inner == 1) {
    // G (P, d) per slot, seen as its transpose (d, P): column-major.
    auto const gt =
        B::view(g, make_layout(make_shape(count, a.d, a.outer), make_stride(numel, Int<1>{}, a.d)));
    syrk(x, f, gt, {.alpha = static_cast<double>(w), .beta = static_cast<double>(beta2)});
    return;
  }
  for (index_t p = 0; p < a.outer; ++p) {
    auto const slice = B::view(
        g + p * a.d * a.inner,
        make_layout(make_shape(count, a.d, a.inner), make_stride(numel, a.inner, Int<1>{})));
    syrk(x, f, slice,
         {.alpha = static_cast<double>(w), .beta = p == 0 ? static_cast<double>(beta2) : 1.0});
  }
}

// out = in x_k Q (torch.tensordot(in, Q, ([k], [0])) with the mode kept in place) for the count
// blocks at in, Q (count, d, d); with `transposed`, in x_k Q^T. out may not alias in.
template <class X, class T>
void mode_product(X const& x, T const* in, T* out, T const* q, index_t count, Extents const& block,
                  index_t k, bool transposed = false) {
  using B = exec::Memory<X>;
  auto const a = detail::around_mode(block, k);
  index_t const numel = a.outer * a.d * a.inner;
  auto const qs = B::view(q, make_layout(make_shape(count, a.d, a.d)));
  auto const run = [&](auto const& qm) {
    if (a.inner == 1) {
      auto const layout =
          make_layout(make_shape(count, a.outer, a.d), make_stride(numel, a.d, Int<1>{}));
      gemm(x, B::view(out, layout), B::view(in, layout), qm);
      return;
    }
    auto const layout =
        make_layout(make_shape(count, a.d, a.inner), make_stride(numel, a.inner, Int<1>{}));
    for (index_t p = 0; p < a.outer; ++p)
      gemm(x, B::view(out + p * a.d * a.inner, layout), permute<0, 2, 1>(qm),
           B::view(in + p * a.d * a.inner, layout));
  };
  if (transposed)
    run(permute<0, 2, 1>(qs));  // in x_k Q^T: tensordot(in, Q, ([k], [1]))
  else
    run(qs);
}

// scale[slot] = max(trace(F_slot) / bias_correction2, epsilon)^(-exponent) for the count factors
// (count, d, d) at f: trace scaling before the roots (Options::use_trace_scaling).
template <class X, class T>
void trace_scales(X const& x, T const* f, index_t count, index_t d, double bias_correction2,
                  double epsilon, double exponent, double* scale) {
  using B = exec::Memory<X>;
  auto const diagonal = B::view(f, make_layout(make_shape(count, d), make_stride(d * d, d + 1)));
  auto const out = B::view(scale, make_layout(make_shape(count)));
  assign(out, sum(cast<double>(diagonal), mode<1>), x);
  assign(out, exp(-exponent * log(max(out / bias_correction2, epsilon))), x);
}

}  // namespace stages

}  // namespace tessel::shampoo
