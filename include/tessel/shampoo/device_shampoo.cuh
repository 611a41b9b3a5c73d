// DeviceShampoo: the Shampoo step on a CUDA device, for float parameters in device memory, with
// the same plan, options, math and state keys as the host Shampoo<float>. Each batch group of
// equal-shaped blocks is one batched call per stage: factor updates and preconditioning are
// cuBLAS strided-batched GEMMs over the group's slots, eigendecompositions one
// cusolverDnXsyevBatched call per group and mode (retried in double), coupled Newton strided-
// batched GEMMs in double; the elementwise stages are the host-device bodies the host runs.
// Quantized (bf16/f16) factor storage and load_state_dict are host-only for now.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tessel/core/error.hpp>
#include <tessel/shampoo/matrix_functions.hpp>
#include <tessel/shampoo/options.hpp>
#include <tessel/shampoo/plan.hpp>
#include <tessel/shampoo/state.hpp>

#include "cuda/step_kernels.cuh"

namespace tessel::shampoo {

namespace detail {

inline void cuda_check(cudaError_t e, char const* what) {
  if (e != cudaSuccess)
    tessel::detail::throw_error(
        tessel::detail::sentence(what, " failed: ", cudaGetErrorString(e), "."));
}
inline void cublas_check(cublasStatus_t s, char const* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    tessel::detail::throw_error(
        tessel::detail::sentence(what, " failed with cuBLAS status ", static_cast<int>(s), "."));
}
inline void cusolver_check(cusolverStatus_t s, char const* what) {
  if (s != CUSOLVER_STATUS_SUCCESS)
    tessel::detail::throw_error(
        tessel::detail::sentence(what, " failed with cuSOLVER status ", static_cast<int>(s), "."));
}

// C = op(A) op(B) over `batch` strided column-major matrices, for float or double.
inline void gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, index_t m,
                         index_t n, index_t k, float alpha, float const* A, index_t lda,
                         long long sa, float const* B, index_t ldb, long long sb, float beta,
                         float* C, index_t ldc, long long sc, index_t batch) {
  cublas_check(cublasSgemmStridedBatched(h, ta, tb, static_cast<int>(m), static_cast<int>(n),
                                         static_cast<int>(k), &alpha, A, static_cast<int>(lda), sa,
                                         B, static_cast<int>(ldb), sb, &beta, C,
                                         static_cast<int>(ldc), sc, static_cast<int>(batch)),
               "cublasSgemmStridedBatched");
}
inline void gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, index_t m,
                         index_t n, index_t k, double alpha, double const* A, index_t lda,
                         long long sa, double const* B, index_t ldb, long long sb, double beta,
                         double* C, index_t ldc, long long sc, index_t batch) {
  cublas_check(cublasDgemmStridedBatched(h, ta, tb, static_cast<int>(m), static_cast<int>(n),
                                         static_cast<int>(k), &alpha, A, static_cast<int>(lda), sa,
                                         B, static_cast<int>(ldb), sb, &beta, C,
                                         static_cast<int>(ldc), sc, static_cast<int>(batch)),
               "cublasDgemmStridedBatched");
}

}  // namespace detail

