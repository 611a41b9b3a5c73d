// Shampoo<T, Plan, Executor>: Distributed Shampoo's step for parameters of type T (float or
// double), driven by a blocking plan, run by an executor. Each parameter's gradient is cut into the
// plan's blocks; every block keeps one Kronecker factor per preconditioned mode, updated every
// step from the raw gradient (F_k <- beta2 F_k + w G x_k G), and its inverse root, recomputed on
// amortized steps from F_k / bias_correction2 + epsilon I. The filtered gradient (beta1 EMA,
// bias-corrected) is preconditioned mode by mode, optionally rescaled to a grafted diagonal
// method's norm, decayed, given momentum and applied. Options::preconditioner chooses the
// direction (Shampoo; eigendecomposed Shampoo, which caches each factor's eigendecomposition and
// forms the root every step; SOAP; spectral and sign descent), Options::kl_shampoo KL-Shampoo's
// factor update (F_k from G preconditioned along the other modes).
//
// One step, every backend: the state lives in tensors of the executor's memory (exec::Memory<X>,
// exec/memory.hpp), the elementwise stages are tessel expressions assigned through the executor
// (step/stages.hpp), one pass per stage and segment of equal-shaped blocks (plan/segments.hpp), and
// the dense stages are one batched exec::syrk / exec::gemm / exec::eigh per group
// (step/factors.hpp, roots/). Host executors (exec::Auto, the default; OpenMP; Serial) run it on
// host memory; exec::Cuda runs the same code on the device (<tessel/shampoo/device_shampoo.cuh>,
// where DeviceShampoo names it). Plan is RuntimePlan (a plan value given to the constructor) or
// static_plan<plan> (the plan as a type: block shapes and segment layouts are Int<> shapes in the
// passes that read and write the parameters' blocks, plan/static_plan.hpp). Everything that does
// not depend on the plan's type is ShampooBase<T, Executor>, shared by all plans.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/warning.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/memory.hpp"
#include "../expr/compare.hpp"
#include "../expr/where.hpp"
#include "options.hpp"
#include "plan/geometry.hpp"
#include "plan/plan.hpp"
#include "plan/segments.hpp"
#include "plan/static_plan.hpp"
#include "roots/inverse_root.hpp"
#include "roots/qr_iteration.hpp"
#include "state/group_state.hpp"
#include "state/quantized.hpp"
#include "state/state_dict.hpp"
#include "step/bounds.hpp"
#include "step/factors.hpp"
#include "step/grafting.hpp"
#include "step/orthogonalize.hpp"
#include "step/scalars.hpp"
#include "step/stages.hpp"

