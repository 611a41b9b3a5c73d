// CUDA kernels of the Shampoo step: grid-stride wrappers around the host-device bodies of
// tessel/shampoo/step_bodies.hpp and root_bodies.hpp (the host runs the same bodies with
// HostContext), batched over the blocks of a batch group with blockIdx.y, plus the cooperative
// per-matrix reductions (CUB block reductions) the host computes with plain loops.
#pragma once

#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>

#include <tessel/shampoo/root_bodies.hpp>
#include <tessel/shampoo/step_bodies.hpp>

namespace tessel::shampoo::kernels {

inline constexpr int threads_per_block = 256;

// One thread of a grid-stride loop over the x dimension of the grid.
struct GridStrideContext {
  __device__ index_t first() const {
    return static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  }
  __device__ index_t stride() const { return static_cast<index_t>(gridDim.x) * blockDim.x; }
};

// Enough blocks to cover n elements, capped (grid-stride loops cover the rest).
inline unsigned grid_for(index_t n) {
  index_t const blocks = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

// ---- step bodies, slot = blockIdx.y ----

template <class T>
__global__ void gather_gradient_kernel(BlockGeometry const* geometry, T const* const* grads,
                                       T const* const* params, T l2, T* out, index_t numel) {
  index_t const slot = blockIdx.y;
  gather_gradient(GridStrideContext{}, geometry[slot], grads[slot], params[slot], l2,
                  out + slot * numel);
}

template <class T>
__global__ void filter_gradient_kernel(index_t n, T* state, T const* grad, T beta1, T beta3,
                                       T inv_bias_correction1, T* out) {
  filter_gradient(GridStrideContext{}, n, state, grad, beta1, beta3, inv_bias_correction1, out);
}

template <class T>
__global__ void accumulate_grafting_kernel(index_t n, T* a, T const* grad, T beta2, T weight) {
  accumulate_grafting(GridStrideContext{}, n, a, grad, beta2, weight);
}

template <class T>
__global__ void grafting_direction_kernel(index_t n, T const* a, T const* grad,
                                          T inv_bias_correction2, T epsilon, T* out) {
  grafting_direction(GridStrideContext{}, n, a, grad, inv_bias_correction2, epsilon, out);
}

template <class T>
__global__ void update_parameter_kernel(BlockGeometry const* geometry, T* const* params,
                                        T const* direction, T const* scales, T weight_decay,
                                        T* momentum, T mu, T dampening, bool nesterov, T lr,
                                        index_t numel) {
  index_t const slot = blockIdx.y;
  update_parameter(GridStrideContext{}, geometry[slot], params[slot], direction + slot * numel,
                   scales[slot], weight_decay, momentum ? momentum + slot * numel : nullptr, mu,
                   dampening, nesterov, lr);
}

// update_parameter in two halves, for a distributed step: the owner writes each block's update at
// offsets[slot] of `updates`, then every rank applies the gathered updates.
template <class T>
__global__ void block_update_kernel(BlockGeometry const* geometry, T const* const* params,
                                    T const* direction, T const* scales, T weight_decay,
                                    T* momentum, T mu, T dampening, bool nesterov, T* updates,
                                    index_t const* offsets, index_t numel) {
  index_t const slot = blockIdx.y;
  block_update(GridStrideContext{}, geometry[slot], params[slot], direction + slot * numel,
               scales[slot], weight_decay, momentum ? momentum + slot * numel : nullptr, mu,
               dampening, nesterov, updates + offsets[slot]);
}

template <class T>
__global__ void apply_update_kernel(BlockGeometry const* geometry, T* const* params,
                                    T const* updates, index_t const* offsets, T lr) {
  index_t const slot = blockIdx.y;
  apply_update(GridStrideContext{}, geometry[slot], params[slot], updates + offsets[slot], lr);
}

// out = in rounded to C (to nearest even, through float); *first_bad = the lowest index of a
// finite value that C cannot hold (rounds to Inf), left as it is when there is none.
template <class T, class C>
__global__ void pack_kernel(T const* in, index_t n, C* out, unsigned long long* first_bad) {
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < n; i += ctx.stride()) {
    C const v(static_cast<float>(in[i]));
    out[i] = v;
    if (isfinite(static_cast<double>(in[i])) && !isfinite(static_cast<float>(v)))
      atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

template <class C, class T>
__global__ void unpack_kernel(C const* in, index_t n, T* out) {
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < n; i += ctx.stride())
    out[i] = static_cast<T>(static_cast<float>(in[i]));
}

// ---- element maps the host writes as loops ----

// out = F / bias_correction2 + epsilon I (in S), and flags[matrix] = 1 if F holds NaN or Inf.
template <class T, class S>
__global__ void regularize_kernel(T const* F, index_t d, double inv_bias_correction2,
                                  double epsilon, S* out, int* flags) {
  index_t const m = blockIdx.y;
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < d * d; i += ctx.stride()) {
    T const f = F[m * d * d + i];
    if (!isfinite(static_cast<double>(f))) flags[m] = 1;
    S x = static_cast<S>(f * static_cast<T>(inv_bias_correction2));
    if (i / d == i % d) x += static_cast<S>(epsilon);
    out[m * d * d + i] = x;
  }
}

// Eigenvalues (ascending, as cuSOLVER returns them) -> inverse-root factors, per matrix.
template <class S>
__global__ void map_eigenvalues_kernel(S* lambda, index_t d, EigenvalueMap map) {
  index_t const m = blockIdx.y;
  S* L = lambda + m * d;
  map_eigenvalues(GridStrideContext{}, d, L, L[0], L[d - 1], map);
}

// Q (column-major eigenvectors) scaled column by column: Qs[:, j] = Q[:, j] * f[j].
template <class S>
__global__ void scale_columns_kernel(S const* Q, S const* f, index_t d, S* out) {
  index_t const m = blockIdx.y;
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < d * d; i += ctx.stride())
    out[m * d * d + i] = Q[m * d * d + i] * f[m * d + i / d];
}