// Owning device memory of n elements (zero-filled), with whole-buffer copies to and from the host.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n == 0) return;
    void* p = nullptr;
    detail::cuda_check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
    ptr_.reset(static_cast<T*>(p));
    detail::cuda_check(cudaMemset(p, 0, n * sizeof(T)), "cudaMemset");
  }
  T* data() const noexcept { return ptr_.get(); }
  std::size_t size() const noexcept { return n_; }
  void upload(T const* host, std::size_t n) {
    if (n)
      detail::cuda_check(cudaMemcpy(data(), host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download() const {
    std::vector<T> out(n_);
    if (n_)
      detail::cuda_check(cudaMemcpy(out.data(), data(), n_ * sizeof(T), cudaMemcpyDeviceToHost),
                         "download");
    return out;
  }

 private:
  struct Free {
    void operator()(T* p) const noexcept { cudaFree(p); }
  };
  std::unique_ptr<T, Free> ptr_;
  std::size_t n_ = 0;
};

class DeviceShampoo {
 public:
  // @pre validate(options) passes; options.factor_matrix_dtype is f32 (tessel::Error otherwise)
  template <class P, class B, class G>
  DeviceShampoo(BasicPlan<P, B, G> const& plan, Options options)
      : plan_(to_runtime(plan)), options_(std::move(options)) {
    validate(options_);
    if (options_.factor_matrix_dtype != DType::f32)
      tessel::detail::throw_error(tessel::detail::sentence(
          "DeviceShampoo keeps f32 factor matrices; factor_matrix_dtype ",
          dtype_name(options_.factor_matrix_dtype), " is host-only for now."));
    detail::cublas_check(cublasCreate(&cublas_), "cublasCreate");
    detail::cusolver_check(cusolverDnCreate(&cusolver_), "cusolverDnCreate");
    detail::cusolver_check(cusolverDnCreateParams(&params_), "cusolverDnCreateParams");
    build_groups();
  }
  DeviceShampoo(DeviceShampoo const&) = delete;
  DeviceShampoo& operator=(DeviceShampoo const&) = delete;
  ~DeviceShampoo() {
    cusolverDnDestroyParams(params_);
    cusolverDnDestroy(cusolver_);
    cublasDestroy(cublas_);
  }

  index_t step_count() const noexcept { return step_; }

  // params[i] and grads[i] point to parameter i and its gradient in device memory (contiguous,
  // row-major, the planned shape). Same semantics and errors as Shampoo<float>::step, except that
  // a finite gradient that would overflow a factor is not refused up front (no device bound
  // check yet): it is reported by the NaN/Inf factor check after the factors were accumulated,
  // before any parameter changes.
  void step(std::vector<float*> const& params, std::vector<float const*> const& grads) {
    if (auto failure = prepare_updates(params, grads, nullptr, false))
      tessel::detail::throw_error(failure->second);
  }

  // Like step(), but block b's update u (step() moves the block by -lr * u) goes to
  // updates[update_offset(b), ...) in device memory instead of into the parameters, as
  // Shampoo<float>::compute_updates does on the host. @pre updates holds update_numel() floats
  void compute_updates(std::vector<float*> const& params, std::vector<float const*> const& grads,
                       float* updates) {
    if (auto failure = prepare_updates(params, grads, updates, false))
      tessel::detail::throw_error(failure->second);
  }

  // Elements of all blocks, and where block b's update starts (blocks in plan order).
  index_t update_numel() const noexcept { return update_offsets_.back(); }
  index_t update_offset(std::size_t b) const { return update_offsets_[b]; }

  Plan const& plan() const noexcept { return plan_; }
  Options const& options() const noexcept { return options_; }

  // The state under the host optimizer's keys (copied to the host).
  StateDict state_dict() const {
    StateDict out;
    std::int64_t const step = step_;
    for (std::size_t p = 0; p < plan_.num_params(); ++p)
      out[{std::to_string(p), "step"}] = make_state_tensor<std::int64_t>({}, std::span(&step, 1));
    for (auto const& g : groups_) {
      std::vector<std::vector<float>> factors, inverse;
      for (std::size_t j = 0; j < g.dims.size(); ++j) {
        factors.push_back(g.factors[j].download());
        inverse.push_back(g.inverse[j].download());
      }
      auto filtered = g.filtered.download();
      auto momentum = g.momentum.download();
      auto grafting = g.grafting.download();
      for (index_t slot = 0; slot < g.count; ++slot) {
        BlockPlan const& bp =
            plan_.blocks[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])];
        std::string const param = std::to_string(bp.param);
        std::string const block = "block_" + std::to_string(bp.index);
        std::vector<index_t> const shape(g.shape.begin(), g.shape.end());
        for (std::size_t j = 0; j < g.dims.size(); ++j) {
          index_t const d = g.shape[g.dims[j]];
          auto const dd = static_cast<std::size_t>(d * d);
          auto const at = static_cast<std::size_t>(slot) * dd;
          out[{param, block, "shampoo", "factor_matrices", std::to_string(j)}] =
              make_state_tensor<float>({d, d}, std::span<float const>(factors[j].data() + at, dd));
          out[{param, block, "shampoo", "inv_factor_matrices", std::to_string(j)}] =
              make_state_tensor<float>({d, d}, std::span<float const>(inverse[j].data() + at, dd));
        }
        auto const at = static_cast<std::size_t>(slot * g.numel);
        auto const n = static_cast<std::size_t>(g.numel);
        if (!filtered.empty())
          out[{param, block, "filtered_grad"}] =
              make_state_tensor<float>(shape, std::span<float const>(filtered.data() + at, n));
        if (!momentum.empty())
          out[{param, block, "momentum_buffer"}] =
              make_state_tensor<float>(shape, std::span<float const>(momentum.data() + at, n));
        if (!grafting.empty())
          out[{param, block, "adagrad"}] =
              make_state_tensor<float>(shape, std::span<float const>(grafting.data() + at, n));
      }
    }
    return out;
  }

 private:
  friend class DeviceDistributedShampoo;

  // The step up to the parameter update, as Shampoo<T>::prepare_updates on the host: the first
  // failed block (plan order) and its error, or the updates applied (updates null) or written.
  std::optional<std::pair<std::size_t, std::string>> prepare_updates(
      std::vector<float*> const& params, std::vector<float const*> const& grads, float* updates,
      bool stage_momentum) {
    check_arguments(params, grads);
    ++step_;
    Scalars const s = scalars();
    for (auto& g : groups_) accumulate(g, params, grads, s);
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
      auto const& g = groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
      auto const& e = g.errors[static_cast<std::size_t>(plan_.blocks[b].slot)];
      if (!e.empty()) return std::pair{b, e};
    }
    for (auto& g : groups_) {
      if (stage_momentum && g.momentum.size()) {
        if (g.staged_momentum.size() != g.momentum.size())
          g.staged_momentum = DeviceBuffer<float>(g.momentum.size());
        detail::cuda_check(cudaMemcpy(g.staged_momentum.data(), g.momentum.data(),
                                      g.momentum.size() * sizeof(float), cudaMemcpyDeviceToDevice),
                           "staging the momentum");
      }
      update(g, params, s, updates, stage_momentum);
    }
    detail::cuda_check(cudaDeviceSynchronize(), "the Shampoo step");
    return std::nullopt;
  }

  void commit_momentum() {
    for (auto& g : groups_)
      if (g.momentum.size()) std::swap(g.momentum, g.staged_momentum);
  }

  struct Group {
    Extents shape;
    index_t count = 0, numel = 0;
    std::vector<index_t> dims;
    std::vector<double> roots;
    std::vector<DeviceBuffer<float>> factors, inverse;  // per mode: count * d * d
    DeviceBuffer<float> filtered, momentum, grafting;   // count * numel, when used
    DeviceBuffer<float> grad, direction, search, tmp, graft;
    DeviceBuffer<BlockGeometry> geometry;
    DeviceBuffer<float const*> grad_ptrs, param_ptrs_const;
    DeviceBuffer<float*> param_ptrs;
    DeviceBuffer<float> scales;
    DeviceBuffer<double> norms;
    std::vector<index_t> blocks, failures;
    std::vector<std::string> errors;
    DeviceBuffer<index_t> update_offsets;  // per slot: where compute_updates writes the update
    DeviceBuffer<float> staged_momentum;   // a distributed step's momentum until it commits
  };

  struct Scalars {
    float l2 = 0, decoupled = 0, beta1 = 0, beta3 = 0, inv_bias1 = 1, beta2 = 1, weight = 1;
    double bias_correction2 = 1.0;
    bool amortized = false, grafting_only = false;
    float graft_beta2 = 1, graft_weight = 1, graft_inv_bc2 = 1, graft_eps = 0;
  };

  void build_groups() {
    groups_.resize(plan_.num_groups());
    for (std::size_t gi = 0; gi < plan_.num_groups(); ++gi) {
      Group& g = groups_[gi];
      g.shape = plan_.groups[gi].shape;
      g.count = plan_.groups[gi].count;
      g.numel = plan_.groups[gi].numel();
      index_t const order = g.shape.rank();
      for (index_t k = 0; k < order; ++k) {
        double const e = inverse_exponent(options_.inverse_exponent_override, order, k);
        if (e == 0.0) continue;
        check_root_arguments(1.0 / e, options_.epsilon, options_.root);
        g.dims.push_back(k);
        g.roots.push_back(1.0 / e);
        index_t const d = g.shape[k];
        auto const n = static_cast<std::size_t>(g.count * d * d);
        g.factors.emplace_back(n);
        std::vector<float> eye(n, 0.0f);
        for (index_t s = 0; s < g.count; ++s)
          for (index_t i = 0; i < d; ++i)
            eye[static_cast<std::size_t>(s * d * d + i * d + i)] = 1.0f;
        g.inverse.emplace_back(n);
        g.inverse.back().upload(eye.data(), n);
      }
      auto const n = static_cast<std::size_t>(g.count * g.numel);
      if (options_.beta1 != 0.0) g.filtered = DeviceBuffer<float>(n);
      if (options_.momentum != 0.0) g.momentum = DeviceBuffer<float>(n);
      auto t = options_.grafting.type;
      if (t == GraftingType::adagrad || t == GraftingType::rmsprop || t == GraftingType::adam)
        g.grafting = DeviceBuffer<float>(n);
      g.grad = DeviceBuffer<float>(n);
      g.direction = DeviceBuffer<float>(n);
      g.search = DeviceBuffer<float>(n);
      g.tmp = DeviceBuffer<float>(n);
      g.graft = DeviceBuffer<float>(n);
      g.scales = DeviceBuffer<float>(static_cast<std::size_t>(g.count));
      g.norms = DeviceBuffer<double>(static_cast<std::size_t>(2 * g.count));
      g.blocks.assign(static_cast<std::size_t>(g.count), 0);
      g.failures.assign(static_cast<std::size_t>(g.count), 0);
      g.errors.resize(static_cast<std::size_t>(g.count));
      g.grad_ptrs = DeviceBuffer<float const*>(static_cast<std::size_t>(g.count));
      g.param_ptrs_const = DeviceBuffer<float const*>(static_cast<std::size_t>(g.count));
      g.param_ptrs = DeviceBuffer<float*>(static_cast<std::size_t>(g.count));
    }
    std::vector<std::vector<BlockGeometry>> geometry(groups_.size());
    std::vector<std::vector<index_t>> offsets(groups_.size());
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      geometry[gi].resize(static_cast<std::size_t>(groups_[gi].count));
      offsets[gi].resize(static_cast<std::size_t>(groups_[gi].count));
    }
    update_offsets_.assign(plan_.num_blocks() + 1, 0);
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
      auto const gi = static_cast<std::size_t>(plan_.blocks[b].group);
      auto const s = static_cast<std::size_t>(plan_.blocks[b].slot);
      groups_[gi].blocks[s] = static_cast<index_t>(b);
      geometry[gi][s] = block_geometry(plan_, b);
      offsets[gi][s] = update_offsets_[b];
      update_offsets_[b + 1] = update_offsets_[b] + groups_[gi].numel;
    }
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      groups_[gi].geometry = DeviceBuffer<BlockGeometry>(geometry[gi].size());
      groups_[gi].geometry.upload(geometry[gi].data(), geometry[gi].size());
      groups_[gi].update_offsets = DeviceBuffer<index_t>(offsets[gi].size());
      groups_[gi].update_offsets.upload(offsets[gi].data(), offsets[gi].size());
    }
  }

  void check_arguments(std::vector<float*> const& params, std::vector<float const*> const& grads) {
    if (params.size() != plan_.num_params() || grads.size() != plan_.num_params())
      tessel::detail::throw_error(
          tessel::detail::sentence("step got ", params.size(), " parameters and ", grads.size(),
                                   " gradients but the plan has ", plan_.num_params(), "."));
    DeviceBuffer<int> flag(1);
    for (std::size_t p = 0; p < grads.size(); ++p) {
      index_t numel = 1;
      for (index_t e : plan_.params[p].shape) numel *= e;
      if (numel == 0) continue;
      kernels::non_finite_kernel<<<dim3(kernels::grid_for(numel), 1), kernels::threads_per_block>>>(
          grads[p], numel, flag.data());
      if (flag.download()[0] != 0)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the gradient of parameter ", p, " has a NaN or Inf value; gradients must be finite."));
    }
  }

  Scalars scalars() const {
    Options const& o = options_;
    Scalars s;
    bool const l2 = o.weight_decay_type == WeightDecayType::l2;
    s.l2 = l2 ? float(o.weight_decay) : 0.0f;
    s.decoupled = l2 ? 0.0f : float(o.weight_decay);
    s.beta1 = float(o.beta1);
    s.beta3 = float(resolved_beta3(o));
    auto const t = static_cast<double>(step_);
    if (o.use_bias_correction && o.beta1 != 0.0)
      s.inv_bias1 = float(1.0 / (1.0 - resolved_beta3(o) * std::pow(o.beta1, t - 1.0)));
    s.beta2 = float(o.beta2);
    s.weight = o.beta2 == 1.0 ? 1.0f : float(1.0 - o.beta2);
    if (o.use_bias_correction && o.beta2 < 1.0) s.bias_correction2 = 1.0 - std::pow(o.beta2, t);
    index_t const start = resolved_start_step(o);
    s.amortized = (step_ % o.precondition_frequency == 0 && step_ > start) || step_ == start;
    s.grafting_only = step_ < start && o.grafting.type != GraftingType::none;
    if (o.grafting.type == GraftingType::adagrad) {
      s.graft_beta2 = 1.0f;
      s.graft_weight = 1.0f;
    } else if (o.grafting.type == GraftingType::rmsprop || o.grafting.type == GraftingType::adam) {
      s.graft_beta2 = float(o.grafting.beta2);
      s.graft_weight = float(1.0 - o.grafting.beta2);
      if (o.grafting.type == GraftingType::adam)
        s.graft_inv_bc2 = float(1.0 / (1.0 - std::pow(o.grafting.beta2, t)));
    }
    s.graft_eps = float(o.grafting.epsilon);
    return s;
  }

  // (P, d, S) around mode k.
  static void split(Extents const& shape, index_t k, index_t& P, index_t& S) {
    P = 1;
    S = 1;
    for (index_t i = 0; i < k; ++i) P *= shape[i];
    for (index_t i = k + 1; i < shape.rank(); ++i) S *= shape[i];
  }

  void accumulate(Group& g, std::vector<float*> const& params,
                  std::vector<float const*> const& grads, Scalars const& s) {
    std::fill(g.errors.begin(), g.errors.end(), std::string());
    if (g.count == 0 || g.numel == 0) return;
    std::vector<float const*> gp(static_cast<std::size_t>(g.count)), pc(gp.size());
    std::vector<float*> pp(gp.size());
    for (std::size_t slot = 0; slot < gp.size(); ++slot) {
      auto const p =
          static_cast<std::size_t>(plan_.blocks[static_cast<std::size_t>(g.blocks[slot])].param);
      gp[slot] = grads[p];
      pc[slot] = params[p];
      pp[slot] = params[p];
    }
    g.grad_ptrs.upload(gp.data(), gp.size());
    g.param_ptrs_const.upload(pc.data(), pc.size());
    g.param_ptrs.upload(pp.data(), pp.size());
    dim3 const grid(kernels::grid_for(g.numel), static_cast<unsigned>(g.count));
    kernels::gather_gradient_kernel<<<grid, kernels::threads_per_block>>>(
        g.geometry.data(), g.grad_ptrs.data(), g.param_ptrs_const.data(), s.l2, g.grad.data(),
        g.numel);
    // Factors: one strided-batched GEMM over the slots (per p for middle modes).
    for (std::size_t j = 0; j < g.dims.size(); ++j) {
      index_t P = 1, S = 1;
      split(g.shape, g.dims[j], P, S);
      index_t const d = g.shape[g.dims[j]];
      float* F = g.factors[j].data();
      if (S == 1) {
        // Row-major G (P, d) is column-major X (d, P); G^T G = X X^T.
        detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, d, d, P, s.weight, g.grad.data(), d,
                             g.numel, g.grad.data(), d, g.numel, s.beta2, F, d, d * d, g.count);
      } else {
        for (index_t p = 0; p < P; ++p) {
          // Row-major G_p (d, S) is column-major X (S, d); G_p G_p^T = X^T X.
          float const* X = g.grad.data() + p * d * S;
          detail::gemm_batched(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, d, d, S, s.weight, X, S, g.numel,
                               X, S, g.numel, p == 0 ? s.beta2 : 1.0f, F, d, d * d, g.count);
        }
      }
    }
    index_t const n = g.count * g.numel;
    if (g.grafting.size())
      kernels::accumulate_grafting_kernel<<<kernels::grid_for(n), kernels::threads_per_block>>>(
          n, g.grafting.data(), g.grad.data(), s.graft_beta2, s.graft_weight);
    if (g.filtered.size())
      kernels::filter_gradient_kernel<<<kernels::grid_for(n), kernels::threads_per_block>>>(
          n, g.filtered.data(), g.grad.data(), s.beta1, s.beta3, s.inv_bias1, g.direction.data());
    if (s.amortized) amortize(g, s);
  }

  // Inverse roots of every factor of the group: one batched decomposition (or Newton) per mode.
  void amortize(Group& g, Scalars const& s) {
    std::vector<int> failed(static_cast<std::size_t>(g.count), 0);
    for (std::size_t j = 0; j < g.dims.size(); ++j) {
      index_t const d = g.shape[g.dims[j]];
      auto const dd = static_cast<std::size_t>(d * d);
      std::size_t const total = dd * static_cast<std::size_t>(g.count);
      DeviceBuffer<int> flags(static_cast<std::size_t>(g.count));
      dim3 const grid(kernels::grid_for(d * d), static_cast<unsigned>(g.count));
      std::vector<int> status;  // per slot: 0 ok, 1 failed (keep previous), 2 non-finite result
      DeviceBuffer<float> X(total);
      if (options_.root.method == RootMethod::eigen) {
        DeviceBuffer<float> A(total);
        kernels::regularize_kernel<float, float><<<grid, kernels::threads_per_block>>>(
            g.factors[j].data(), d, 1.0 / s.bias_correction2,
            options_.root.eigen.perturb_before_computation && !options_.root.eigen.pseudo_inverse
                ? options_.epsilon
                : 0.0,
            A.data(), flags.data());
        report_non_finite_factors(g, j, flags);
        status = eigen_roots(g, d, A, X, g.roots[j]);
      } else {
        DeviceBuffer<double> A(total);
        kernels::regularize_kernel<float, double>
            <<<grid, kernels::threads_per_block>>>(g.factors[j].data(), d, 1.0 / s.bias_correction2,
                                                   options_.epsilon, A.data(), flags.data());
        report_non_finite_factors(g, j, flags);
        status = newton_roots(g, d, A, X, static_cast<index_t>(std::llround(g.roots[j])));
      }
      // Commit the successful roots slot by slot.
      for (index_t slot = 0; slot < g.count; ++slot) {
        auto const i = static_cast<std::size_t>(slot);
        if (status[i] == 0) {
          detail::cuda_check(cudaMemcpy(g.inverse[j].data() + i * dd, X.data() + i * dd,
                                        dd * sizeof(float), cudaMemcpyDeviceToDevice),
                             "copying an inverse root");
        } else if (status[i] == 2 && g.errors[i].empty()) {
          BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(g.blocks[i])];
          g.errors[i] = tessel::detail::sentence("the inverse root of factor matrix ", j,
                                                 " of parameter ", bp.param, ", block ", bp.index,
                                                 " has NaN or Inf values at step ", step_, ".");
        } else {
          failed[i] = 1;
        }
      }
    }
    for (index_t slot = 0; slot < g.count; ++slot) {
      auto const i = static_cast<std::size_t>(slot);
      g.failures[i] = failed[i] ? g.failures[i] + 1 : 0;
      if (g.failures[i] > options_.num_tolerated_failed_amortized_computations &&
          g.errors[i].empty()) {
        BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(g.blocks[i])];
        g.errors[i] = tessel::detail::sentence(
            "the inverse roots of parameter ", bp.param, ", block ", bp.index, " failed ",
            g.failures[i], " amortized computations in a row, more than the ",
            options_.num_tolerated_failed_amortized_computations, " tolerated.");
      }
    }
  }

  void report_non_finite_factors(Group& g, std::size_t j, DeviceBuffer<int> const& flags) {
    auto const f = flags.download();
    for (std::size_t i = 0; i < f.size(); ++i)
      if (f[i] && g.errors[i].empty()) {
        BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(g.blocks[i])];
        g.errors[i] =
            tessel::detail::sentence("factor matrix ", j, " of parameter ", bp.param, ", block ",
                                     bp.index, " has NaN or Inf values at step ", step_, ".");
      }
  }

  // cusolverDnXsyevBatched over the group's matrices (in S), eigenvalue map, X = Q f Q^T.
  template <class S>
  std::vector<int> eigen_batch(index_t d, index_t count, S* A, S* L, std::vector<int>& info_out) {
    cudaDataType const type = std::is_same_v<S, float> ? CUDA_R_32F : CUDA_R_64F;
    std::size_t device_bytes = 0, host_bytes = 0;
    detail::cusolver_check(cusolverDnXsyevBatched_bufferSize(
                               cusolver_, params_, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                               d, type, A, d, type, L, type, &device_bytes, &host_bytes, count),
                           "cusolverDnXsyevBatched_bufferSize");
    DeviceBuffer<unsigned char> work(device_bytes);
    std::vector<unsigned char> host_work(host_bytes);
    DeviceBuffer<int> info(static_cast<std::size_t>(count));
    detail::cusolver_check(
        cusolverDnXsyevBatched(cusolver_, params_, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                               d, type, A, d, type, L, type, work.data(), device_bytes,
                               host_work.data(), host_bytes, info.data(), count),
        "cusolverDnXsyevBatched");
    info_out = info.download();
    return info_out;
  }

  template <class S>
  void eigen_finish(index_t d, index_t count, S* Q, S* L, double root, S* out) {
    EigenvalueMap const map{root,
                            options_.epsilon,
                            options_.root.eigen.pseudo_inverse,
                            options_.root.eigen.perturb_before_computation,
                            options_.root.eigen.rank_atol,
                            options_.root.eigen.rank_rtol};
    kernels::map_eigenvalues_kernel<S>
        <<<dim3(1, static_cast<unsigned>(count)), kernels::threads_per_block>>>(L, d, map);
    DeviceBuffer<S> scaled(static_cast<std::size_t>(count * d * d));
    dim3 const grid(kernels::grid_for(d * d), static_cast<unsigned>(count));
    kernels::scale_columns_kernel<S><<<grid, kernels::threads_per_block>>>(Q, L, d, scaled.data());
    detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, d, d, d, S(1), scaled.data(), d, d * d,
                         Q, d, d * d, S(0), out, d, d * d, count);
  }

  std::vector<int> eigen_roots(Group& g, index_t d, DeviceBuffer<float>& A, DeviceBuffer<float>& X,
                               double root) {
    auto const total = A.size();
    DeviceBuffer<float> A_copy(total);
    detail::cuda_check(
        cudaMemcpy(A_copy.data(), A.data(), total * sizeof(float), cudaMemcpyDeviceToDevice),
        "copying factors");
    DeviceBuffer<float> L(static_cast<std::size_t>(g.count * d));
    std::vector<int> info;
    eigen_batch<float>(d, g.count, A.data(), L.data(), info);
    eigen_finish<float>(d, g.count, A.data(), L.data(), root, X.data());
    bool const any_failed = std::any_of(info.begin(), info.end(), [](int i) { return i != 0; });
    if (any_failed && options_.root.eigen.retry_double_precision) {
      DeviceBuffer<double> A64(total), L64(static_cast<std::size_t>(g.count * d)), X64(total);
      auto const n = static_cast<index_t>(total);
      kernels::convert_kernel<<<kernels::grid_for(n), kernels::threads_per_block>>>(
          n, A_copy.data(), A64.data());
      std::vector<int> info64;
      eigen_batch<double>(d, g.count, A64.data(), L64.data(), info64);
      eigen_finish<double>(d, g.count, A64.data(), L64.data(), root, X64.data());
      DeviceBuffer<float> X32(total);
      kernels::convert_kernel<<<kernels::grid_for(n), kernels::threads_per_block>>>(n, X64.data(),
                                                                                    X32.data());
      for (std::size_t i = 0; i < info.size(); ++i)
        if (info[i] != 0 && info64[i] == 0) {
          std::size_t const dd = static_cast<std::size_t>(d * d);
          detail::cuda_check(cudaMemcpy(X.data() + i * dd, X32.data() + i * dd, dd * sizeof(float),
                                        cudaMemcpyDeviceToDevice),
                             "copying a double-precision root");
          info[i] = 0;
        }
    }
    return statuses(g, d, X, info);
  }

  std::vector<int> newton_roots(Group& g, index_t d, DeviceBuffer<double>& A,
                                DeviceBuffer<float>& X32, index_t p) {
    auto const count = g.count;
    auto const total = A.size();
    auto const dd = d * d;
    DeviceBuffer<double> norms(static_cast<std::size_t>(count));
    kernels::squared_norms_kernel<double>
        <<<static_cast<unsigned>(count), kernels::threads_per_block>>>(A.data(), dd, norms.data());
    std::vector<double> z = norms.download();
    for (double& x : z) x = static_cast<double>(p + 1) / (2.0 * std::sqrt(x));
    DeviceBuffer<double> zd(z.size()), X(total), M(total), Mp(total), power(total), next(total);
    zd.upload(z.data(), z.size());
    dim3 const grid(kernels::grid_for(dd), static_cast<unsigned>(count));
    kernels::newton_start_kernel<double><<<grid, kernels::threads_per_block>>>(
        A.data(), zd.data(), d, static_cast<double>(p), X.data(), M.data());
    DeviceBuffer<double> errors(static_cast<std::size_t>(count));
    double const alpha = -1.0 / static_cast<double>(p);
    auto error = [&] {
      kernels::distance_to_identity_kernel<double>
          <<<static_cast<unsigned>(count), kernels::threads_per_block>>>(M.data(), d,
                                                                         errors.data());
      return errors.download();
    };
    auto e = error();
    auto done = [&] {
      for (double x : e)
        if (!(x <= options_.root.coupled_newton.tolerance) && std::isfinite(x)) return false;
      return true;
    };
    index_t it = 0;
    while (!done() && it < options_.root.coupled_newton.max_iterations) {
      ++it;
      kernels::newton_affine_kernel<double>
          <<<grid, kernels::threads_per_block>>>(M.data(), d, alpha, Mp.data());
      // Column-major products of the batch: X <- X Mp, power = Mp^p, M <- power M.
      detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, 1.0, X.data(), d, dd,
                           Mp.data(), d, dd, 0.0, next.data(), d, dd, count);
      std::swap(X, next);
      detail::cuda_check(
          cudaMemcpy(power.data(), Mp.data(), total * sizeof(double), cudaMemcpyDeviceToDevice),
          "copying M'");
      for (index_t k = 1; k < p; ++k) {
        detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, 1.0, power.data(), d, dd,
                             Mp.data(), d, dd, 0.0, next.data(), d, dd, count);
        std::swap(power, next);
      }
      detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, 1.0, power.data(), d, dd,
                           M.data(), d, dd, 0.0, next.data(), d, dd, count);
      std::swap(M, next);
      e = error();
    }
    auto const n = static_cast<index_t>(total);
    kernels::convert_kernel<<<kernels::grid_for(n), kernels::threads_per_block>>>(n, X.data(),
                                                                                  X32.data());
    std::vector<int> info(static_cast<std::size_t>(count), 0);
    for (std::size_t i = 0; i < info.size(); ++i)
      if (!(e[i] <= options_.root.coupled_newton.tolerance)) info[i] = std::isfinite(e[i]) ? 1 : -1;
    return statuses(g, d, X32, info);
  }

  // 0 ok, 1 failed (solver or convergence), 2 non-finite result.
  std::vector<int> statuses(Group& g, index_t d, DeviceBuffer<float>& X,
                            std::vector<int> const& info) {
    DeviceBuffer<int> flags(static_cast<std::size_t>(g.count));
    dim3 const grid(kernels::grid_for(d * d), static_cast<unsigned>(g.count));
    kernels::non_finite_kernel<float>
        <<<grid, kernels::threads_per_block>>>(X.data(), d * d, flags.data());
    auto const nf = flags.download();
    std::vector<int> out(info.size());
    for (std::size_t i = 0; i < info.size(); ++i)
      out[i] = info[i] < 0 || (info[i] == 0 && nf[i]) ? 2 : (info[i] != 0 ? 1 : 0);
    return out;
  }

  void update(Group& g, std::vector<float*> const&, Scalars const& s, float* updates,
              bool stage_momentum) {
    if (g.count == 0 || g.numel == 0) return;
    index_t const n = g.count * g.numel;
    float const* x = g.filtered.size() ? g.direction.data() : g.grad.data();
    bool const graft = options_.grafting.type != GraftingType::none;
    if (graft) {
      if (options_.grafting.type == GraftingType::sgd)
        detail::cuda_check(
            cudaMemcpy(g.graft.data(), x, static_cast<std::size_t>(n) * sizeof(float),
                       cudaMemcpyDeviceToDevice),
            "copying the SGD grafting direction");
      else
        kernels::grafting_direction_kernel<<<kernels::grid_for(n), kernels::threads_per_block>>>(
            n, g.grafting.data(), x, s.graft_inv_bc2, s.graft_eps, g.graft.data());
    }
    float* search = g.search.data();
    std::vector<float> scales(static_cast<std::size_t>(g.count), 1.0f);
    if (s.grafting_only) {
      detail::cuda_check(
          cudaMemcpy(search, g.graft.data(), static_cast<std::size_t>(n) * sizeof(float),
                     cudaMemcpyDeviceToDevice),
          "copying the grafting direction");
    } else {
      detail::cuda_check(cudaMemcpy(search, x, static_cast<std::size_t>(n) * sizeof(float),
                                    cudaMemcpyDeviceToDevice),
                         "copying the filtered gradient");
      float* tmp = g.tmp.data();
      for (std::size_t j = 0; j < g.dims.size(); ++j) {
        index_t P = 1, S = 1;
        split(g.shape, g.dims[j], P, S);
        index_t const d = g.shape[g.dims[j]];
        float const* Q = g.inverse[j].data();
        if (S == 1) {
          // out (P, d) = X (P, d) Q, row-major: column-major out^T = Q^T X^T.
          detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, d, P, d, 1.0f, Q, d, d * d,
                               search, d, g.numel, 0.0f, tmp, d, g.numel, g.count);
        } else {
          for (index_t p = 0; p < P; ++p)
            // out_p (d, S) = Q^T X_p, row-major: column-major out_p^T = X_p^T Q.
            detail::gemm_batched(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, S, d, d, 1.0f,
                                 search + p * d * S, S, g.numel, Q, d, d * d, 0.0f, tmp + p * d * S,
                                 S, g.numel, g.count);
        }
        std::swap(search, tmp);
      }
      if (graft) {
        kernels::squared_norms_kernel<float>
            <<<static_cast<unsigned>(g.count), kernels::threads_per_block>>>(
                g.graft.data(), g.numel, g.norms.data());
        kernels::squared_norms_kernel<float>
            <<<static_cast<unsigned>(g.count), kernels::threads_per_block>>>(
                search, g.numel, g.norms.data() + g.count);
        auto const norms = g.norms.download();
        for (index_t slot = 0; slot < g.count; ++slot) {
          auto const i = static_cast<std::size_t>(slot);
          scales[i] =
              static_cast<float>(std::sqrt(norms[i]) /
                                 (std::sqrt(norms[i + static_cast<std::size_t>(g.count)]) + 1e-16));
        }
      }
    }
    g.scales.upload(scales.data(), scales.size());
    dim3 const grid(kernels::grid_for(g.numel), static_cast<unsigned>(g.count));
    float* momentum = g.momentum.size()
                          ? (stage_momentum ? g.staged_momentum.data() : g.momentum.data())
                          : nullptr;
    if (updates)
      kernels::block_update_kernel<<<grid, kernels::threads_per_block>>>(
          g.geometry.data(), g.param_ptrs_const.data(), search, g.scales.data(), s.decoupled,
          momentum, float(options_.momentum), float(options_.dampening), options_.use_nesterov,
          updates, g.update_offsets.data(), g.numel);
    else
      kernels::update_parameter_kernel<<<grid, kernels::threads_per_block>>>(
          g.geometry.data(), g.param_ptrs.data(), search, g.scales.data(), s.decoupled, momentum,
          float(options_.momentum), float(options_.dampening), options_.use_nesterov,
          float(options_.lr), g.numel);
  }

  Plan plan_;
  Options options_;
  std::vector<Group> groups_;
  std::vector<index_t> update_offsets_;  // per plan block, and the total at the end
  index_t step_ = 0;
  cublasHandle_t cublas_ = nullptr;
  cusolverDnHandle_t cusolver_ = nullptr;
  cusolverDnParams_t params_ = nullptr;
};

}  // namespace tessel::shampoo