namespace tessel::shampoo {

template <class T, class X>
requires exec::Executor<X>
class DistributedShampoo;

template <class T, class X>
requires exec::Executor<X>
class GroupedShampoo;

// The index each parameter of a plan has in the caller's numbering, used in error sentences and
// state-dict keys (parameter groups number their parameters across groups: param_groups.hpp).
// Empty: parameter p is p.
struct ParamKeys {
  std::vector<index_t> keys;
};

// The part of Shampoo<T, P, X> that does not depend on the plan's type: the state, the dense
// stages (factors, inverse roots, grafting), the state dictionaries and the step's entry points.
// Only the passes over segments of equal blocks (gathering the gradient, applying the update) see
// the plan's block shapes; Shampoo<T, P, X> defines them (gather_segments, update_segments). So
// every plan, run-time or static, shares one instantiation of the rest, and
// tessel::shampoo_prebuilt compiles it once for float and double on the default executor.
template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> class ShampooBase {
 protected:
  using B = exec::Memory<X>;
  using Group = GroupState<T, X>;

 public:
  using value_type = T;
  using executor_type = X;

  ShampooBase(ShampooBase const&) = delete;
  ShampooBase& operator=(ShampooBase const&) = delete;

  Plan const& plan() const noexcept { return plan_; }
  Options const& options() const noexcept { return options_; }
  X const& executor() const noexcept { return executor_; }
  index_t step_count() const noexcept { return step_; }

  // The learning rate can follow a schedule between steps.
  void set_lr(double lr) {
    if (!(lr >= 0.0))
      tessel::detail::throw_error(detail::sentence("lr must be >= 0, got ", lr, "."));
    options_.lr = lr;
  }

  // Iterate averaging (Options::averaging): eval moves the parameters to the averaged sequence x =
  // y + (1 - 1 / mu_y) (z - y) for evaluation, train moves them back to y (Distributed Shampoo's
  // eval() and train()); step() is refused in eval mode. Without iterate averaging, or in the mode
  // asked for already, nothing changes. params as for step().
  void eval(std::vector<std::span<T>> const& params) { switch_mode(pointers_of(params), false); }
  void train(std::vector<std::span<T>> const& params) { switch_mode(pointers_of(params), true); }
  void eval(std::vector<T*> const& params) { switch_mode(params, false); }
  void train(std::vector<T*> const& params) { switch_mode(params, true); }
  bool training() const noexcept { return training_; }

  // One optimization step: params[i] holds parameter i of the plan (contiguous, row-major, in its
  // planned shape, in the executor's memory) and is updated in place; grads[i] is its gradient.
  // Everything is validated before anything is written (counts, sizes, finite gradients, and
  // gradients that would overflow a factor matrix: step/bounds.hpp). A NaN or Inf in a factor
  // matrix (a loaded state) or an inverse root, or more failed inverse-root computations in a row
  // than tolerated, throws tessel::Error naming the parameter and block after the factors of this
  // step were accumulated but before any parameter is changed.
  // A parameter without a gradient this step (an empty span, a null pointer: PyTorch's `grad is
  // None`) is skipped as Distributed Shampoo skips it: its blocks' state and values stay as they
  // were, while the step count (bias correction, precondition_frequency) advances for all.
  void step(std::span<std::span<T> const> params, std::span<std::span<T const> const> grads);
  void step(std::vector<std::span<T>> const& params, std::vector<std::span<T const>> const& grads) {
    step(std::span<std::span<T> const>(params), std::span<std::span<T const> const>(grads));
  }
  // The same with bare pointers (the device's spelling): sizes are the plan's.
  // @pre params[i] holds the planned number of elements, and grads[i] too or is null (skipped)
  void step(std::vector<T*> const& params, std::vector<T const*> const& grads);
  // step({w1, w2}, {g1, g2}) with pointers: without this, two pointers would also read as the
  // iterator pair of one span.
  void step(std::initializer_list<T*> params, std::initializer_list<T const*> grads) {
    step(std::vector<T*>(params), std::vector<T const*>(grads));
  }

  // The step without touching the parameters: the same checks, errors and state changes as step(),
  // but block b's update u (step() moves the block's elements by -lr * u) is written, row-major in
  // the block's shape, to updates[update_offset(b), update_offset(b) + its numel). A distributed
  // step is this on each block's owner, an exchange of the updates, and apply_update everywhere.
  // @pre updates.size() == update_numel() (tessel::Error otherwise, before anything is changed)
  // Every parameter needs a gradient here (the exchange of a distributed step does not skip).
  void compute_updates(std::span<std::span<T> const> params,
                       std::span<std::span<T const> const> grads, std::span<T> updates);
  void compute_updates(std::vector<std::span<T>> const& params,
                       std::vector<std::span<T const>> const& grads, std::span<T> updates) {
    compute_updates(std::span<std::span<T> const>(params),
                    std::span<std::span<T const> const>(grads), updates);
  }
  // @pre as step(pointers); updates holds update_numel() elements in the executor's memory
  void compute_updates(std::vector<T*> const& params, std::vector<T const*> const& grads,
                       T* updates);

  // Elements of all blocks: the size of compute_updates' output.
  index_t update_numel() const noexcept { return update_offsets_.back(); }
  // Where block b's update starts in compute_updates' output (blocks in plan order).
  index_t update_offset(std::size_t b) const { return update_offsets_[b]; }

  // ---- inspection (copies to the host) ----

  // Modes of block b that have a Kronecker factor (exponent != 0), in order.
  std::vector<index_t> preconditioned_dims(std::size_t b) const {
    std::vector<index_t> out;
    for (auto const& m : group_of(b).modes) out.push_back(m.dim);
    return out;
  }
  // The roots 1 / exponent of those modes.
  std::vector<double> roots(std::size_t b) const {
    std::vector<double> out;
    for (auto const& m : group_of(b).modes) out.push_back(m.root);
    return out;
  }
  // Factor matrix j of block b in T (dequantized, unpacked), row-major d x d.
  std::vector<T> factor_matrix(std::size_t b, std::size_t j) const {
    auto const& m = group_of(b).modes[j];
    auto const dd = static_cast<std::size_t>(m.d * m.d);
    std::size_t const size = dtype_size(m.dtype);
    std::vector<std::byte> bytes(dd * size);
    index_t const stored = m.factor_numel() * static_cast<index_t>(size);
    B::to_host(executor_, m.factors.data() + slot_of(b) * stored, stored, bytes.data());
    B::wait(executor_);
    if (m.packed) {
      std::vector<std::byte> const packed(bytes.begin(), bytes.begin() + stored);
      unpack_symmetric_bytes(packed.data(), bytes.data(), m.d, size);
    }
    std::vector<T> out(dd);
    for (std::size_t i = 0; i < dd; ++i)
      out[i] = static_cast<T>(detail::load_element(m.dtype, bytes.data(), i));
    return out;
  }
  std::vector<T> inverse_root(std::size_t b, std::size_t j) const {
    auto const& m = group_of(b).modes[j];
    std::vector<T> out(static_cast<std::size_t>(m.d * m.d));
    B::to_host(executor_, m.inverse_roots.data() + slot_of(b) * m.d * m.d, m.d * m.d, out.data());
    B::wait(executor_);
    return out;
  }
  index_t failed_amortized_computations(std::size_t b) const {
    return group_of(b).failures[static_cast<std::size_t>(slot_of(b))];
  }

  // ---- state ----

  // The state under Distributed Shampoo's key paths: [p, "step"]; [p, "block_i", "shampoo",
  // "factor_matrices" | "inv_factor_matrices", j] (both packed, (d (d + 1) / 2,), with
  // Options::use_symmetric_packing, as Distributed Shampoo saves them) (eigenvalue-corrected:
  // "factor_matrices_eigenvectors" and [.., "corrected_eigenvalues"]; eigendecomposed:
  // "factor_matrices_eigenvectors" and "factor_matrices_eigenvalues"); [p, "block_i",
  // "filtered_grad" | "momentum_buffer" | "adagrad" | "weight_buffer"] and [p, "lr_sum" |
  // "train_mode"] (only when in use). The same keys, dtypes and bytes on every executor: a device
  // run saves, and resumes from, a host run's state.
  StateDict state_dict() const;

  // Replaces the state by `state`, which must hold exactly the keys state_dict() would, with the
  // same dtypes and shapes, and one step count for all parameters; a factor matrix may also come
  // in the other layout, full (d, d) or packed (d (d + 1) / 2,), whatever
  // Options::use_symmetric_packing says (packing keeps the upper triangle). Everything is checked
  // before anything is copied: on error the optimizer is left exactly as it was.
  void load_state_dict(StateDict const& state);

 protected:
  template <class U, class Y>
  requires exec::Executor<Y>
  friend class DistributedShampoo;
  template <class U, class Y>
  requires exec::Executor<Y>
  friend class GroupedShampoo;

  // @pre validate(options) passes (checked; tessel::Error otherwise)
  ShampooBase(Plan plan, Options options, X executor, ParamKeys keys = {})
      : plan_(std::move(plan)),
        options_(std::move(options)),
        executor_(executor),
        keys_(std::move(keys.keys)) {
    if (!keys_.empty() && keys_.size() != plan_.num_params())
      tessel::detail::throw_error(tessel::detail::sentence("ParamKeys names ", keys_.size(),
                                                           " parameters but the plan has ",
                                                           plan_.num_params(), "."));
    build();
  }
  ShampooBase(ShampooBase&&) noexcept = default;
  ShampooBase& operator=(ShampooBase&&) noexcept = default;
  ~ShampooBase() = default;

  // The passes over segments, defined by Shampoo<T, P, X> for its plan. gather_segments: every
  // block's gradient (plus s.l2 times its parameter) into its group's slots. update_segments: every
  // block of group gi moved along direction[gi] (skipped where null), into the parameters, or with
  // into_updates into out[gi] (compute_updates); stage_momentum as in prepare_updates.
  virtual void gather_segments(std::vector<T*> const& params, std::vector<T const*> const& grads,
                               StepScalars<T> const& s) = 0;
  virtual void update_segments(std::vector<T*> const& params, StepScalars<T> const& s,
                               std::vector<T*> const& direction, std::vector<T*> const& out,
                               bool into_updates, bool stage_momentum) = 0;

  // One segment's passes, for a static segment geometry (Int<> layouts) or a run-time one.
  template <class Seg>
  void gather_segment(Group& g, Seg const& seg, std::vector<T*> const& params,
                      std::vector<T const*> const& grads, StepScalars<T> const& s) {
    stages::gather_gradient(
        executor_, B::view(g.grad.data() + seg.first_slot * g.numel, seg.state_layout()),
        B::view(grads[static_cast<std::size_t>(seg.param)] + seg.offset, seg.param_layout()),
        B::view(params[static_cast<std::size_t>(seg.param)] + seg.offset, seg.param_layout()),
        s.l2);
  }
  // Without weight decay in the gradient (s.l2 == 0, the default): a copy.
  template <class Seg>
  void copy_gradient_segment(Group& g, Seg const& seg, std::vector<T const*> const& grads) {
    assign(B::view(g.grad.data() + seg.first_slot * g.numel, seg.state_layout()),
           B::view(grads[static_cast<std::size_t>(seg.param)] + seg.offset, seg.param_layout()),
           executor_);
  }
  // Without momentum, into the parameters: the update of step() with the default options.
  template <class Seg>
  void plain_update_segment(Group& g, Seg const& seg, std::vector<T*> const& params,
                            StepScalars<T> const& s, T const* direction) {
    index_t const first = seg.first_slot * g.numel;
    auto const param =
        B::view(params[static_cast<std::size_t>(seg.param)] + seg.offset, seg.param_layout());
    auto const scale = B::view(g.scale.data() + seg.first_slot, seg.slot_layout());
    stages::apply_update(
        executor_, param,
        stages::plain_update(B::view(direction + first, seg.state_layout()), scale, param, s),
        s.lr);
  }
  template <class Seg>
  void update_segment(Group& g, Seg const& seg, std::vector<T*> const& params,
                      StepScalars<T> const& s, T const* direction, T* out, bool into_updates,
                      bool stage_momentum) {
    if (!into_updates && options_.momentum == 0.0 && !averaging()) {
      plain_update_segment(g, seg, params, s, direction);
      return;
    }
    auto const state = seg.state_layout();
    index_t const first = seg.first_slot * g.numel;
    auto const d = B::view(direction + first, state);
    auto const scale = B::view(g.scale.data() + seg.first_slot, seg.slot_layout());
    auto const param =
        B::view(params[static_cast<std::size_t>(seg.param)] + seg.offset, seg.param_layout());
    if (averaging()) {  // (options.hpp, IterateAveragingConfig); never into updates
      auto const z = B::view(g.z.data() + first, state);
      if (!z_ready_) assign(z, param, executor_);  // z = y at the first step
      T const keep = T(1) - s.lr * s.decoupled;    // z' = (1 - lr a) z
      T const to_z = T(1) - mu_x_, along = (T(1) - mu_x_ * mu_y_) * s.lr;
      assign(param, param + to_z * (keep * z - param) - along * (d * scale), executor_);
      assign(z, keep * z - s.lr * (d * scale), executor_);
      return;
    }
    auto finish = [&](auto const& u) {
      if (into_updates)
        assign(B::view(out + first, state), u, executor_);
      else
        stages::apply_update(executor_, param, u, s.lr);
    };
    if (options_.momentum == 0.0) {
      finish(stages::plain_update(d, scale, param, s));
      return;
    }
    auto const m_in = B::view(g.momentum.data() + first, state);
    auto const m_out =
        B::view((stage_momentum ? g.staged_momentum : g.momentum).data() + first, state);
    stages::advance_momentum(executor_, m_out, m_in, d, scale, param, s);
    finish(stages::momentum_update(d, scale, param, m_out, s));
  }

  // Both passes over run-time segment geometries (index_t layouts): a run-time plan's, and a
  // static plan's where constant extents gain nothing worth an instantiation per segment shape
  // (momentum, compute_updates). Compiled once per T and X (tessel::shampoo_prebuilt).
  void gather_runtime_segments(std::vector<T*> const& params, std::vector<T const*> const& grads,
                               StepScalars<T> const& s);
  void update_runtime_segments(std::vector<T*> const& params, StepScalars<T> const& s,
                               std::vector<T*> const& direction, std::vector<T*> const& out,
                               bool into_updates, bool stage_momentum);

  // compute_updates (and a distributed step) write u with w <- w - lr u; iterate averaging also
  // moves w toward z, which no such u expresses.
  void check_updates_express_the_step() const {
    if (averaging())
      tessel::detail::throw_error(detail::sentence(
          "iterate averaging (", averaging_name(options_.averaging.type),
          ") moves the parameters toward its averaged sequence, which no update u of w <- w - lr "
          "u expresses: compute_updates and the distributed optimizers do not support it; use "
          "step()."));
  }

  bool averaging() const { return options_.averaging.type != AveragingType::none; }

  static std::vector<T*> pointers_of(std::vector<std::span<T>> const& params) {
    std::vector<T*> out;
    for (auto const& p : params) out.push_back(p.data());
    return out;
  }

  // eval() and train(): y and x = y + (1 - 1 / mu_y) (z - y) into each other, segment by segment.
  void switch_mode(std::vector<T*> const& params, bool to_train);

  // The first block (in plan order) whose step failed, and the error.
  struct BlockFailure {
    std::size_t block = 0;
    std::string message;
  };

  using Pointers = std::pair<std::vector<T*>, std::vector<T const*>>;

  static Pointers pointers(std::span<std::span<T> const> params,
                           std::span<std::span<T const> const> grads) {
    Pointers out;
    for (auto const& p : params) out.first.push_back(p.data());
    for (auto const& g : grads) out.second.push_back(g.data());
    return out;
  }

  // The checks, then the step; throws the first failure. The parameters are updated when
  // `updates` is null, else the updates are written there (compute_updates).
  template <bool IntoUpdates>
  void run_step(std::vector<T*> const& params, std::vector<T const*> const& grads, T* updates) {
    if constexpr (IntoUpdates) check_updates_express_the_step();
    if (auto failure = check_gradients_and_bounds(params, grads))
      tessel::detail::throw_error(failure->message);
    if (auto failure = prepare_updates<IntoUpdates>(params, grads, updates, false))
      tessel::detail::throw_error(failure->message);
  }

  void check_counts(std::size_t params, std::size_t grads) const {
    if (!training_)  // every step path passes here first
      tessel::detail::throw_error(
          "step() in eval mode: with iterate averaging the parameters hold the averaged sequence "
          "between eval() and train(); call train() first.");
    if (params != plan_.num_params())
      tessel::detail::throw_error(tessel::detail::sentence(
          "step got ", params, " parameters but the plan has ", plan_.num_params(), "."));
    if (grads != plan_.num_params())
      tessel::detail::throw_error(tessel::detail::sentence(
          "step got ", grads, " gradients but the plan has ", plan_.num_params(), "."));
  }

  index_t param_numel(std::size_t p) const {
    index_t n = 1;
    for (index_t e : plan_.params[p].shape) n *= e;
    return n;
  }

  // The index parameter p has in sentences and state keys (ParamKeys).
  index_t key_of(std::size_t p) const { return keys_.empty() ? static_cast<index_t>(p) : keys_[p]; }

  // `who` names a caller that needs every gradient (null: step(), which skips parameters without
  // one).
  void check_step_arguments(std::span<std::span<T> const> params,
                            std::span<std::span<T const> const> grads,
                            char const* who = nullptr) const {
    check_counts(params.size(), grads.size());
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (grads[p].data() == nullptr && grads[p].empty()) {
        if (who) refuse_missing_gradient(p, who);
        continue;  // no gradient: skipped
      }
      auto const& shape = plan_.params[p].shape;
      index_t const numel = param_numel(p);
      if (static_cast<index_t>(params[p].size()) != numel)
        tessel::detail::throw_error(tessel::detail::sentence(
            "parameter ", key_of(p), " has ", params[p].size(), " elements but its planned shape ",
            tessel::detail::shape_text(shape), " has ", numel, "."));
      if (static_cast<index_t>(grads[p].size()) != numel)
        tessel::detail::throw_error(
            tessel::detail::sentence("the gradient of parameter ", key_of(p), " has ",
                                     grads[p].size(), " elements but its planned shape ",
                                     tessel::detail::shape_text(shape), " has ", numel, "."));
    }
  }

  [[noreturn]] void refuse_missing_gradient(std::size_t p, char const* who) const {
    tessel::detail::throw_error(tessel::detail::sentence(
        who, " needs the gradient of every parameter, but parameter ", key_of(p),
        " has none; only step() skips the blocks of a parameter without a gradient."));
  }
  void require_every_gradient(std::vector<T const*> const& grads, char const* who) const {
    for (std::size_t p = 0; p < grads.size(); ++p)
      if (grads[p] == nullptr) refuse_missing_gradient(p, who);
  }

  // ---- parameters without a gradient ----

  // What the blocks of the parameters without a gradient held before a step. Distributed Shampoo
  // leaves those blocks out of its step; tessel steps a group's blocks as one batch, so it runs
  // them on a zero gradient and then puts back their state and values (copied through the host:
  // the cost is the skipped blocks' state, paid only on steps that skip).
  struct Skipped {
    std::vector<std::size_t> params;            // the parameters without a gradient
    std::vector<std::vector<T>> values;         // their values
    std::vector<std::vector<std::byte>> state;  // their blocks' slots, for_each_state_buffer order
    std::vector<double> bounds;                 // their slots' factor bounds, mode by mode
    std::vector<index_t> failures;              // their slots' failed root computations in a row
  };

