// Shampoo<T>: Distributed Shampoo's step on the host, for parameters of type T (float or double),
// driven by a blocking plan. Each parameter's gradient is cut into the plan's blocks; every block
// keeps one Kronecker factor per preconditioned mode, updated every step from the raw gradient
// (F_k <- beta2 F_k + w G x_k G), and its inverse root, recomputed on amortized steps from
// F_k / bias_correction2 + epsilon I. The filtered gradient (beta1 EMA, bias-corrected) is
// preconditioned mode by mode, optionally rescaled to a grafted diagonal method's norm, decayed,
// given momentum and applied. Blocks of one shape form a batch group processed by one parallel
// loop (OpenMP when enabled); state is stored per group, contiguously, slot by slot.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "matrix_functions.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "quantized.hpp"
#include "state.hpp"
#include "step_bodies.hpp"

namespace tessel::shampoo {

namespace detail {

// f(i) for i in [0, n): in parallel when OpenMP is enabled. f must not throw.
template <class F>
void parallel_for(index_t n, F const& f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1)
  for (index_t i = 0; i < n; ++i) f(i);
#else
  for (index_t i = 0; i < n; ++i) f(i);
#endif
}

// P = extents before mode k, S = extents after it: the block seen as (P, d_k, S).
inline void split_around(Extents const& shape, index_t k, index_t& P, index_t& S) {
  P = 1;
  S = 1;
  for (index_t i = 0; i < k; ++i) P *= shape[i];
  for (index_t i = k + 1; i < shape.rank(); ++i) S *= shape[i];
}

// F += w * (G contracted with itself over every mode but k), F symmetric d_k x d_k row-major.
template <class T>
void accumulate_factor(T const* G, Extents const& shape, index_t k, T w, T* F) {
  using Matrix = RowMatrix<T>;
  index_t P = 1, S = 1;
  split_around(shape, k, P, S);
  index_t const d = shape[k];
  if (d == 0 || P * S == 0) return;
  Eigen::Map<Matrix> f(F, d, d);
  // rankUpdate touches the lower triangle only (a symmetric rank-k update: half a GEMM).
  auto lower = f.template selfadjointView<Eigen::Lower>();
  if (S == 1) {
    lower.rankUpdate(Eigen::Map<Matrix const>(G, P, d).transpose(), w);
  } else {
    for (index_t p = 0; p < P; ++p)
      lower.rankUpdate(Eigen::Map<Matrix const>(G + p * d * S, d, S), w);
  }
  for (index_t i = 0; i < d; ++i)
    for (index_t j = i + 1; j < d; ++j) f(i, j) = f(j, i);
}

// out = X contracted over mode k with Q's first index (torch.tensordot(X, Q, ([k], [0])) with the
// mode kept in place).
template <class T>
void mode_product(T const* X, Extents const& shape, index_t k, T const* Q, T* out) {
  using Matrix = RowMatrix<T>;
  index_t P = 1, S = 1;
  split_around(shape, k, P, S);
  index_t const d = shape[k];
  if (d == 0 || P * S == 0) return;
  Eigen::Map<Matrix const> q(Q, d, d);
  if (S == 1) {
    Eigen::Map<Matrix>(out, P, d).noalias() = Eigen::Map<Matrix const>(X, P, d) * q;
  } else {
    for (index_t p = 0; p < P; ++p)
      Eigen::Map<Matrix>(out + p * d * S, d, S).noalias() =
          q.transpose() * Eigen::Map<Matrix const>(X + p * d * S, d, S);
  }
}

template <class T>
double squared_norm(T const* x, index_t n) {
  double s = 0.0;
  for (index_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

inline std::string block_name(index_t param, index_t block) {
  return tessel::detail::sentence("parameter ", param, ", block ", block);
}

// The shortest text that reads back as x in its own type (0.99 for the float 0.99f).
template <class T>
std::string shortest_text(T x) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
  return ec == std::errc{} ? std::string(buffer, end) : std::string("?");
}

// The largest finite value of a factor dtype (bf16: (2 - 2^-7) 2^127).
inline double largest_finite(DType d) {
  switch (d) {
    case DType::bf16:
      return 3.3895313892515355e38;
    case DType::f16:
      return 65504.0;
    case DType::f32:
      return static_cast<double>(std::numeric_limits<float>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace detail

template <class T>
class DistributedShampoo;

template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double>
class Shampoo {
 public:
  using value_type = T;

  // @pre validate(options) passes (checked; tessel::Error otherwise)
  template <class P, class B, class G>
  explicit Shampoo(BasicPlan<P, B, G> const& plan, Options options = {})
      : plan_(to_runtime(plan)), options_(std::move(options)) {
    validate(options_);
    build_groups();
  }

  Plan const& plan() const noexcept { return plan_; }
  Options const& options() const noexcept { return options_; }
  index_t step_count() const noexcept { return step_; }

  // The learning rate can follow a schedule between steps.
  void set_lr(double lr) {
    if (!(lr >= 0.0))
      tessel::detail::throw_error(detail::sentence("lr must be >= 0, got ", lr, "."));
    options_.lr = lr;
  }

  // One optimization step: params[i] holds parameter i of the plan (contiguous, row-major, in its
  // planned shape) and is updated in place; grads[i] is its gradient.
  // Everything is validated before anything is written (counts, sizes, finite gradients, and
  // gradients that would overflow a factor matrix: see check_factor_bounds). A NaN or Inf in a
  // factor matrix (a loaded state) or an inverse root, or more failed inverse-root computations in
  // a row than tolerated, throws tessel::Error naming the parameter and block after the factors of
  // this step were accumulated but before any parameter is changed.
  void step(std::span<std::span<T> const> params, std::span<std::span<T const> const> grads) {
    if (auto failure = prepare_updates(params, grads, nullptr, false, false))
      tessel::detail::throw_error(failure->message);
  }
  void step(std::vector<std::span<T>> const& params, std::vector<std::span<T const>> const& grads) {
    step(std::span<std::span<T> const>(params), std::span<std::span<T const> const>(grads));
  }

  // The step without touching the parameters: the same checks, errors and state changes as step(),
  // but block b's update u (step() moves the block's elements by -lr * u) is written, row-major in
  // the block's shape, to updates[update_offset(b), update_offset(b) + its numel). A distributed
  // step is this on each block's owner, an exchange of the updates, and apply_update everywhere.
  // @pre updates.size() == update_numel() (tessel::Error otherwise, before anything is changed)
  void compute_updates(std::span<std::span<T> const> params,
                       std::span<std::span<T const> const> grads, std::span<T> updates) {
    check_step_arguments(params, grads);
    if (updates.size() != static_cast<std::size_t>(update_numel()))
      tessel::detail::throw_error(tessel::detail::sentence(
          "compute_updates needs room for ", update_numel(), " update values (one per element of ",
          plan_.num_blocks(), " blocks), got ", updates.size(), "."));
    if (auto failure = prepare_updates(params, grads, updates.data(), false, false))
      tessel::detail::throw_error(failure->message);
  }
  void compute_updates(std::vector<std::span<T>> const& params,
                       std::vector<std::span<T const>> const& grads, std::span<T> updates) {
    compute_updates(std::span<std::span<T> const>(params),
                    std::span<std::span<T const> const>(grads), updates);
  }

  // Elements of all blocks: the size of compute_updates' output.
  index_t update_numel() const noexcept { return update_offsets_.back(); }
  // Where block b's update starts in compute_updates' output (blocks in plan order).
  index_t update_offset(std::size_t b) const { return update_offsets_[b]; }

  // ---- inspection ----

  // Modes of block b that have a Kronecker factor (exponent != 0), in order.
  std::vector<index_t> preconditioned_dims(std::size_t b) const { return group_of(b).dims; }
  // The roots 1 / exponent of those modes.
  std::vector<double> roots(std::size_t b) const { return group_of(b).roots; }
  // Factor matrix j of block b in T (dequantized), row-major d x d.
  std::vector<T> factor_matrix(std::size_t b, std::size_t j) const {
    auto const& g = group_of(b);
    index_t const d = g.shape[g.dims[j]];
    std::vector<T> all(static_cast<std::size_t>(g.factors[j].numel()));
    g.factors[j].dequantize_into(std::span<T>(all));
    auto first = all.begin() + slot_of(b) * d * d;
    return std::vector<T>(first, first + d * d);
  }
  std::vector<T> inverse_root(std::size_t b, std::size_t j) const {
    auto const& g = group_of(b);
    index_t const d = g.shape[g.dims[j]];
    auto first = g.inverse_roots[j].begin() + slot_of(b) * d * d;
    return std::vector<T>(first, first + d * d);
  }
  index_t failed_amortized_computations(std::size_t b) const {
    return group_of(b).failures[static_cast<std::size_t>(slot_of(b))];
  }

  // ---- state ----

  // The state under Distributed Shampoo's key paths: [p, "step"]; [p, "block_i", "shampoo",
  // "factor_matrices" | "inv_factor_matrices", j]; [p, "block_i", "filtered_grad" |
  // "momentum_buffer" | "adagrad"] (the last three only when in use).
  StateDict state_dict() const {
    StateDict out;
    std::int64_t const step = step_;
    for (std::size_t p = 0; p < plan_.num_params(); ++p)
      out[{std::to_string(p), "step"}] = make_state_tensor<std::int64_t>({}, std::span(&step, 1));
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) write_block_state(b, out);
    return out;
  }

  // Replaces the state by `state`, which must hold exactly the keys state_dict() would, with the
  // same dtypes and shapes, and one step count for all parameters. Everything is checked before
  // anything is copied: on error the optimizer is left exactly as it was.
  void load_state_dict(StateDict const& state) {
    index_t const step = check_state_dict(state);
    assign_state_dict(state, step);
  }

 private:
  template <class U>
  friend class DistributedShampoo;

  // The first block (in plan order) whose accumulation failed this step, and the error.
  struct BlockFailure {
    std::size_t block = 0;
    std::string message;
  };

  // load_state_dict's checks: throws unless `state` fits; returns its step.
  index_t check_state_dict(StateDict const& state) const {
    StateDict const expected = state_dict();
    for (auto const& [key, tensor] : expected) {
      auto it = state.find(key);
      if (it == state.end())
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state has no key ", state_key_text(key), "; it holds ", state.size(),
            " keys where this optimizer has ", expected.size(), "."));
      if (it->second.dtype != tensor.dtype)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's ", state_key_text(key), " has dtype ", dtype_name(it->second.dtype),
            " but this optimizer keeps ", dtype_name(tensor.dtype), "."));
      if (it->second.shape != tensor.shape)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's ", state_key_text(key), " has shape ", shape_text(it->second.shape),
            " but this optimizer keeps ", shape_text(tensor.shape), "."));
      if (it->second.data.size() != tensor.data.size())
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's ", state_key_text(key), " holds ", it->second.data.size(),
            " bytes but its shape and dtype need ", tensor.data.size(), "."));
    }
    for (auto const& [key, tensor] : state)
      if (!expected.contains(key))
        tessel::detail::throw_error(
            tessel::detail::sentence("the state has the key ", state_key_text(key),
                                     ", which this optimizer does not keep."));
    std::int64_t step = 0;
    for (std::size_t p = 0; p < plan_.num_params(); ++p) {
      auto const& t = state.at({std::to_string(p), "step"});
      std::int64_t v = 0;
      std::memcpy(&v, t.data.data(), sizeof v);
      if (v < 0)
        tessel::detail::throw_error(tessel::detail::sentence("the state's step of parameter ", p,
                                                             " is ", v, "; steps are >= 0."));
      if (p > 0 && v != step)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's step of parameter ", p, " is ", v, " but parameter 0's is ", step,
            "; all parameters share one step."));
      step = v;
    }
    return step;
  }

  // load_state_dict's copy. @pre check_state_dict(state) returned step
  void assign_state_dict(StateDict const& state, index_t step) {
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) read_block_state(b, state);
    step_ = step;
    for (auto& g : groups_) std::fill(g.failures.begin(), g.failures.end(), 0);
  }

  // step() up to the parameter update: checks the arguments, accumulates every block, and returns
  // the first failure in plan order, or else updates every block: into the parameters when
  // `updates` is null, else into updates (at update_offset). With stage_momentum the new momentum
  // goes to a staging buffer that commit_momentum() makes current, so a distributed step can drop
  // it when another rank's block failed, as step() never gets to update momentum then. Unless
  // `checked`, the arguments are checked first and a gradient that would overflow a factor is a
  // failure returned before anything changes (step count included); a distributed step runs both
  // checks itself, agreeing across its ranks, and passes true.
  std::optional<BlockFailure> prepare_updates(std::span<std::span<T> const> params,
                                              std::span<std::span<T const> const> grads, T* updates,
                                              bool stage_momentum, bool checked) {
    if (!checked) {
      check_step_arguments(params, grads);
      if (auto failure = check_factor_bounds(params, grads)) return failure;
    }
    ++step_;
    StepScalars const s = step_scalars(step_);
    for (auto& g : groups_) accumulate_group(g, params, grads, s);
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
      auto const& g = groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
      auto const& e = g.errors[static_cast<std::size_t>(plan_.blocks[b].slot)];
      if (!e.empty()) return BlockFailure{b, e};
    }
    for (auto& g : groups_) {
      if (stage_momentum && !g.momentum.empty()) g.staged_momentum = g.momentum;
      update_group(g, params, s, updates, stage_momentum);
    }
    return std::nullopt;
  }

  void commit_momentum() {
    for (auto& g : groups_)
      if (!g.momentum.empty()) g.momentum.swap(g.staged_momentum);
  }

  struct Group {
    Extents shape;
    index_t count = 0;
    index_t numel = 0;
    std::vector<index_t> dims;                  // preconditioned modes
    std::vector<double> roots;                  // per preconditioned mode
    std::vector<QuantizedTensor> factors;       // per mode: count * d * d, factor dtype
    std::vector<std::vector<T>> inverse_roots;  // per mode: count * d * d
    std::vector<T> filtered;                    // count * numel when beta1 != 0
    std::vector<T> momentum;                    // count * numel when momentum != 0
    std::vector<T> grafting;              // count * numel for AdaGrad, RMSprop and Adam grafting
    std::vector<index_t> failures;        // consecutive failed amortized computations, per slot
    std::vector<index_t> blocks;          // plan block of each slot
    std::vector<BlockGeometry> geometry;  // per slot
    std::vector<std::string> errors;      // per slot, of the current step
    std::vector<T> grad;                  // scratch: gathered gradients
    std::vector<T> direction;             // scratch: the (filtered) gradient to precondition
    std::vector<index_t> update_offset;   // per slot: where compute_updates writes its update
    std::vector<T> staged_momentum;       // a distributed step's momentum until it commits
  };

  struct StepScalars {
    T l2 = 0, decoupled = 0;
    T beta1 = 0, beta3 = 0, inv_bias1 = 1;
    T beta2 = 1, weight = 1;
    double bias_correction2 = 1.0;
    bool amortized = false;
    bool grafting_only = false;
    T graft_beta2 = 1, graft_weight = 1, graft_inv_bc2 = 1, graft_eps = 0;
  };

  Group const& group_of(std::size_t b) const {
    return groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
  }
  index_t slot_of(std::size_t b) const { return plan_.blocks[b].slot; }

  bool uses_grafting_state() const {
    auto t = options_.grafting.type;
    return t == GraftingType::adagrad || t == GraftingType::rmsprop || t == GraftingType::adam;
  }

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
        try {
          check_root_arguments(1.0 / e, options_.epsilon, options_.root);
        } catch (Error const& error) {
          tessel::detail::throw_error(detail::sentence("inverse_exponent_override gives dimension ",
                                                       k, " of ", order, "-D blocks the exponent ",
                                                       e, ", but ", error.what()));
        }
        g.dims.push_back(k);
        g.roots.push_back(1.0 / e);
        index_t const d = g.shape[k];
        g.factors.emplace_back(options_.factor_matrix_dtype, g.count * d * d);
        std::vector<T> eye(static_cast<std::size_t>(g.count * d * d), T(0));
        for (index_t s = 0; s < g.count; ++s)
          for (index_t i = 0; i < d; ++i)
            eye[static_cast<std::size_t>(s * d * d + i * d + i)] = T(1);
        g.inverse_roots.push_back(std::move(eye));
      }
      auto const n = static_cast<std::size_t>(g.count * g.numel);
      if (options_.beta1 != 0.0) g.filtered.assign(n, T(0));
      if (options_.momentum != 0.0) g.momentum.assign(n, T(0));
      if (uses_grafting_state()) g.grafting.assign(n, T(0));
      g.failures.assign(static_cast<std::size_t>(g.count), 0);
      g.blocks.assign(static_cast<std::size_t>(g.count), 0);
      g.geometry.resize(static_cast<std::size_t>(g.count));
      g.errors.resize(static_cast<std::size_t>(g.count));
      g.update_offset.assign(static_cast<std::size_t>(g.count), 0);
    }
    update_offsets_.assign(plan_.num_blocks() + 1, 0);
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
      Group& g = groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
      auto const s = static_cast<std::size_t>(plan_.blocks[b].slot);
      g.blocks[s] = static_cast<index_t>(b);
      g.geometry[s] = block_geometry(plan_, b);
      g.update_offset[s] = update_offsets_[b];
      update_offsets_[b + 1] = update_offsets_[b] + g.numel;
    }
  }

  void check_step_arguments(std::span<std::span<T> const> params,
                            std::span<std::span<T const> const> grads) const {
    auto bad = [](auto const&... pieces) {
      tessel::detail::throw_error(tessel::detail::sentence(pieces...));
    };
    if (params.size() != plan_.num_params())
      bad("step got ", params.size(), " parameters but the plan has ", plan_.num_params(), ".");
    if (grads.size() != plan_.num_params())
      bad("step got ", grads.size(), " gradients but the plan has ", plan_.num_params(), ".");
    for (std::size_t p = 0; p < params.size(); ++p) {
      auto const& shape = plan_.params[p].shape;
      index_t numel = 1;
      for (index_t e : shape) numel *= e;
      if (static_cast<index_t>(params[p].size()) != numel)
        bad("parameter ", p, " has ", params[p].size(), " elements but its planned shape ",
            to_string(shape), " has ", numel, ".");
      if (static_cast<index_t>(grads[p].size()) != numel)
        bad("the gradient of parameter ", p, " has ", grads[p].size(),
            " elements but its planned shape ", to_string(shape), " has ", numel, ".");
      for (std::size_t i = 0; i < grads[p].size(); ++i)
        if (!std::isfinite(grads[p][i]))
          bad("the gradient of parameter ", p, " has the value ", static_cast<double>(grads[p][i]),
              " at element ", i, "; gradients must be finite.");
    }
  }

  // The scalars of step number `step_number` (step_ once it is counted).
  StepScalars step_scalars(index_t step_number) const {
    Options const& o = options_;
    StepScalars s;
    bool const l2 = o.weight_decay_type == WeightDecayType::l2;
    s.l2 = l2 ? T(o.weight_decay) : T(0);
    s.decoupled = l2 ? T(0) : T(o.weight_decay);
    s.beta1 = T(o.beta1);
    s.beta3 = T(resolved_beta3(o));
    auto const step = static_cast<double>(step_number);
    if (o.use_bias_correction && o.beta1 != 0.0)
      s.inv_bias1 = T(1.0 / (1.0 - resolved_beta3(o) * std::pow(o.beta1, step - 1.0)));
    s.beta2 = T(o.beta2);
    s.weight = o.beta2 == 1.0 ? T(1) : T(1.0 - o.beta2);
    if (o.use_bias_correction && o.beta2 < 1.0) s.bias_correction2 = 1.0 - std::pow(o.beta2, step);
    index_t const start = resolved_start_step(o);
    s.amortized = (step_number % o.precondition_frequency == 0 && step_number > start) ||
                  step_number == start;
    s.grafting_only = step_number < start && o.grafting.type != GraftingType::none;
    switch (o.grafting.type) {
      case GraftingType::adagrad:
        s.graft_beta2 = T(1);
        s.graft_weight = T(1);
        break;
      case GraftingType::rmsprop:
        s.graft_beta2 = T(o.grafting.beta2);
        s.graft_weight = T(1.0 - o.grafting.beta2);
        break;
      case GraftingType::adam:
        s.graft_beta2 = T(o.grafting.beta2);
        s.graft_weight = T(1.0 - o.grafting.beta2);
        s.graft_inv_bc2 = T(1.0 / (1.0 - std::pow(o.grafting.beta2, step)));
        break;
      default:
        break;
    }
    s.graft_eps = T(o.grafting.epsilon);
    return s;
  }

  // Before phase 1 of the coming step: the first block in plan order whose factors the step could
  // overflow, or none. Nothing is written but the gradient scratch. Entry (i, j) of factor k
  // becomes beta2 F_ij + w sum g_i. g_j. (a sum over the elements of the other modes), and by
  // Cauchy-Schwarz |sum g_i. g_j.| <= sqrt(r_i r_j) <= max_i r_i with r_i = sum g_i.^2 (the
  // diagonal of G G^T), so |new F_ij| <= beta2 max|F| + w max_i r_i =: bound. The factor
  // 1 + (m + 4) eps covers the rounding in T of those sums of m + 1 terms (m = numel / d); the
  // result must fit T and the stored dtype. On amortized steps the root is computed from
  // F / bias_correction2, so bound / bias_correction2 must fit T too. A factor that already holds
  // NaN or Inf (only a loaded state can), or a NaN bound (a NaN parameter under L2 weight decay),
  // is left to the check in amortize_block.
  std::optional<BlockFailure> check_factor_bounds(std::span<std::span<T> const> params,
                                                  std::span<std::span<T const> const> grads) {
    StepScalars const s = step_scalars(step_ + 1);
    std::vector<std::string> errors(plan_.num_blocks());
    for (auto& g : groups_) {
      if (g.dims.empty() || g.numel == 0) continue;
      g.grad.resize(static_cast<std::size_t>(g.count * g.numel));
      detail::parallel_for(g.count, [&](index_t slot) {
        auto const b = static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)]);
        try {
          errors[b] = block_bound_error(g, slot, params, grads, s);
        } catch (std::exception const& e) {
          errors[b] = e.what();
        }
      });
    }
    for (std::size_t b = 0; b < errors.size(); ++b)
      if (!errors[b].empty()) return BlockFailure{b, std::move(errors[b])};
    return std::nullopt;
  }

  // check_factor_bounds for one block: its sentence, or empty.
  std::string block_bound_error(Group& g, index_t slot, std::span<std::span<T> const> params,
                                std::span<std::span<T const> const> grads,
                                StepScalars const& s) const {
    HostContext const ctx;
    auto const sl = static_cast<std::size_t>(slot);
    BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(g.blocks[sl])];
    auto const p = static_cast<std::size_t>(bp.param);
    T* grad = g.grad.data() + slot * g.numel;
    gather_gradient(ctx, g.geometry[sl], grads[p].data(), params[p].data(), s.l2, grad);
    double const largest_t = static_cast<double>(std::numeric_limits<T>::max());
    for (std::size_t j = 0; j < g.dims.size(); ++j) {
      index_t const k = g.dims[j];
      index_t const d = g.shape[k];
      index_t P = 1, S = 1;
      detail::split_around(g.shape, k, P, S);
      std::vector<double> r(static_cast<std::size_t>(d), 0.0);
      for (index_t q = 0; q < P; ++q)
        for (index_t i = 0; i < d; ++i)
          for (index_t t = 0; t < S; ++t) {
            double const v = static_cast<double>(grad[(q * d + i) * S + t]);
            r[static_cast<std::size_t>(i)] += v * v;
          }
      double const largest_r = *std::max_element(r.begin(), r.end());
      QuantizedTensor const& f = g.factors[j];
      double largest_f = 0.0;
      for (index_t e = 0; e < d * d; ++e)
        largest_f = std::max(
            largest_f, std::abs(detail::load_element(f.dtype(), f.bytes().data(),
                                                     static_cast<std::size_t>(slot * d * d + e))));
      if (!std::isfinite(largest_f)) continue;
      double const beta2 = static_cast<double>(s.beta2);
      double const weight = static_cast<double>(s.weight);
      double const bound = beta2 * largest_f + weight * largest_r;
      if (std::isnan(bound)) continue;  // a NaN parameter under L2 decay: left to amortize_block
      double const rounding =
          1.0 + (static_cast<double>(P * S) + 4.0) * std::numeric_limits<T>::epsilon();
      double const largest_stored = detail::largest_finite(f.dtype());
      bool const stored_is_narrower = largest_stored < largest_t;
      double const limit = stored_is_narrower ? largest_stored : largest_t;
      DType const limiting = stored_is_narrower ? f.dtype() : dtype_of_v<T>;
      auto const failure = [&](double reach, DType dtype, double largest, char const* how) {
        return detail::sentence("factor matrix ", j, " of ", detail::block_name(bp.param, bp.index),
                                " would overflow at step ", step_ + 1, ": ", how, reach, " (",
                                detail::shortest_text(s.beta2), " times its largest magnitude ",
                                largest_f, " plus ", detail::shortest_text(s.weight),
                                " times the gradient's largest squared norm along mode ", k, ", ",
                                largest_r, "), more than ", dtype_name(dtype), " holds (", largest,
                                "); nothing was changed.");
      };
      if (!(bound * rounding <= limit))
        return failure(bound, limiting, limit, "its entries could reach ");
      if (s.amortized && !(bound * rounding / s.bias_correction2 <= largest_t))
        return failure(bound / s.bias_correction2, dtype_of_v<T>, largest_t,
                       "divided by the bias correction, its entries could reach ");
    }
    return {};
  }

  // Phase 1 for every block of the group: gather the gradient, update factors, grafting state and
  // filtered gradient, and on amortized steps the inverse roots. Failures are recorded per slot.
  void accumulate_group(Group& g, std::span<std::span<T> const> params,
                        std::span<std::span<T const> const> grads, StepScalars const& s) {
    auto const n = static_cast<std::size_t>(g.count * g.numel);
    g.grad.resize(n);
    if (!g.filtered.empty()) g.direction.resize(n);
    std::fill(g.errors.begin(), g.errors.end(), std::string());
    QuantizedTensorList<T> factors(g.factors);
    auto scope = dequantize_scope(factors);
    detail::parallel_for(g.count, [&](index_t slot) {
      try {
        accumulate_block(g, slot, factors, params, grads, s);
      } catch (std::exception const& e) {
        g.errors[static_cast<std::size_t>(slot)] = e.what();
      }
    });
  }

  void accumulate_block(Group& g, index_t slot, QuantizedTensorList<T> const& factors,
                        std::span<std::span<T> const> params,
                        std::span<std::span<T const> const> grads, StepScalars const& s) {
    HostContext const ctx;
    index_t const b = g.blocks[static_cast<std::size_t>(slot)];
    BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(b)];
    auto const p = static_cast<std::size_t>(bp.param);
    BlockGeometry const& geo = g.geometry[static_cast<std::size_t>(slot)];
    T* grad = g.grad.data() + slot * g.numel;
    gather_gradient(ctx, geo, grads[p].data(), params[p].data(), s.l2, grad);
    for (std::size_t j = 0; j < g.dims.size(); ++j) {
      index_t const d = g.shape[g.dims[j]];
      T* F = factors.dequantized_value(j).data() + slot * d * d;
      if (s.beta2 != T(1))
        for (index_t i = 0; i < d * d; ++i) F[i] *= s.beta2;
      detail::accumulate_factor(grad, g.shape, g.dims[j], s.weight, F);
    }
    if (!g.grafting.empty())
      accumulate_grafting(ctx, g.numel, g.grafting.data() + slot * g.numel, grad, s.graft_beta2,
                          s.graft_weight);
    if (!g.filtered.empty())
      filter_gradient(ctx, g.numel, g.filtered.data() + slot * g.numel, grad, s.beta1, s.beta3,
                      s.inv_bias1, g.direction.data() + slot * g.numel);
    if (s.amortized) amortize_block(g, slot, factors, s, bp);
  }

  void amortize_block(Group& g, index_t slot, QuantizedTensorList<T> const& factors,
                      StepScalars const& s, BlockPlan const& bp) {
    std::optional<RootStatus> failure;
    for (std::size_t j = 0; j < g.dims.size(); ++j) {
      index_t const d = g.shape[g.dims[j]];
      T const* F = factors.dequantized_value(j).data() + slot * d * d;
      std::vector<T> A(static_cast<std::size_t>(d * d));
      for (index_t i = 0; i < d * d; ++i) {
        A[static_cast<std::size_t>(i)] = static_cast<T>(F[i] / s.bias_correction2);
        if (!std::isfinite(A[static_cast<std::size_t>(i)]))
          tessel::detail::throw_error(tessel::detail::sentence(
              "factor matrix ", j, " of ", detail::block_name(bp.param, bp.index),
              " has NaN or Inf values at step ", step_, "."));
      }
      std::vector<T> X(static_cast<std::size_t>(d * d));
      RootResult const r = matrix_inverse_root<T>(A.data(), d, g.roots[j], options_.epsilon,
                                                  options_.root, X.data());
      if (r.status == RootStatus::non_finite)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the inverse root of factor matrix ", j, " of ", detail::block_name(bp.param, bp.index),
            " has NaN or Inf values at step ", step_, "."));
      if (!r.ok()) {
        failure = r.status;  // keep the previous inverse root
        continue;
      }
      std::copy(X.begin(), X.end(), g.inverse_roots[j].begin() + slot * d * d);
    }
    index_t& failures = g.failures[static_cast<std::size_t>(slot)];
    failures = failure ? failures + 1 : 0;
    if (failures > options_.num_tolerated_failed_amortized_computations)
      tessel::detail::throw_error(tessel::detail::sentence(
          "the inverse roots of ", detail::block_name(bp.param, bp.index), " failed ", failures,
          " amortized computations in a row, more than the ",
          options_.num_tolerated_failed_amortized_computations, " tolerated; the last time ",
          root_status_name(*failure), "."));
  }

  // Phase 2: precondition, graft, and update the parameters.
  void update_group(Group& g, std::span<std::span<T> const> params, StepScalars const& s,
                    T* updates, bool stage_momentum) {
    detail::parallel_for(
        g.count, [&](index_t slot) { update_block(g, slot, params, s, updates, stage_momentum); });
  }

  void update_block(Group& g, index_t slot, std::span<std::span<T> const> params,
                    StepScalars const& s, T* updates, bool stage_momentum) {
    HostContext const ctx;
    index_t const b = g.blocks[static_cast<std::size_t>(slot)];
    auto const p = static_cast<std::size_t>(plan_.blocks[static_cast<std::size_t>(b)].param);
    index_t const n = g.numel;
    T const* x = (g.filtered.empty() ? g.grad.data() : g.direction.data()) + slot * n;
    std::vector<T> graft;
    if (options_.grafting.type != GraftingType::none) {
      if (options_.grafting.type == GraftingType::sgd) {
        graft.assign(x, x + n);
      } else {
        graft.resize(static_cast<std::size_t>(n));
        grafting_direction(ctx, n, g.grafting.data() + slot * n, x, s.graft_inv_bc2, s.graft_eps,
                           graft.data());
      }
    }
    std::vector<T> search(x, x + n);
    T scale = T(1);
    if (s.grafting_only) {
      search = graft;
    } else {
      std::vector<T> tmp(static_cast<std::size_t>(n));
      for (std::size_t j = 0; j < g.dims.size(); ++j) {
        index_t const d = g.shape[g.dims[j]];
        detail::mode_product(search.data(), g.shape, g.dims[j],
                             g.inverse_roots[j].data() + slot * d * d, tmp.data());
        search.swap(tmp);
      }
      if (!graft.empty()) {
        double const graft_norm = std::sqrt(detail::squared_norm(graft.data(), n));
        double const shampoo_norm = std::sqrt(detail::squared_norm(search.data(), n));
        scale = static_cast<T>(graft_norm / (shampoo_norm + 1e-16));
      }
    }
    T* momentum = g.momentum.empty()
                      ? nullptr
                      : (stage_momentum ? g.staged_momentum : g.momentum).data() + slot * n;
    BlockGeometry const& geo = g.geometry[static_cast<std::size_t>(slot)];
    if (updates)
      block_update(ctx, geo, params[p].data(), search.data(), scale, s.decoupled, momentum,
                   T(options_.momentum), T(options_.dampening), options_.use_nesterov,
                   updates + g.update_offset[static_cast<std::size_t>(slot)]);
    else
      update_parameter(ctx, geo, params[p].data(), search.data(), scale, s.decoupled, momentum,
                       T(options_.momentum), T(options_.dampening), options_.use_nesterov,
                       T(options_.lr));
  }

  // Block b's tensors under their keys: written into `out` when given, read from `in` (validated
  // by load_state_dict) when given.
  void write_block_state(std::size_t b, StateDict& out) const {
    const_cast<Shampoo*>(this)->transfer_block_state(b, &out, nullptr);
  }
  void read_block_state(std::size_t b, StateDict const& in) {
    transfer_block_state(b, nullptr, &in);
  }

  void transfer_block_state(std::size_t b, StateDict* out, StateDict const* in) {
    BlockPlan const& bp = plan_.blocks[b];
    Group& g = groups_[static_cast<std::size_t>(bp.group)];
    std::string const param = std::to_string(bp.param);
    std::string const block = "block_" + std::to_string(bp.index);
    std::vector<index_t> const block_shape(g.shape.begin(), g.shape.end());
    auto per_element = [&](StateKey key, std::vector<T>& all) {
      auto const first = static_cast<std::size_t>(bp.slot * g.numel);
      auto const n = static_cast<std::size_t>(g.numel);
      if (out)
        (*out)[key] = make_state_tensor<T>(block_shape, std::span<T const>(all.data() + first, n));
      if (in) std::memcpy(all.data() + first, in->at(key).data.data(), n * sizeof(T));
    };
    for (std::size_t j = 0; j < g.dims.size(); ++j) {
      index_t const d = g.shape[g.dims[j]];
      auto const dd = static_cast<std::size_t>(d * d);
      auto const first = static_cast<std::size_t>(bp.slot) * dd;
      std::size_t const elem = dtype_size(g.factors[j].dtype());
      auto factor = g.factors[j].bytes().subspan(first * elem, dd * elem);
      T* inverse = g.inverse_roots[j].data() + first;
      StateKey fk{param, block, "shampoo", "factor_matrices", std::to_string(j)};
      StateKey ik{param, block, "shampoo", "inv_factor_matrices", std::to_string(j)};
      if (out) {
        (*out)[fk] = StateTensor{g.factors[j].dtype(), {d, d}, {factor.begin(), factor.end()}};
        (*out)[ik] = make_state_tensor<T>({d, d}, std::span<T const>(inverse, dd));
      }
      if (in) {
        std::memcpy(factor.data(), in->at(fk).data.data(), factor.size());
        std::memcpy(inverse, in->at(ik).data.data(), dd * sizeof(T));
      }
    }
    if (!g.filtered.empty()) per_element({param, block, "filtered_grad"}, g.filtered);
    if (!g.momentum.empty()) per_element({param, block, "momentum_buffer"}, g.momentum);
    if (!g.grafting.empty()) per_element({param, block, "adagrad"}, g.grafting);
  }

  Plan plan_;
  Options options_;
  std::vector<Group> groups_;
  std::vector<index_t> update_offsets_;  // per plan block, and the total at the end
  index_t step_ = 0;
};

}  // namespace tessel::shampoo