template <class S>
__global__ void newton_affine_kernel(S const* M, index_t d, S alpha, S* out) {
  index_t const m = blockIdx.y;
  newton_affine(GridStrideContext{}, d, M + m * d * d, alpha, out + m * d * d);
}

// X = x I and M = x A, per matrix scalar x[m].
template <class S>
__global__ void newton_start_kernel(S const* A, S const* z, index_t d, double root, S* X, S* M) {
  index_t const m = blockIdx.y;
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < d * d; i += ctx.stride()) {
    X[m * d * d + i] = i / d == i % d ? pow(z[m], S(1) / static_cast<S>(root)) : S(0);
    M[m * d * d + i] = z[m] * A[m * d * d + i];
  }
}

template <class S, class T>
__global__ void convert_kernel(index_t n, S const* in, T* out) {
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < n; i += ctx.stride()) out[i] = static_cast<T>(in[i]);
}

// ---- cooperative per-matrix reductions: one thread block per matrix (blockIdx.x) ----

// out[m] = sum of squares of x[m * n .. (m + 1) * n).
template <class T>
__global__ void squared_norms_kernel(T const* x, index_t n, double* out) {
  using Reduce = cub::BlockReduce<double, threads_per_block>;
  __shared__ typename Reduce::TempStorage storage;
  index_t const m = blockIdx.x;
  double s = 0.0;
  for (index_t i = threadIdx.x; i < n; i += blockDim.x) {
    double const v = static_cast<double>(x[m * n + i]);
    s += v * v;
  }
  double const total = Reduce(storage).Sum(s);
  if (threadIdx.x == 0) out[m] = total;
}

struct MaxOp {
  __device__ double operator()(double a, double b) const { return a > b ? a : b; }
};

// out[m] = max |M - I| over matrix m; NaN if any entry is NaN.
template <class S>
__global__ void distance_to_identity_kernel(S const* M, index_t d, double* out) {
  using Reduce = cub::BlockReduce<double, threads_per_block>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ int nan;
  if (threadIdx.x == 0) nan = 0;
  __syncthreads();
  index_t const m = blockIdx.x;
  double e = 0.0;
  for (index_t i = threadIdx.x; i < d * d; i += blockDim.x) {
    double const x = static_cast<double>(distance_to_identity(M + m * d * d, d, i));
    if (isnan(x)) nan = 1;
    e = x > e ? x : e;
  }
  double const largest = Reduce(storage).Reduce(e, MaxOp{});
  __syncthreads();
  if (threadIdx.x == 0) out[m] = nan ? static_cast<double>(NAN) : largest;
}

// flags[m] = 1 when matrix m (n values) holds NaN or Inf.
template <class S>
__global__ void non_finite_kernel(S const* x, index_t n, int* flags) {
  index_t const m = blockIdx.y;
  GridStrideContext ctx;
  for (index_t i = ctx.first(); i < n; i += ctx.stride())
    if (!isfinite(static_cast<double>(x[m * n + i]))) flags[m] = 1;
}

}  // namespace tessel::shampoo::kernels