  // Points each missing gradient (null) of `grads` at zeros and saves what its blocks hold; an
  // empty Skipped when every gradient is there. Throws before anything is changed when the step
  // cannot skip.
  Skipped skip_missing_gradients(std::vector<T*> const& params, std::vector<T const*>& grads);
  // Puts back what skip_missing_gradients saved (after the step, or when it threw).
  void restore_skipped(Skipped const& skipped, std::vector<T*> const& params);
  // Each slot of group gi whose block is skipped this step, in order.
  template <class F>
  void for_each_skipped_slot(std::size_t gi, F&& f) const {
    Group const& g = groups_[gi];
    for (index_t slot = 0; slot < g.count; ++slot)
      if (skipped_[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])]) f(slot);
  }
  bool skipped(std::size_t b) const { return !skipped_.empty() && skipped_[b]; }

  // ---- views ----

  template <class U>
  static auto flat(U* data, index_t n) {
    return B::view(data, make_layout(make_shape(n)));
  }
  static auto rows(T* data, Group const& g) {
    return B::view(data, make_layout(make_shape(g.count, g.numel)));
  }

  // ---- the step ----

  // Before anything is written: finite gradients (throws, naming the first bad element) and the
  // overflow pre-check (returns the first block in plan order whose factors the step could
  // overflow). Gathers every block's gradient into its group (the step then starts from there).
  // The executor is waited for once.
  std::optional<BlockFailure> check_gradients_and_bounds(std::vector<T*> const& params,
                                                         std::vector<T const*> const& grads);

  [[noreturn]] void throw_non_finite_gradient(std::size_t p, T const* grad) const {
    std::vector<T> host(static_cast<std::size_t>(param_numel(p)));
    B::to_host(executor_, grad, static_cast<index_t>(host.size()), host.data());
    B::wait(executor_);
    std::size_t i = 0;
    while (i < host.size() && std::isfinite(host[i])) ++i;
    double const value = i < host.size() ? static_cast<double>(host[i]) : 0.0;
    tessel::detail::throw_error(tessel::detail::sentence("the gradient of parameter ", key_of(p),
                                                         " has the value ", value, " at element ",
                                                         i, "; gradients must be finite."));
  }

  // The step after check_gradients_and_bounds: accumulates every block (factors, grafting state,
  // filtered gradient, and on amortized steps the inverse roots) and returns the first failure in
  // plan order, or else updates every block: into the parameters when `updates` is null, else
  // into updates (at update_offset). With stage_momentum the new momentum goes to a staging buffer
  // that commit_momentum() makes current, so a distributed step can drop it when another rank's
  // block failed, as step() never gets to update momentum then.
  // (IntoUpdates says which at compile time, so a program that only calls step() does not
  // instantiate the other.)
  template <bool IntoUpdates>
  std::optional<BlockFailure> prepare_updates(std::vector<T*> const& params,
                                              std::vector<T const*> const&, T* updates,
                                              bool stage_momentum) {
    if (auto failure = accumulate_step()) return failure;
    update<IntoUpdates>(params, step_scalars<T>(options_, step_, peak_lr_), updates,
                        stage_momentum);
    return std::nullopt;
  }

  // The second half of a step() whose accumulate_step succeeded: the parameters move.
  void finish_step(std::vector<T*> const& params);

  // The first half of prepare_updates: counts the step, takes the pre-check's bounds and
  // accumulates every block; returns the first failure in plan order. Nothing is updated.
  std::optional<BlockFailure> accumulate_step();

  void commit_momentum() {
    for (auto& g : groups_)
      if (options_.momentum != 0.0) std::swap(g.momentum, g.staged_momentum);
  }

  // Factors (dequantized for the step when stored narrower than T, unpacked when packed), grafting
  // accumulator, filtered gradient, and on amortized steps the inverse roots; then the factors are
  // stored back.
  void accumulate(Group& g, StepScalars<T> const& s) {
    std::fill(g.errors.begin(), g.errors.end(), std::string());
    if (g.count == 0 || g.numel == 0) return;
    using Scratch = decltype(B::template scratch<T>(executor_, 0));
    std::vector<Scratch> converted;
    std::vector<T*> values;
    for (auto& m : g.modes) {
      T* f = m.factors_as_t();
      if (!f) {
        converted.push_back(B::template scratch<T>(executor_, g.count * m.d * m.d));
        f = converted.back().data();
        visit_factor_dtype(m.dtype, [&](auto u) {
          using U = decltype(u);
          U const* stored = reinterpret_cast<U const*>(m.factors.data());
          if (m.packed)
            unpack_symmetric(executor_, stored, f, g.count, m.d);
          else if constexpr (!std::is_same_v<U, T>)  // stored as T: f is the storage itself
            assign(flat(f, g.count * m.d * m.d), flat(stored, g.count * m.d * m.d), executor_);
        });
      }
      stages::accumulate_factor(executor_, f, factor_input(g, values.size()), g.count, g.shape,
                                m.dim, s.beta2, s.weight);
      values.push_back(f);
    }
    index_t const n = g.count * g.numel;
    if (keeps_grafting_state(options_.grafting.type))
      stages::accumulate_grafting(executor_, flat(g.grafting.data(), n), flat(g.grad.data(), n), s);
    if (options_.beta1 != 0.0)
      stages::filter_gradient(executor_, flat(g.filtered.data(), n), flat(g.grad.data(), n),
                              flat(g.direction.data(), n), s);
    if (s.amortized) amortize(g, values, s);
    g.rotated = nullptr;
    if (options_.preconditioner == PreconditionerType::eigenvalue_corrected) {
      T* const rotated_grad = accumulate_corrected_eigenvalues(g, s);
      // The direction rotated into the eigenbasis without rotating it: the raw gradient's
      // rotation itself (beta1 == 0: the same products on the same operands, bit for bit), or
      // from the filtered gradient kept rotated (Options::keep_rotated_filtered_grad).
      if (options_.beta1 == 0.0 && !g.modes.empty())
        g.rotated = rotated_grad;
      else if (g.rotated_filtered.data() && !s.grafting_only)
        rotate_filtered_gradient(g, s, rotated_grad);
    }
    if (options_.preconditioner == PreconditionerType::spectral_descent &&
        options_.orthogonalization == OrthogonalizationMethod::svd && !s.grafting_only)
      svd_direction(g);
    for (std::size_t j = 0; j < g.modes.size(); ++j) {
      auto& m = g.modes[j];
      if (m.factors_as_t()) continue;
      visit_factor_dtype(m.dtype, [&](auto u) {
        using U = decltype(u);
        U* stored = reinterpret_cast<U*>(m.factors.data());
        if (m.packed)
          pack_symmetric(executor_, static_cast<T const*>(values[j]), stored, g.count, m.d);
        else if constexpr (!std::is_same_v<U, T>)
          assign(flat(stored, g.count * m.d * m.d), flat(values[j], g.count * m.d * m.d),
                 executor_);
      });
    }
  }

  using Scratch = decltype(B::template scratch<T>(std::declval<X const&>(), 0));

  // What factor j of group g accumulates: the gradient, or KL-Shampoo's (kl_gradients).
  T const* factor_input(Group const& g, std::size_t j) const {
    if (!g.kl.data()) return g.grad.data();
    return g.kl.data() + static_cast<index_t>(j) * g.count * g.numel;
  }

  // The current inverse root of mode j of group g: Shampoo's cached one, or eigendecomposed
  // Shampoo's formed from its cached eigendecomposition in a scratch buffer that `keep` holds.
  T const* inverse_root_of(Group const& g, std::size_t j, std::vector<Scratch>& keep) const {
    auto const& m = g.modes[j];
    if (options_.preconditioner != PreconditionerType::eigendecomposed)
      return m.inverse_roots.data();
    auto const layout = detail::matrices_layout(g.count, m.d);
    keep.push_back(B::template scratch<T>(executor_, g.count * m.d * m.d));
    eigendecomposed_inverse_roots<T>(
        executor_, B::view(static_cast<T const*>(m.inverse_roots.data()), layout),
        static_cast<T const*>(m.eigenvalues.data()), g.count, m.d, m.root, options_.epsilon,
        options_.root.eigen, B::view(keep.back().data(), layout));
    return keep.back().data();
  }

  // KL-Shampoo: factor k accumulates G x_{i != k} R_i, the gradient preconditioned along the
  // other modes by their current inverse roots (before this step's amortized computation), into
  // g.kl (allocated for blocks of two or more preconditioned modes; one mode takes G itself).
  void kl_gradients(Group& g) {
    if (!g.kl.data() || g.count == 0 || g.numel == 0) return;
    index_t const n = g.count * g.numel;
    std::vector<Scratch> keep;
    std::vector<T const*> roots;
    for (std::size_t j = 0; j < g.modes.size(); ++j) roots.push_back(inverse_root_of(g, j, keep));
    T* buffers[2] = {g.search.data(), g.spare.data()};
    for (std::size_t k = 0; k < g.modes.size(); ++k) {
      T const* cur = g.grad.data();
      std::size_t used = 0;
      for (std::size_t j = 0; j < g.modes.size(); ++j) {
        if (j == k) continue;
        T* next = buffers[used++ % 2];
        stages::mode_product(executor_, cur, next, roots[j], g.count, g.shape, g.modes[j].dim);
        cur = next;
      }
      assign(flat(g.kl.data() + static_cast<index_t>(k) * n, n), flat(cur, n), executor_);
    }
  }

  // x rotated mode by mode by the eigenvectors of g's modes (back: by their transposes, out of the
  // eigenbasis), through the search buffers: buffers[used % 2] is the next one written, and used
  // counts the writes; the last product goes to `last` when one is given. Returns where the
  // result is (x itself for a group without modes).
  T* rotate(Group& g, T* x, std::size_t& used, bool back = false, T* last = nullptr) {
    T* const buffers[2] = {g.search.data(), g.spare.data()};
    T* cur = x;
    for (std::size_t j = 0; j < g.modes.size(); ++j) {
      T* const next = last && j + 1 == g.modes.size() ? last : buffers[used++ % 2];
      stages::mode_product(executor_, cur, next, g.modes[j].inverse_roots.data(), g.count, g.shape,
                           g.modes[j].dim, back);
      cur = next;
    }
    return cur;
  }

  // Eigenvalue-corrected Shampoo: the raw gradient rotated into the eigenvectors' basis,
  // G' = G x_1 Q_1 ... x_n Q_n, and V <- beta2 V + w G'^2 per element. Returns where G' is (a
  // search buffer; the gradient itself for a group without modes).
  T* accumulate_corrected_eigenvalues(Group& g, StepScalars<T> const& s) {
    index_t const n = g.count * g.numel;
    std::size_t used = 0;
    T* const rotated = rotate(g, g.grad.data(), used);
    auto const v = flat(g.corrected.data(), n);
    auto const r = flat(rotated, n);
    assign(v, s.beta2 * v + s.weight * r * r, executor_);
    return rotated;
  }

  // Options::keep_rotated_filtered_grad: the filtered gradient kept in the eigenbasis, S', filtered
  // there as S is here (stages::filter_gradient on G' instead of G), gives this step's direction
  // in the eigenbasis, x' (g.rotated), without rotating x: rotation is linear, so S' stays S
  // rotated (to rounding) while the eigenvectors stay. When they change (amortized steps), S' is
  // S rotated afresh, and x' is S' / bias1 (x is S / bias1 when beta3 == beta1) or x rotated.
  // After load_state_dict or a step that skipped a block, S' is not S rotated: until the next
  // refresh the direction is rotated as without the option.
  void rotate_filtered_gradient(Group& g, StepScalars<T> const& s, T* rotated_grad) {
    index_t const n = g.count * g.numel;
    T* const free = rotated_grad == g.search.data() ? g.spare.data() : g.search.data();
    auto const kept = flat(g.rotated_filtered.data(), n);
    if (!s.amortized) {
      if (!g.rotated_filtered_valid) return;
      stages::filter_gradient(executor_, kept, flat(rotated_grad, n), flat(free, n), s);
      g.rotated = free;
      return;
    }
    std::size_t used = 0;
    rotate(g, g.filtered.data(), used, false, g.rotated_filtered.data());
    g.rotated_filtered_valid = true;
    if (s.beta3 == s.beta1) {
      assign(flat(g.search.data(), n), kept * s.inv_bias1, executor_);
      g.rotated = g.search.data();
    } else {
      g.rotated = rotate(g, g.direction.data(), used);
    }
  }

  // Spectral descent by SVD: the direction U V^T of the group's filtered gradients into g.search,
  // computed while the step accumulates (the direction depends on nothing the update phase
  // changes) so that a Gram matrix eigh cannot decompose refuses the step before any parameter of
  // any group moves. Distributed Shampoo's torch.linalg.svd raises too; there is no earlier
  // direction to keep, as a failed root keeps its previous root. Non-finite gradients are refused
  // before the step, so what is left is a Gram matrix that overflows.
  void svd_direction(Group& g) {
    T const* x = options_.beta1 != 0.0 ? g.direction.data() : g.grad.data();
    std::vector<index_t> const failed =
        stages::svd_orthogonalize(executor_, x, g.search.data(), g.count, g.shape[0], g.shape[1],
                                  options_.svd, g.per_slot.data());
    for (index_t slot : failed) {
      BlockPlan const& bp =
          plan_.blocks[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])];
      g.errors[static_cast<std::size_t>(slot)] = detail::sentence(
          "the SVD orthogonalization of ", detail::block_name(key_of(bp.param), bp.index),
          " failed: eigh did not converge on its Gram matrix (a gradient whose squares overflow "
          "f64 does this).");  // float blocks too: see stages::svd_orthogonalize
    }
  }

  // What a warm-started eigendecomposition of mode j decomposes, as Distributed Shampoo's
  // matrix_eigendecomposition sees it: `in` (F / bias_correction2) times the per-slot trace scale
  // of eigendecomposed Shampoo with use_trace_scaling, times 1 otherwise (exact). The ridge is
  // the callee's (decomposition_ridge).
  template <class In>
  auto decomposed_input(Group& g, std::size_t j, T const* factor, In const& in,
                        StepScalars<T> const& s) {
    double* scale = g.per_slot.data();
    index_t const d = g.modes[j].d;
    if (options_.preconditioner == PreconditionerType::eigendecomposed &&
        options_.use_trace_scaling)
      stages::trace_scales(executor_, factor, g.count, d, s.bias_correction2, options_.epsilon,
                           options_.trace_scaling_exponent, scale);
    else
      assign(B::view(scale, make_layout(make_shape(g.count))), 1.0, executor_);
    auto const per_matrix =
        make_layout(make_shape(g.count, d, d), make_stride(Int<1>{}, Int<0>{}, Int<0>{}));
    return in * B::view(static_cast<double const*>(scale), per_matrix);
  }

  // The ridge of a warm-started eigendecomposition: epsilon as Distributed Shampoo's default
  // perturbation adds it (eigendecomposed: as the eigen settings say; eigenvalue-corrected, which
  // takes no eigen settings: always, as its default config does).
  double decomposition_ridge() const {
    if (options_.preconditioner == PreconditionerType::eigendecomposed)
      return detail::adds_ridge(options_.root.eigen) ? options_.epsilon : 0.0;
    return options_.epsilon;
  }

  // eigh's tolerance: the slots in `skip` keep their eigenvectors (m.inverse_roots) and, for
  // eigendecomposed Shampoo, take the estimate as their eigenvalues, whatever eigh said of them.
  void keep_skipped(Group& g, typename Group::Mode& m, std::vector<char> const& skip,
                    T const* estimate, T* out, T* out_eigenvalues, std::span<RootResult> results) {
    std::vector<T> keep(skip.size(), T(0));
    for (std::size_t i = 0; i < skip.size(); ++i)
      if (skip[i]) {
        keep[i] = T(1);
        results[i] = RootResult{};
      }
    auto mask = B::template scratch<T>(executor_, g.count);
    B::from_host(executor_, keep.data(), g.count, mask.data());
    auto const layout = detail::matrices_layout(g.count, m.d);
    auto const o = B::view(out, layout);
    assign(o,
           where(B::view(static_cast<T const*>(mask.data()),
                         detail::per_matrix_layout(g.count, m.d)) != T(0),
                 B::view(static_cast<T const*>(m.inverse_roots.data()), layout), o),
           executor_);
    if (options_.preconditioner == PreconditionerType::eigendecomposed) {
      auto const e = B::view(out_eigenvalues, make_layout(make_shape(g.count, m.d)));
      assign(e,
             where(B::view(static_cast<T const*>(mask.data()),
                           detail::per_row_layout(g.count, m.d)) != T(0),
                   B::view(estimate, make_layout(make_shape(g.count, m.d))), e),
             executor_);
    }
    B::wait(executor_);  // keep's host memory
  }

  // The inverse roots of every mode of the group from F / bias_correction2 (eigenvalue-corrected
  // Shampoo: the eigenvectors; eigendecomposed: the eigenvectors and eigenvalues), committed slot
  // by slot where they succeeded; errors and failure counts per slot as one block would have them.
  void amortize(Group& g, std::vector<T*> const& factors, StepScalars<T> const& s) {
    bool const eigendecomposed = options_.preconditioner == PreconditionerType::eigendecomposed;
    char const* const computed = eigendecomposed ? "eigendecomposition" : "inverse root";
    std::vector<char> failed(static_cast<std::size_t>(g.count), 0);
    std::vector<RootStatus> last(static_cast<std::size_t>(g.count), RootStatus::ok);
    std::vector<RootResult> results(static_cast<std::size_t>(g.count));
    EigendecompositionConfig const& eigendecomposition = options_.root.eigendecomposition;
    for (std::size_t j = 0; j < g.modes.size(); ++j) {
      auto& m = g.modes[j];
      auto const layout = detail::matrices_layout(g.count, m.d);
      auto const in = cast<double>(B::view(factors[j], layout)) / s.bias_correction2;
      auto out = B::template scratch<T>(executor_, g.count * m.d * m.d);
      auto out_eigenvalues = B::template scratch<T>(executor_, eigendecomposed ? g.count * m.d : 0);
      std::vector<char> skip;  // eigh's tolerance: 1 for a slot that keeps its eigenvectors
      auto skip_estimate = B::template scratch<T>(executor_, 0);
      auto const compute = [&](auto const& input) {
        if (eigendecomposed)
          factor_eigendecomposition<T>(executor_, input, B::view(out.data(), layout),
                                       out_eigenvalues.data(), g.count, m.d, options_.epsilon,
                                       options_.root.eigen, std::span<RootResult>(results));
        else
          inverse_roots<T>(executor_, input, B::view(out.data(), layout), g.count, m.d, m.root,
                           options_.epsilon, options_.root, std::span<RootResult>(results));
      };
      if (decomposes_factors(options_.preconditioner) && eigendecomposition.tolerance != 0.0 &&
          eigendecomposition.method == EigendecompositionMethod::eigh) {
        // eigh's tolerance: slots whose kept eigenvectors still diagonalize the factor skip it.
        skip_estimate = B::template scratch<T>(executor_, g.count * m.d);
        skip = eigh_estimates_within_tolerance<T>(
            executor_, decomposed_input(g, j, factors[j], in, s),
            B::view(m.inverse_roots.data(), layout), skip_estimate.data(), g.count, m.d,
            decomposition_ridge(), eigendecomposition.tolerance);
      }
      if (decomposes_factors(options_.preconditioner) &&
          eigendecomposition.method == EigendecompositionMethod::qr) {
        // Warm start: the iteration refines the eigenvectors the state keeps.
        assign(B::view(out.data(), layout), B::view(m.inverse_roots.data(), layout), executor_);
        auto lambda = B::template scratch<T>(executor_, eigendecomposed ? 0 : g.count * m.d);
        qr_iteration<T>(executor_, decomposed_input(g, j, factors[j], in, s),
                        B::view(out.data(), layout),
                        eigendecomposed ? out_eigenvalues.data() : lambda.data(), g.count, m.d,
                        decomposition_ridge(), eigendecomposition.max_iterations,
                        eigendecomposition.tolerance, std::span<RootResult>(results));
      } else if (options_.preconditioner == PreconditionerType::eigenvalue_corrected) {
        factor_eigenvectors<T>(executor_, B::view(factors[j], layout), B::view(out.data(), layout),
                               g.count, m.d, std::span<RootResult>(results));
      } else if (options_.use_trace_scaling) {
        // Per slot: max(trace(F / bc2), epsilon)^(-exponent), broadcast over the matrix.
        double* scale = g.per_slot.data();
        stages::trace_scales(executor_, factors[j], g.count, m.d, s.bias_correction2,
                             options_.epsilon, options_.trace_scaling_exponent, scale);
        auto const per_matrix =
            make_layout(make_shape(g.count, m.d, m.d), make_stride(Int<1>{}, Int<0>{}, Int<0>{}));
        compute(in * B::view(static_cast<double const*>(scale), per_matrix));
      } else {
        compute(in);
      }
      if (std::find(skip.begin(), skip.end(), char{1}) != skip.end())
        keep_skipped(g, m, skip, skip_estimate.data(), out.data(), out_eigenvalues.data(),
                     std::span<RootResult>(results));
      // Packed state keeps a root's upper triangle: the root is made exactly symmetric from it, so
      // a saved and resumed optimizer steps as this one does (and as Distributed Shampoo's packed
      // roots step). Eigen roots already are (one SYRK, roots/eigen.hpp); coupled Newton's are
      // symmetric only up to rounding.
      if (saves_packed_roots() && options_.root.method == RootMethod::coupled_newton)
        mirror_upper_triangle(executor_, out.data(), g.count, m.d);
      std::vector<T> commit(static_cast<std::size_t>(g.count), T(0));
      for (index_t slot = 0; slot < g.count; ++slot) {
        auto const i = static_cast<std::size_t>(slot);
        if (!g.errors[i].empty()) continue;
        BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(g.blocks[i])];
        switch (results[i].status) {
          case RootStatus::ok:
            commit[i] = T(1);
            break;
          case RootStatus::non_finite_input:
            g.errors[i] = tessel::detail::sentence("factor matrix ", j, " of ",
                                                   detail::block_name(key_of(bp.param), bp.index),
                                                   " has NaN or Inf values at step ", step_, ".");
            break;
          case RootStatus::non_finite:
            g.errors[i] =
                tessel::detail::sentence("the ", computed, " of factor matrix ", j, " of ",
                                         detail::block_name(key_of(bp.param), bp.index),
                                         " has NaN or Inf values at step ", step_, ".");
            break;
          case RootStatus::solver_failed:
          case RootStatus::not_converged:
            failed[i] = 1;  // keep the previous inverse root
            last[i] = results[i].status;
            break;
        }
      }
      auto mask = B::template scratch<T>(executor_, g.count);
      B::from_host(executor_, commit.data(), g.count, mask.data());
      auto const inverse = B::view(m.inverse_roots.data(), layout);
      assign(inverse,
             where(B::view(mask.data(), detail::per_matrix_layout(g.count, m.d)) != T(0),
                   B::view(out.data(), layout), inverse),
             executor_);
      if (eigendecomposed) {
        auto const eigenvalues =
            B::view(m.eigenvalues.data(), make_layout(make_shape(g.count, m.d)));
        assign(eigenvalues,
               where(B::view(mask.data(), detail::per_row_layout(g.count, m.d)) != T(0),
                     B::view(out_eigenvalues.data(), make_layout(make_shape(g.count, m.d))),
                     eigenvalues),
               executor_);
      }
      B::wait(executor_);  // commit's host memory
    }
    for (index_t slot = 0; slot < g.count; ++slot) {
      auto const i = static_cast<std::size_t>(slot);
      if (!g.errors[i].empty()) continue;
      index_t& failures = g.failures[i];
      failures = failed[i] ? failures + 1 : 0;
      if (failures > options_.num_tolerated_failed_amortized_computations) {
        BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(g.blocks[i])];
        g.errors[i] = tessel::detail::sentence(
            "the ", computed, "s of ", detail::block_name(key_of(bp.param), bp.index), " failed ",
            failures, " amortized computations in a row, more than the ",
            options_.num_tolerated_failed_amortized_computations, " tolerated; the last time ",
            root_status_name(last[i]), ".");
      }
    }
  }

  // Precondition, graft and update every block.
  template <bool IntoUpdates>
  void update(std::vector<T*> const& params, StepScalars<T> const& s, T* updates,
              bool stage_momentum) {
    std::vector<T*> direction(groups_.size(), nullptr), out(groups_.size(), nullptr);
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      Group& g = groups_[gi];
      if (g.count == 0 || g.numel == 0) continue;
      direction[gi] = search_direction(g, s);
      out[gi] = direction[gi] == g.spare.data() ? g.search.data() : g.spare.data();
    }
    update_segments(params, s, direction, out, IntoUpdates, stage_momentum);
    if (averaging()) z_ready_ = true;
    if constexpr (IntoUpdates) {
      for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
        auto const gi = static_cast<std::size_t>(plan_.blocks[b].group);
        Group const& g = groups_[gi];
        if (!out[gi]) continue;
        assign(flat(updates + update_offsets_[b], g.numel),
               flat(out[gi] + plan_.blocks[b].slot * g.numel, g.numel), executor_);
      }
    }
  }

  // Spectral descent's direction of the group's blocks x: where it is (search or spare).
  T* orthogonalized(Group& g, T const* x) {
    // No default: a new method must say how it orthogonalizes.
    switch (options_.orthogonalization) {
      case OrthogonalizationMethod::newton_schulz:
        return stages::orthogonalize(executor_, x, g.search.data(), g.spare.data(), g.count,
                                     g.shape[0], g.shape[1], options_.newton_schulz,
                                     g.per_slot.data());
      case OrthogonalizationMethod::svd:
        return g.search.data();  // svd_direction wrote it in accumulate()
    }
    tessel::detail::throw_error(detail::sentence("orthogonalization ",
                                                 static_cast<int>(options_.orthogonalization),
                                                 " is not an OrthogonalizationMethod."));
  }

  // The direction each block moves along, and the per-slot scale (the grafting rescale, or 1).
  // Returns where the direction is: the (filtered) gradient itself, or one of the search buffers.
  T* search_direction(Group& g, StepScalars<T> const& s) {
    index_t const n = g.count * g.numel;
    T* x = options_.beta1 != 0.0 ? g.direction.data() : g.grad.data();
    GraftingType const grafting = options_.grafting.type;
    auto const scale = flat(g.scale.data(), g.count);
    // The accumulator, or for SGD the gradient itself (see grafting_direction).
    T* accumulator = keeps_grafting_state(grafting) ? g.grafting.data() : x;
    if (s.grafting_only) {
      assign(flat(g.search.data(), n),
             grafting_direction(flat(accumulator, n), flat(x, n), s.grafting), executor_);
      assign(scale, T(1), executor_);
      return g.search.data();
    }
    T* cur = x;
    // No default: a new preconditioner must say how it turns x into a direction.
    switch (options_.preconditioner) {
      case PreconditionerType::shampoo:
      case PreconditionerType::eigendecomposed: {
        T* buffers[2] = {g.search.data(), g.spare.data()};
        std::vector<Scratch> keep;
        for (std::size_t j = 0; j < g.modes.size(); ++j) {
          T* next = buffers[j % 2];
          stages::mode_product(executor_, cur, next, inverse_root_of(g, j, keep), g.count, g.shape,
                               g.modes[j].dim);
          cur = next;
        }
        break;
      }
      case PreconditionerType::spectral_descent:
        cur = orthogonalized(g, x);
        break;
      case PreconditionerType::sign_descent:
        assign(flat(g.search.data(), n), sign(flat(x, n)), executor_);
        cur = g.search.data();
        break;
      case PreconditionerType::eigenvalue_corrected: {
        // Into the eigenbasis (or from where accumulate left x rotated), divided by
        // (V / bc2)^e + epsilon, and back.
        T* buffers[2] = {g.search.data(), g.spare.data()};
        std::size_t used = 0;
        if (g.rotated) {
          cur = g.rotated;
          used = cur == buffers[0] ? 1 : 0;  // the other buffer is the next one written
        } else {
          cur = rotate(g, cur, used);
        }
        if (g.modes.empty()) {  // a 0-D block: no basis to change
          assign(flat(buffers[0], n), flat(cur, n), executor_);
          cur = buffers[used++ % 2];
        }
        auto const c = flat(cur, n);
        auto const v = flat(g.corrected.data(), n) / static_cast<T>(s.bias_correction2);
        auto const eps = static_cast<T>(options_.epsilon);
        double const e =
            corrected_eigenvalue_exponent(options_.inverse_exponent_override, g.shape.rank());
        if (e == 0.5)  // the default: sqrt, exact where pow need not be
          assign(c, c / (sqrt(v) + eps), executor_);
        else
          assign(c, c / (pow(v, e) + eps), executor_);
        cur = rotate(g, cur, used, true);
        break;
      }
    }
    if (grafting == GraftingType::none) {
      assign(scale, T(1), executor_);
      return cur;
    }
    auto const graft2 = flat(g.per_slot.data(), g.count);
    auto const shampoo2 = flat(g.per_slot.data() + g.count, g.count);
    stages::squared_norms(executor_, graft2,
                          grafting_direction(rows(accumulator, g), rows(x, g), s.grafting));
    stages::squared_norms(executor_, shampoo2, rows(cur, g));
    stages::grafting_scale(executor_, scale, graft2, shampoo2, T(0));
    return cur;
  }

  // ---- construction ----

  void build();

  // A distributed step stages momentum: its buffers, made once.
  void prepare_staging() {
    if (options_.momentum == 0.0) return;
    for (auto& g : groups_)
      if (!g.staged_momentum.data() && g.count * g.numel > 0)
        g.staged_momentum = B::template allocate<T>(g.count * g.numel);
  }

  Group const& group_of(std::size_t b) const {
    return groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
  }
  index_t slot_of(std::size_t b) const { return plan_.blocks[b].slot; }

  // ---- state dictionaries ----

  // Whether inverse roots are saved as upper triangles (they stay full in memory).
  bool saves_packed_roots() const {
    return options_.use_symmetric_packing && options_.preconditioner == PreconditionerType::shampoo;
  }

  // f(buffer, bytes per slot, key_of(slot), dtype, shape per slot in the buffer, shape per slot in
  // state dictionaries) for every state buffer of group gi. The two shapes differ only for inverse
  // roots saved packed: full (d, d) in memory, (d (d + 1) / 2,) saved.
  template <class F>
  void for_each_state_buffer(std::size_t gi, F&& f) const {
    Group const& g = groups_[gi];
    auto key = [&](index_t slot, std::vector<std::string> tail) {
      BlockPlan const& bp =
          plan_.blocks[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])];
      StateKey k{std::to_string(key_of(bp.param)), "block_" + std::to_string(bp.index)};
      k.insert(k.end(), tail.begin(), tail.end());
      return k;
    };
    index_t const t_size = static_cast<index_t>(sizeof(T));
    std::vector<index_t> const block(g.shape.begin(), g.shape.end());
    bool const eigendecomposed = options_.preconditioner == PreconditionerType::eigendecomposed;
    for (std::size_t j = 0; j < g.modes.size(); ++j) {
      auto const& m = g.modes[j];
      index_t const dd = m.d * m.d;
      std::vector<index_t> const square{m.d, m.d};
      f(
          m.factors, m.factor_numel() * static_cast<index_t>(dtype_size(m.dtype)),
          [&, j](index_t slot) {
            return key(slot, {"shampoo", "factor_matrices", std::to_string(j)});
          },
          m.dtype, m.packed ? std::vector<index_t>{packed_size(m.d)} : square,
          m.packed ? std::vector<index_t>{packed_size(m.d)} : square);
      char const* second =
          options_.preconditioner == PreconditionerType::eigenvalue_corrected || eigendecomposed
              ? "factor_matrices_eigenvectors"
              : "inv_factor_matrices";
      f(
          m.inverse_roots, dd * t_size,
          [&, j, second](index_t slot) {
            return key(slot, {"shampoo", second, std::to_string(j)});
          },
          dtype_of_v<T>, square,
          saves_packed_roots() ? std::vector<index_t>{packed_size(m.d)} : square);
      if (eigendecomposed)
        f(
            m.eigenvalues, m.d * t_size,
            [&, j](index_t slot) {
              return key(slot, {"shampoo", "factor_matrices_eigenvalues", std::to_string(j)});
            },
            dtype_of_v<T>, std::vector<index_t>{m.d}, std::vector<index_t>{m.d});
    }
    index_t const bytes = g.numel * t_size;
    auto each = [&](auto const& buffer, std::vector<std::string> tail) {
      f(
          buffer, bytes, [&, tail](index_t slot) { return key(slot, tail); }, dtype_of_v<T>, block,
          block);
    };
    if (options_.preconditioner == PreconditionerType::eigenvalue_corrected)
      each(g.corrected, {"shampoo", "corrected_eigenvalues"});
    if (averaging()) each(g.z, {"weight_buffer"});
    if (options_.beta1 != 0.0) each(g.filtered, {"filtered_grad"});
    if (options_.momentum != 0.0) each(g.momentum, {"momentum_buffer"});
    if (keeps_grafting_state(options_.grafting.type)) each(g.grafting, {"adagrad"});
  }

  template <class Buffer>
  void download(Buffer const& buffer, std::vector<std::byte>& host) const {
    B::to_host(executor_, reinterpret_cast<std::byte const*>(buffer.data()),
               static_cast<index_t>(host.size()), host.data());
  }

  // Every key of the state with its dtype and shape, the data zero-filled.
  StateDict expected_state() const {
    StateDict out;
    for (std::size_t p = 0; p < plan_.num_params(); ++p) {
      out[{std::to_string(key_of(p)), "step"}] =
          StateTensor{DType::i64, {}, std::vector<std::byte>(sizeof(std::int64_t))};
      if (averaging()) {  // per parameter, as Distributed Shampoo aliases its group's scalars
        out[{std::to_string(key_of(p)), "lr_sum"}] =
            StateTensor{DType::f64, {}, std::vector<std::byte>(sizeof(double))};
        out[{std::to_string(key_of(p)), "train_mode"}] =
            StateTensor{DType::bool_, {}, std::vector<std::byte>(1)};
      }
    }
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      Group const& g = groups_[gi];
      for_each_state_buffer(
          gi, [&](auto const&, index_t slot_bytes, auto key_of, DType dtype,
                  std::vector<index_t> const& shape, std::vector<index_t> const& saved) {
            std::size_t const bytes =
                saved == shape ? static_cast<std::size_t>(slot_bytes)
                               : static_cast<std::size_t>(saved[0]) * dtype_size(dtype);  // packed
            for (index_t slot = 0; slot < g.count; ++slot)
              out[key_of(slot)] = StateTensor{dtype, saved, std::vector<std::byte>(bytes)};
          });
    }
    return out;
  }

  // [.., "shampoo", "factor_matrices" | "inv_factor_matrices", j]: a Kronecker factor or its
  // inverse root, symmetric, saved packed or full.
  static bool is_symmetric_key(StateKey const& key) {
    return key.size() >= 2 && (key[key.size() - 2] == "factor_matrices" ||
                               key[key.size() - 2] == "inv_factor_matrices");
  }

  // load_state_dict's checks: throws unless `state` fits; returns its step.
  index_t check_state_dict(StateDict const& state) const {
    StateDict const expected = expected_state();
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
      std::size_t needed = tensor.data.size();
      if (it->second.shape != tensor.shape && is_symmetric_key(key)) {
        // A factor or inverse root loads from either layout (assign_state_dict converts it).
        index_t const d = tensor.shape.size() == 2 ? tensor.shape[0] : packed_dim(tensor.shape[0]);
        std::vector<index_t> const packed{packed_size(d)}, full{d, d};
        if (it->second.shape != packed && it->second.shape != full)
          tessel::detail::throw_error(tessel::detail::sentence(
              "the state's ", state_key_text(key), " has shape ",
              tessel::detail::shape_text(it->second.shape), " but this optimizer's ",
              key[key.size() - 2] == "factor_matrices" ? "factor" : "inverse root", " there is ", d,
              " x ", d, ", which loads from shape ", tessel::detail::shape_text(packed),
              " (packed) or ", tessel::detail::shape_text(full), " (full)."));
        needed = static_cast<std::size_t>(it->second.shape == full ? d * d : packed_size(d)) *
                 dtype_size(tensor.dtype);
      } else if (it->second.shape != tensor.shape) {
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's ", state_key_text(key), " has shape ",
            tessel::detail::shape_text(it->second.shape), " but this optimizer keeps ",
            tessel::detail::shape_text(tensor.shape), "."));
      }
      if (it->second.data.size() != needed)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's ", state_key_text(key), " holds ", it->second.data.size(),
            " bytes but its shape and dtype need ", needed, "."));
    }
    for (auto const& [key, tensor] : state)
      if (!expected.contains(key))
        tessel::detail::throw_error(
            tessel::detail::sentence("the state has the key ", state_key_text(key),
                                     ", which this optimizer does not keep."));
    std::int64_t step = 0;
    for (std::size_t p = 0; p < plan_.num_params(); ++p) {
      auto const& t = state.at({std::to_string(key_of(p)), "step"});
      std::int64_t v = 0;
      std::memcpy(&v, t.data.data(), sizeof v);
      if (v < 0)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's step of parameter ", key_of(p), " is ", v, "; steps are >= 0."));
      if (p > 0 && v != step)
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's step of parameter ", key_of(p), " is ", v, " but parameter ", key_of(0),
            "'s is ", step, "; all parameters share one step."));
      step = v;
    }
    if (averaging())  // one lr_sum and one mode for all parameters, as one step
      for (std::size_t p = 1; p < plan_.num_params(); ++p)
        for (char const* name : {"lr_sum", "train_mode"})
          if (state.at({std::to_string(key_of(p)), name}).data !=
              state.at({std::to_string(key_of(0)), name}).data)
            tessel::detail::throw_error(tessel::detail::sentence(
                "the state's ", name, " of parameter ", key_of(p), " differs from parameter ",
                key_of(0), "'s; all parameters share one ", name, "."));
    return step;
  }

  // load_state_dict's copy. @pre check_state_dict(state) returned step
  void assign_state_dict(StateDict const& state, index_t step) {
    std::vector<std::vector<std::byte>> staged;  // alive until the copies are done
    for (std::size_t gi = 0; gi < groups_.size(); ++gi)
      for_each_state_buffer(gi, [&](auto const& buffer, index_t slot_bytes, auto key_of,
                                    DType dtype, std::vector<index_t> const& shape,
                                    std::vector<index_t> const& saved) {
        auto& host = staged.emplace_back(static_cast<std::size_t>(slot_bytes * groups_[gi].count));
        std::vector<std::byte> upper;
        for (index_t slot = 0; slot < groups_[gi].count; ++slot) {
          StateTensor const& t = state.at(key_of(slot));
          std::byte* to = host.data() + slot * slot_bytes;
          // Only a symmetric matrix's shape can differ (check_state_dict): the other layout of it.
          if (t.shape == shape && saved == shape) {
            std::memcpy(to, t.data.data(), t.data.size());
          } else if (shape.size() == 1) {  // full into packed storage
            pack_symmetric_bytes(t.data.data(), to, t.shape[0], dtype_size(dtype));
          } else if (t.shape == shape) {
            // A full root into an optimizer that saves roots packed: symmetric from its upper
            // triangle, as the roots it computes are (amortize).
            upper.resize(static_cast<std::size_t>(packed_size(shape[0])) * dtype_size(dtype));
            pack_symmetric_bytes(t.data.data(), upper.data(), shape[0], dtype_size(dtype));
            unpack_symmetric_bytes(upper.data(), to, shape[0], dtype_size(dtype));
          } else {
            unpack_symmetric_bytes(t.data.data(), to, shape[0], dtype_size(dtype));
          }
        }
        B::from_host(executor_, host.data(), static_cast<index_t>(host.size()),
                     reinterpret_cast<std::byte*>(buffer.data()));
      });
    B::wait(executor_);
    step_ = step;
    if (averaging() && plan_.num_params() > 0) {
      std::string const first = std::to_string(key_of(0));
      std::memcpy(&lr_sum_, state.at({first, "lr_sum"}).data.data(), sizeof lr_sum_);
      training_ = state.at({first, "train_mode"}).data[0] != std::byte{0};
      z_ready_ = step > 0;
    }
    for (auto& g : groups_) {
      std::fill(g.failures.begin(), g.failures.end(), 0);
      // Not in the state: keep_rotated_filtered_grad derives it again at the next refresh.
      g.rotated_filtered_valid = false;
      for (auto& m : g.modes)  // unknown until the next step reads the loaded factors
        m.bound.assign(static_cast<std::size_t>(g.count), std::numeric_limits<double>::infinity());
    }
  }

  Plan plan_;
  Options options_;
  X executor_;
  std::vector<Group> groups_;
  std::vector<index_t> update_offsets_;        // per plan block, and the total at the end
  typename B::template Buffer<T> grad_flags_;  // per parameter: sum(grad * 0)
  index_t step_ = 0;
  // Iterate averaging: sum_t lr_t^p (schedule-free), this step's mu_x and mu_y, whether the
  // parameters hold y (train) or the averaged x (eval), and whether z holds its sequence yet (z =
  // y until the first step writes it; a loaded state at a step > 0 holds it).
  double lr_sum_ = 0.0;
  T mu_x_ = 0, mu_y_ = 1;
  bool training_ = true;
  bool z_ready_ = false;
  std::vector<index_t> keys_;  // ParamKeys: the caller's index of each parameter (empty: p)
  double peak_lr_ = 0.0;       // the lr at construction (corrected and independent weight decay)
  // Per plan block: skipped this step (its parameter has no gradient); empty when none is.
  std::vector<char> skipped_;
  typename B::template Buffer<T> zeros_;  // the gradient of skipped parameters
};

// The optimizer: ShampooBase<T, X> (everything but the plan) and the passes over the plan's
// segments, instantiated per segment shape: Int<> layouts for a static plan, index_t for a run-time
// one.
template <class T, PlanTag P = RuntimePlan, class X = exec::Auto>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) && exec::Executor<X> class Shampoo
    final : public ShampooBase<T, X> {
  using Base = ShampooBase<T, X>;
  using typename Base::B;
  using typename Base::Group;

 public:
  using plan_type = P;

  // A run-time plan (any BasicPlan; a static one is copied into a Plan).
  // @pre validate(options) passes (checked; tessel::Error otherwise)
  template <class PP, class BB, class GG>
  requires std::same_as<P, RuntimePlan>
  explicit Shampoo(BasicPlan<PP, BB, GG> const& plan, Options options = {}, X executor = {})
      : Base(to_runtime(plan), std::move(options), executor) {}
  // The same with the caller's index of each parameter in sentences and state keys.
  template <class PP, class BB, class GG>
  requires std::same_as<P, RuntimePlan> Shampoo(BasicPlan<PP, BB, GG> const& plan, Options options,
                                                X executor, ParamKeys keys)
      : Base(to_runtime(plan), std::move(options), executor, std::move(keys)) {}

  // The plan of the type: Shampoo<float, static_plan<plan>> opt(options).
  explicit Shampoo(Options options = {}, X executor = {}) requires is_static_plan_v<P>
      : Base(to_runtime(P::value), std::move(options), executor) {}

  Shampoo(Shampoo const&) = delete;
  Shampoo& operator=(Shampoo const&) = delete;
  Shampoo(Shampoo&&) noexcept = default;
  Shampoo& operator=(Shampoo&&) noexcept = default;
  ~Shampoo() = default;

 private:
  // f(group, segment geometry) for every segment of a static plan (Int<> layouts). Segments of
  // equal shapes share one instantiation of every stage.
  template <class F>
  void for_each_static_segment(F&& f) {
    [&]<std::size_t... S>(std::index_sequence<S...>) {
      (f(this->groups_[static_cast<std::size_t>(P::segments[S].group)], static_segment<P, S>()),
       ...);
    }
    (std::make_index_sequence<P::num_segments>{});
  }

  // A static plan gathers the gradient (without l2 decay) and applies the plain update (step()
  // without momentum) with its segments' Int<> layouts: the passes that read and write the
  // parameters' blocks, where constant strides pay. The rest (l2 decay, momentum,
  // compute_updates) goes through the run-time geometry that every plan shares.
  void gather_segments(std::vector<T*> const& params, std::vector<T const*> const& grads,
                       StepScalars<T> const& s) override;
  void update_segments(std::vector<T*> const& params, StepScalars<T> const& s,
                       std::vector<T*> const& direction, std::vector<T*> const& out,
                       bool into_updates, bool stage_momentum) override;
};

// The entry points to the step are defined out of the class: not inline, so a translation unit
// that declares the instantiation extern (TESSEL_SHAMPOO_PREBUILT, below) compiles none of the
// step, even where the optimizer would inline.
template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::step(std::span<std::span<T> const> params,
                                                   std::span<std::span<T const> const> grads) {
  check_step_arguments(params, grads);
  auto const ptrs = pointers(params, grads);
  step(ptrs.first, ptrs.second);
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::step(std::vector<T*> const& params,
                                                   std::vector<T const*> const& grads) {
  check_counts(params.size(), grads.size());
  std::vector<T const*> given = grads;
  Skipped const skipped = skip_missing_gradients(params, given);
  try {
    run_step<false>(params, given, nullptr);
  } catch (...) {
    restore_skipped(skipped, params);
    throw;
  }
  restore_skipped(skipped, params);
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::compute_updates(
        std::span<std::span<T> const> params, std::span<std::span<T const> const> grads,
        std::span<T> updates) {
  check_step_arguments(params, grads, "compute_updates");
  if (updates.size() != static_cast<std::size_t>(update_numel()))
    tessel::detail::throw_error(tessel::detail::sentence(
        "compute_updates needs room for ", update_numel(), " update values (one per element of ",
        plan_.num_blocks(), " blocks), got ", updates.size(), "."));
  auto const ptrs = pointers(params, grads);
  run_step<true>(ptrs.first, ptrs.second, updates.data());
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::compute_updates(std::vector<T*> const& params,
                                                              std::vector<T const*> const& grads,
                                                              T* updates) {
  check_counts(params.size(), grads.size());
  require_every_gradient(grads, "compute_updates");
  run_step<true>(params, grads, updates);
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) && exec::Executor<X> StateDict
    ShampooBase<T, X>::state_dict() const {
  StateDict out = expected_state();
  std::int64_t const step = step_;
  for (std::size_t p = 0; p < plan_.num_params(); ++p) {
    std::memcpy(out[{std::to_string(key_of(p)), "step"}].data.data(), &step, sizeof step);
    if (averaging()) {
      std::memcpy(out[{std::to_string(key_of(p)), "lr_sum"}].data.data(), &lr_sum_, sizeof lr_sum_);
      out[{std::to_string(key_of(p)), "train_mode"}].data[0] =
          training_ ? std::byte{1} : std::byte{0};
    }
  }
  for (std::size_t gi = 0; gi < groups_.size(); ++gi)
    for_each_state_buffer(
        gi, [&](auto const& buffer, index_t slot_bytes, auto key_of, DType dtype,
                std::vector<index_t> const& shape, std::vector<index_t> const& saved) {
          std::vector<std::byte> host(static_cast<std::size_t>(slot_bytes * groups_[gi].count));
          download(buffer, host);
          for (index_t slot = 0; slot < groups_[gi].count; ++slot) {
            auto& data = out.at(key_of(slot)).data;
            if (saved == shape)
              std::memcpy(data.data(), host.data() + slot * slot_bytes, data.size());
            else  // an inverse root saved packed
              pack_symmetric_bytes(host.data() + slot * slot_bytes, data.data(), shape[0],
                                   dtype_size(dtype));
          }
        });
  B::wait(executor_);
  return out;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::load_state_dict(StateDict const& state) {
  index_t const step = check_state_dict(state);
  assign_state_dict(state, step);
}

// The halves of a step and eval()/train(), out of the class so that they are not inline: a
// translation unit that declares the instantiation extern (TESSEL_SHAMPOO_PREBUILT) compiles none
// of them, GroupedShampoo's step included (it calls them group by group).

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::switch_mode(std::vector<T*> const& params,
                                                          bool to_train) {
  if (params.size() != plan_.num_params())
    tessel::detail::throw_error(
        tessel::detail::sentence(to_train ? "train" : "eval", " got ", params.size(),
                                 " parameters but the plan has ", plan_.num_params(), "."));
  if (!averaging() || training_ == to_train) return;
  if (z_ready_) {  // before the first step z = y, and x = y
    double const mu_y = options_.averaging.train_interp_coeff;
    T const c = static_cast<T>(to_train ? 1.0 - mu_y : 1.0 - 1.0 / mu_y);
    for (auto& g : groups_)
      for (auto const& plan_segment : g.segments) {
        auto const seg = runtime_segment(plan_segment, g.shape);
        auto const param =
            B::view(params[static_cast<std::size_t>(seg.param)] + seg.offset, seg.param_layout());
        auto const z = B::view(g.z.data() + seg.first_slot * g.numel, seg.state_layout());
        assign(param, param + c * (z - param), executor_);
      }
    B::wait(executor_);
  }
  training_ = to_train;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> auto ShampooBase<T, X>::check_gradients_and_bounds(
        std::vector<T*> const& params, std::vector<T const*> const& grads)
        -> std::optional<BlockFailure> {
  StepScalars<T> const s = step_scalars<T>(options_, step_ + 1, peak_lr_);
  for (std::size_t p = 0; p < plan_.num_params(); ++p) {
    index_t const n = param_numel(p);
    auto const g = B::view(grads[p], make_layout(make_shape(n)));
    // sum(g * 0) is NaN exactly when g holds a NaN or an Inf.
    assign(flat(grad_flags_.data() + p, 1), sum(g * T(0), keep), executor_);
  }
  gather_segments(params, grads, s);
  for (auto& g : groups_) kl_gradients(g);
  // Row norms of what every mode's factor accumulates (scratch per mode, for the tight bounds
  // below), max_i r_i per slot.
  for (auto& g : groups_) {
    if (g.numel == 0) continue;
    double* norms = g.row_norms.data();
    for (std::size_t j = 0; j < g.modes.size(); ++j) {
      auto const& m = g.modes[j];
      stages::row_norm_inputs(executor_, factor_input(g, j), g.count, g.shape, m.dim, norms,
                              g.per_slot.data() + (2 * j + 1) * g.count);
      norms += g.count * m.d;
    }
  }
  std::vector<T> flags(plan_.num_params());
  B::to_host(executor_, grad_flags_.data(), static_cast<index_t>(flags.size()), flags.data());
  auto read_per_slot = [&](std::vector<std::vector<double>>& inputs) {
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      auto const& g = groups_[gi];
      inputs[gi].resize(2 * g.modes.size() * static_cast<std::size_t>(g.count));
      B::to_host(executor_, g.per_slot.data(), static_cast<index_t>(inputs[gi].size()),
                 inputs[gi].data());
    }
    B::wait(executor_);
  };
  std::vector<std::vector<double>> inputs(groups_.size());
  read_per_slot(inputs);
  for (std::size_t p = 0; p < flags.size(); ++p)
    if (!(flags[p] == T(0))) throw_non_finite_gradient(p, grads[p]);
  // The cheap bound per slot; the tight one for every mode where some slot's cheap one fails.
  double const beta2 = static_cast<double>(s.beta2), weight = static_cast<double>(s.weight);
  auto const at = [](std::size_t j, index_t count, index_t slot) {
    return 2 * j * static_cast<std::size_t>(count) + static_cast<std::size_t>(slot);
  };
  bool tight = false;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    if (g.numel == 0) continue;
    double* norms = g.row_norms.data();
    for (std::size_t j = 0; j < g.modes.size(); ++j) {
      auto& m = g.modes[j];
      m.pending.assign(static_cast<std::size_t>(g.count), 0.0);
      bool all_fit = true;
      for (index_t slot = 0; slot < g.count; ++slot) {
        double const largest_r =
            inputs[gi][at(j, g.count, slot) + static_cast<std::size_t>(g.count)];
        double const cheap = beta2 * m.bound[static_cast<std::size_t>(slot)] + weight * largest_r;
        inputs[gi][at(j, g.count, slot)] = cheap;
        all_fit = all_fit && bound_fits<T>(cheap, g.numel / std::max<index_t>(m.d, 1), m.dtype, s);
      }
      if (!all_fit) {
        tight = true;
        visit_factor_dtype(m.dtype, [&](auto u) {
          using U = decltype(u);
          U const* stored = reinterpret_cast<U const*>(m.factors.data());
          auto full = B::template scratch<U>(executor_, m.packed ? g.count * m.d * m.d : 0);
          if (m.packed) {
            unpack_symmetric(executor_, stored, full.data(), g.count, m.d);
            stored = full.data();
          }
          stages::entry_bounds(executor_, stored, g.count, m.d, beta2, weight, norms,
                               g.per_slot.data() + 2 * j * g.count);
        });
      }
      norms += g.count * m.d;
    }
  }
  if (tight) {
    // Only the modes that ran entry_bounds take the tight bounds read back.
    std::vector<std::vector<double>> fresh(groups_.size());
    read_per_slot(fresh);
    for (std::size_t gi = 0; gi < groups_.size(); ++gi)
      for (std::size_t j = 0; j < groups_[gi].modes.size(); ++j) {
        auto const& g = groups_[gi];
        bool all_fit = true;
        for (index_t slot = 0; slot < g.count; ++slot)
          all_fit = all_fit && bound_fits<T>(inputs[gi][at(j, g.count, slot)],
                                             g.numel / std::max<index_t>(g.modes[j].d, 1),
                                             g.modes[j].dtype, s);
        if (!all_fit)
          for (index_t slot = 0; slot < g.count; ++slot)
            inputs[gi][at(j, g.count, slot)] = fresh[gi][at(j, g.count, slot)];
      }
  }
  std::optional<BlockFailure> first;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    if (g.numel == 0) continue;
    for (index_t slot = 0; slot < g.count; ++slot) {
      auto const b = static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)]);
      for (std::size_t j = 0; j < g.modes.size(); ++j) {
        auto& m = g.modes[j];
        double const bound = inputs[gi][at(j, g.count, slot)];
        m.pending[static_cast<std::size_t>(slot)] =
            bound * bound_rounding<T>(g.numel / std::max<index_t>(m.d, 1), m.dtype);
        if ((first && first->block <= b) || skipped(b)) continue;
        std::string e = factor_bound_error<T>(
            j, m.dim, key_of(plan_.blocks[b].param), plan_.blocks[b].index, step_ + 1, bound,
            inputs[gi][at(j, g.count, slot) + static_cast<std::size_t>(g.count)],
            g.numel / std::max<index_t>(m.d, 1), m.dtype, s);
        if (!e.empty()) first = BlockFailure{b, std::move(e)};
      }
    }
  }
  return first;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::finish_step(std::vector<T*> const& params) {
  update<false>(params, step_scalars<T>(options_, step_, peak_lr_), nullptr, false);
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> auto ShampooBase<T, X>::skip_missing_gradients(std::vector<T*> const& params,
                                                                     std::vector<T const*>& grads)
        -> Skipped {
  Skipped out;
  skipped_.clear();
  for (std::size_t p = 0; p < grads.size(); ++p)
    if (grads[p] == nullptr) out.params.push_back(p);
  if (out.params.empty()) return out;
  if (averaging() && !z_ready_)
    tessel::detail::throw_error(tessel::detail::sentence(
        "with iterate averaging the first step needs the gradient of every parameter (it starts "
        "each block's sequence z at the parameter's values), but parameter ",
        key_of(out.params.front()), " has none."));
  if (zeros_.data() == nullptr) {
    index_t most = 0;
    for (std::size_t p = 0; p < plan_.num_params(); ++p) most = std::max(most, param_numel(p));
    zeros_ = B::template allocate<T>(most);
    assign(flat(zeros_.data(), most), T(0), executor_);
  }
  skipped_.assign(plan_.num_blocks(), 0);
  for (std::size_t b = 0; b < plan_.num_blocks(); ++b)
    skipped_[b] = grads[static_cast<std::size_t>(plan_.blocks[b].param)] == nullptr;
  for (std::size_t p : out.params) {
    grads[p] = zeros_.data();
    auto& values = out.values.emplace_back(static_cast<std::size_t>(param_numel(p)));
    B::to_host(executor_, params[p], param_numel(p), values.data());
  }
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for_each_state_buffer(gi, [&](auto const& buffer, index_t slot_bytes, auto&&...) {
      auto const* bytes = reinterpret_cast<std::byte const*>(buffer.data());
      for_each_skipped_slot(gi, [&](index_t slot) {
        auto& host = out.state.emplace_back(static_cast<std::size_t>(slot_bytes));
        B::to_host(executor_, bytes + slot * slot_bytes, slot_bytes, host.data());
      });
    });
    Group const& g = groups_[gi];
    for (auto const& m : g.modes)
      for_each_skipped_slot(
          gi, [&](index_t slot) { out.bounds.push_back(m.bound[static_cast<std::size_t>(slot)]); });
    for_each_skipped_slot(gi, [&](index_t slot) {
      out.failures.push_back(g.failures[static_cast<std::size_t>(slot)]);
    });
  }
  B::wait(executor_);
  return out;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::restore_skipped(Skipped const& skipped,
                                                              std::vector<T*> const& params) {
  if (skipped.params.empty()) return;
  std::size_t state = 0, bound = 0, failure = 0;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for_each_state_buffer(gi, [&](auto const& buffer, index_t slot_bytes, auto&&...) {
      auto* bytes = reinterpret_cast<std::byte*>(buffer.data());
      for_each_skipped_slot(gi, [&](index_t slot) {
        B::from_host(executor_, skipped.state[state++].data(), slot_bytes,
                     bytes + slot * slot_bytes);
      });
    });
    Group& g = groups_[gi];
    // A skipped slot's filtered gradient (and eigenvectors) went back to before the step; its
    // rotated copy did not.
    for_each_skipped_slot(gi, [&](index_t) { g.rotated_filtered_valid = false; });
    for (auto& m : g.modes)
      for_each_skipped_slot(gi, [&](index_t slot) {
        m.bound[static_cast<std::size_t>(slot)] = skipped.bounds[bound++];
      });
    for_each_skipped_slot(gi, [&](index_t slot) {
      g.failures[static_cast<std::size_t>(slot)] = skipped.failures[failure++];
    });
  }
  for (std::size_t i = 0; i < skipped.params.size(); ++i) {
    std::size_t const p = skipped.params[i];
    B::from_host(executor_, skipped.values[i].data(), param_numel(p), params[p]);
  }
  B::wait(executor_);
  skipped_.clear();
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> auto ShampooBase<T, X>::accumulate_step() -> std::optional<BlockFailure> {
  ++step_;
  if (averaging()) {
    IterateAveragingConfig const& av = options_.averaging;
    mu_y_ = static_cast<T>(av.train_interp_coeff);
    if (av.type == AveragingType::schedule_free) {
      double const power = std::pow(options_.lr, av.eval_coeff_lr_power);
      lr_sum_ += power;
      mu_x_ = static_cast<T>(lr_sum_ > 0.0 ? 1.0 - power / lr_sum_ : 0.0);
    } else {
      mu_x_ = static_cast<T>(av.eval_interp_coeff);
    }
  }
  StepScalars<T> const s = step_scalars<T>(options_, step_, peak_lr_);
  for (auto& g : groups_)
    for (auto& m : g.modes) std::swap(m.bound, m.pending);  // the accepted pre-check's bounds
  for (auto& g : groups_) accumulate(g, s);
  for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
    auto const& g = groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
    auto const& e = g.errors[static_cast<std::size_t>(plan_.blocks[b].slot)];
    if (!e.empty() && !skipped(b)) return BlockFailure{b, e};
  }
  return std::nullopt;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::build() {
  validate(options_);
  for (std::string const& w : ignored_options(options_)) tessel::detail::warn(w);
  peak_lr_ = options_.lr;
  groups_.resize(plan_.num_groups());
  auto const all_segments = segments(plan_);
  for (std::size_t gi = 0; gi < plan_.num_groups(); ++gi) {
    Group& g = groups_[gi];
    g.shape = plan_.groups[gi].shape;
    g.count = plan_.groups[gi].count;
    g.numel = plan_.groups[gi].numel();
    index_t const order = g.shape.rank();
    if (options_.preconditioner == PreconditionerType::spectral_descent && order != 2 &&
        g.count > 0 && g.numel > 0) {
      std::size_t b = 0;
      while (plan_.blocks[b].group != static_cast<index_t>(gi)) ++b;
      tessel::detail::throw_error(detail::sentence(
          "spectral descent orthogonalizes 2-D blocks, but ",
          detail::block_name(key_of(plan_.blocks[b].param), plan_.blocks[b].index), " has shape ",
          tessel::detail::shape_text(g.shape),
          "; with target_parameter_dimensionality 2 every parameter of rank 2 or more merges to "
          "2-D blocks, and 0-D and 1-D parameters cannot be orthogonalized."));
    }
    bool const factors = keeps_factors(options_.preconditioner);
    bool const corrected = options_.preconditioner == PreconditionerType::eigenvalue_corrected;
    bool const eigendecomposed = options_.preconditioner == PreconditionerType::eigendecomposed;
    // Eigendecomposed Shampoo decomposes whatever the root method says.
    RootConfig root_config = options_.root;
    if (eigendecomposed) root_config.method = RootMethod::eigen;
    for (index_t k = 0; factors && k < order; ++k) {
      // Eigenvalue-corrected Shampoo rotates every mode it does not ignore and takes no roots of
      // the factors.
      if (corrected && !changes_basis(options_.ignored_basis_change_dims, order, k)) continue;
      double const e =
          corrected ? 0.5 : inverse_exponent(options_.inverse_exponent_override, order, k);
      if (e == 0.0) continue;
      try {
        if (!corrected) check_root_arguments(1.0 / e, options_.epsilon, root_config);
      } catch (Error const& error) {
        tessel::detail::throw_error(detail::sentence("inverse_exponent_override gives dimension ",
                                                     k, " of ", order, "-D blocks the exponent ", e,
                                                     ", but ", error.what()));
      }
      typename Group::Mode m;
      m.dim = k;
      m.d = g.shape[k];
      m.root = 1.0 / e;
      m.dtype = options_.factor_matrix_dtype;
      m.packed = options_.use_symmetric_packing;
      index_t const nn = g.count * m.d * m.d;
      m.factors = B::template allocate<std::byte>(g.count * m.factor_numel() *
                                                  static_cast<index_t>(dtype_size(m.dtype)));
      m.inverse_roots = B::template allocate<T>(nn);
      std::vector<T> identities(static_cast<std::size_t>(nn), T(0));
      for (index_t i = 0; i < g.count * m.d; ++i)
        identities[static_cast<std::size_t>(i * m.d + i % m.d)] = T(1);  // slot i / d, row i % d
      B::from_host(executor_, identities.data(), nn, m.inverse_roots.data());
      if (eigendecomposed) {  // the identity's decomposition: Q = I, lambda = 1
        m.eigenvalues = B::template allocate<T>(g.count * m.d);
        assign(flat(m.eigenvalues.data(), g.count * m.d), T(1), executor_);
      }
      B::wait(executor_);                                      // identities is about to go
      m.bound.assign(static_cast<std::size_t>(g.count), 0.0);  // zero factors
      g.modes.push_back(std::move(m));
    }
    index_t const n = g.count * g.numel;
    if (options_.beta1 != 0.0) {
      g.filtered = B::template allocate<T>(n);
      g.direction = B::template allocate<T>(n);
    }
    if (options_.momentum != 0.0) g.momentum = B::template allocate<T>(n);
    if (keeps_grafting_state(options_.grafting.type)) g.grafting = B::template allocate<T>(n);
    if (options_.preconditioner == PreconditionerType::eigenvalue_corrected) {
      g.corrected = B::template allocate<T>(n);
      assign(flat(g.corrected.data(), n), T(0), executor_);
      if (options_.keep_rotated_filtered_grad && options_.beta1 != 0.0 && !g.modes.empty())
        g.rotated_filtered = B::template allocate<T>(n);
    }
    if (options_.kl_shampoo && takes_roots(options_.preconditioner) && g.modes.size() >= 2)
      g.kl = B::template allocate<T>(n * static_cast<index_t>(g.modes.size()));
    if (averaging()) {
      g.z = B::template allocate<T>(n);
      assign(flat(g.z.data(), n), T(0), executor_);  // z = y at the first step (z_ready_)
    }
    g.grad = B::template allocate<T>(n);
    g.search = B::template allocate<T>(n);
    g.spare = B::template allocate<T>(n);
    g.scale = B::template allocate<T>(g.count);
    g.per_slot = B::template allocate<double>(
        2 * g.count * std::max<index_t>(1, static_cast<index_t>(g.modes.size())));
    index_t all_d = 0;
    for (auto const& m : g.modes) all_d += m.d;
    g.row_norms = B::template allocate<double>(g.count * std::max<index_t>(all_d, 1));
    g.blocks.assign(static_cast<std::size_t>(g.count), 0);
    g.failures.assign(static_cast<std::size_t>(g.count), 0);
    g.errors.resize(static_cast<std::size_t>(g.count));
  }
  for (auto const& s : all_segments)
    groups_[static_cast<std::size_t>(s.group)].segments.push_back(s);
  update_offsets_.assign(plan_.num_blocks() + 1, 0);
  for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
    Group& g = groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
    g.blocks[static_cast<std::size_t>(plan_.blocks[b].slot)] = static_cast<index_t>(b);
    update_offsets_[b + 1] = update_offsets_[b] + g.numel;
  }
  grad_flags_ = B::template allocate<T>(static_cast<index_t>(plan_.num_params()));
  B::wait(executor_);
}

// The passes over segments are defined out of the class too: a program with a run-time plan and
// TESSEL_SHAMPOO_PREBUILT compiles none of them.
template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::gather_runtime_segments(
        std::vector<T*> const& params, std::vector<T const*> const& grads,
        StepScalars<T> const& s) {
  for (auto& g : groups_)
    for (auto const& seg : g.segments)
      gather_segment(g, runtime_segment(seg, g.shape), params, grads, s);
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void ShampooBase<T, X>::update_runtime_segments(
        std::vector<T*> const& params, StepScalars<T> const& s, std::vector<T*> const& direction,
        std::vector<T*> const& out, bool into_updates, bool stage_momentum) {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    if (!direction[gi]) continue;
    for (auto const& seg : groups_[gi].segments)
      update_segment(groups_[gi], runtime_segment(seg, groups_[gi].shape), params, s, direction[gi],
                     out[gi], into_updates, stage_momentum);
  }
}

template <class T, PlanTag P, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void Shampoo<T, P, X>::gather_segments(std::vector<T*> const& params,
                                                             std::vector<T const*> const& grads,
                                                             StepScalars<T> const& s) {
  if constexpr (is_static_plan_v<P>) {
    if (s.l2 == T(0)) {
      for_each_static_segment(
          [&](Group& g, auto const& seg) { this->copy_gradient_segment(g, seg, grads); });
      return;
    }
  }
  this->gather_runtime_segments(params, grads, s);
}

template <class T, PlanTag P, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void Shampoo<T, P, X>::update_segments(
        std::vector<T*> const& params, StepScalars<T> const& s, std::vector<T*> const& direction,
        std::vector<T*> const& out, bool into_updates, bool stage_momentum) {
  if constexpr (is_static_plan_v<P>) {
    if (!into_updates && this->options_.momentum == 0.0 && !this->averaging()) {
      for_each_static_segment([&](Group& g, auto const& seg) {
        auto const gi = static_cast<std::size_t>(&g - this->groups_.data());
        if (direction[gi]) this->plain_update_segment(g, seg, params, s, direction[gi]);
      });
      return;
    }
  }
  this->update_runtime_segments(params, s, direction, out, into_updates, stage_momentum);
}

}  // namespace tessel::shampoo

// The tessel::shampoo_prebuilt library (CMake; src/shampoo_prebuilt*.cpp) compiles the common
// optimizers once. A translation unit built with TESSEL_SHAMPOO_PREBUILT (the library's targets
// get it) links to them instead of compiling the step itself, which is most of a Shampoo
// program's compile time (docs/benchmarks.md). A static plan on the default executor then compiles
// only its own passes over segments (Shampoo<T, static_plan<p>>'s two overrides); another executor
// compiles the whole step where it is used, as without the library.
#if defined(TESSEL_SHAMPOO_PREBUILT)
namespace tessel::shampoo {
extern template class ShampooBase<float, exec::Auto>;
extern template class ShampooBase<double, exec::Auto>;
extern template class Shampoo<float>;
extern template class Shampoo<double>;
}  // namespace tessel::shampoo
#endif
