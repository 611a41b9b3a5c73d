// StepCore<T, X>: the half of a Shampoo step that is the same for every preconditioner family,
// compiled once per element type and executor whatever the families a program uses: the plan,
// options and step count, each batch group's shared state (state/group_state.hpp), the argument
// checks, the passes over a parameter's segments (gathering its blocks' gradients, moving its
// blocks along their update: plain, with momentum, or with iterate averaging), eval()/train(), and
// the state dictionary's keys around the buffers a step names. The family's half is
// basic_shampoo.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/warning.hpp"
#include "../../exec/executors.hpp"
#include "../../exec/host.hpp"
#include "../../exec/memory.hpp"
#include "../options_check.hpp"
#include "../plan/geometry.hpp"
#include "../plan/plan.hpp"
#include "../plan/segments.hpp"
#include "../state/group_state.hpp"
#include "../state/state_dict.hpp"
#include "../state/symmetric_packing.hpp"
#include "../step/context.hpp"
#include "../step/grafting.hpp"
#include "../step/scalars.hpp"
#include "../step/stages.hpp"

namespace tessel::shampoo {

// The index each parameter of a plan has in the caller's numbering, used in error sentences and
// state-dict keys (parameter groups number their parameters across groups: param_groups.hpp).
// Empty: parameter p is p.
struct ParamKeys {
  std::vector<index_t> keys;
};

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> class StepCore {
 protected:
  using B = exec::Memory<X>;
  using Group = GroupState<T, X>;
  using Ctx = StepContext<T, X>;

 public:
  using value_type = T;
  using executor_type = X;

  StepCore(StepCore const&) = delete;
  StepCore& operator=(StepCore const&) = delete;

  Plan const& plan() const noexcept { return plan_; }
  Options const& options() const noexcept { return options_; }
  X const& executor() const noexcept { return executor_; }
  index_t step_count() const noexcept { return step_; }
  bool training() const noexcept { return training_; }

  // The learning rate can follow a schedule between steps.
  void set_lr(double lr) {
    if (!(lr >= 0.0))
      tessel::detail::throw_error(detail::sentence("lr must be >= 0, got ", lr, "."));
    options_.lr = lr;
  }

  // Elements of all blocks: the size of compute_updates' output.
  index_t update_numel() const noexcept { return update_offsets_.back(); }
  // Where block b's update starts in compute_updates' output (blocks in plan order).
  index_t update_offset(std::size_t b) const { return update_offsets_[b]; }

 protected:
  // @pre validate(options) passes (checked by build_core; tessel::Error otherwise)
  StepCore(Plan plan, Options options, X executor, ParamKeys keys)
      : plan_(std::move(plan)),
        options_(std::move(options)),
        executor_(executor),
        keys_(std::move(keys.keys)) {
    if (!keys_.empty() && keys_.size() != plan_.num_params())
      tessel::detail::throw_error(tessel::detail::sentence("ParamKeys names ", keys_.size(),
                                                           " parameters but the plan has ",
                                                           plan_.num_params(), "."));
  }
  StepCore(StepCore&&) noexcept = default;
  StepCore& operator=(StepCore&&) noexcept = default;
  ~StepCore() = default;

  Ctx context() const { return Ctx{executor_, options_, plan_, keys_, step_}; }

  // ---- construction ----

  // Validates the options, warns of the ones without effect, and lays out the groups: shapes,
  // slots, segments and update offsets. The buffers come with allocate_core once the family has
  // said how many modes each group preconditions.
  void build_core() {
    validate(options_);
    for (std::string const& w : ignored_options(options_)) tessel::detail::warn(w);
    peak_lr_ = options_.lr;
    groups_.resize(plan_.num_groups());
    for (std::size_t gi = 0; gi < plan_.num_groups(); ++gi) {
      Group& g = groups_[gi];
      g.shape = plan_.groups[gi].shape;
      g.count = plan_.groups[gi].count;
      g.numel = plan_.groups[gi].numel();
      g.blocks.assign(static_cast<std::size_t>(g.count), 0);
      g.failures.assign(static_cast<std::size_t>(g.count), 0);
      g.errors.resize(static_cast<std::size_t>(g.count));
    }
    for (auto const& s : segments(plan_))
      groups_[static_cast<std::size_t>(s.group)].segments.push_back(s);
    update_offsets_.assign(plan_.num_blocks() + 1, 0);
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
      Group& g = groups_[static_cast<std::size_t>(plan_.blocks[b].group)];
      g.blocks[static_cast<std::size_t>(plan_.blocks[b].slot)] = static_cast<index_t>(b);
      update_offsets_[b + 1] = update_offsets_[b] + g.numel;
    }
    grad_flags_ = B::template allocate<T>(static_cast<index_t>(plan_.num_params()));
  }

  // Group g's shared buffers, for a family that preconditions `modes` of its modes whose extents
  // sum to `extents`.
  void allocate_core(Group& g, index_t modes, index_t extents) {
    index_t const n = g.count * g.numel;
    if (options_.beta1 != 0.0) {
      g.filtered = B::template allocate<T>(n);
      g.direction = B::template allocate<T>(n);
    }
    if (options_.momentum != 0.0) g.momentum = B::template allocate<T>(n);
    if (keeps_grafting_state(options_.grafting.type)) g.grafting = B::template allocate<T>(n);
    if (averaging()) {
      g.z = B::template allocate<T>(n);
      assign(Ctx::flat(g.z.data(), n), T(0), executor_);  // z = y at the first step (z_ready_)
    }
    g.grad = B::template allocate<T>(n);
    g.search = B::template allocate<T>(n);
    g.spare = B::template allocate<T>(n);
    g.scale = B::template allocate<T>(g.count);
    g.per_slot = B::template allocate<double>(2 * g.count * std::max<index_t>(1, modes));
    g.row_norms = B::template allocate<double>(g.count * std::max<index_t>(extents, 1));
  }

  // A distributed step stages momentum: its buffers, made once.
  void prepare_staging() {
    if (options_.momentum == 0.0) return;
    for (auto& g : groups_)
      if (!g.staged_momentum.data() && g.count * g.numel > 0)
        g.staged_momentum = B::template allocate<T>(g.count * g.numel);
  }
  void commit_momentum() {
    for (auto& g : groups_)
      if (options_.momentum != 0.0) std::swap(g.momentum, g.staged_momentum);
  }

  // ---- arguments ----

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

  using Pointers = std::pair<std::vector<T*>, std::vector<T const*>>;

  static Pointers pointers(std::span<std::span<T> const> params,
                           std::span<std::span<T const> const> grads) {
    Pointers out;
    for (auto const& p : params) out.first.push_back(p.data());
    for (auto const& g : grads) out.second.push_back(g.data());
    return out;
  }
  static std::vector<T*> pointers_of(std::vector<std::span<T>> const& params) {
    std::vector<T*> out;
    for (auto const& p : params) out.push_back(p.data());
    return out;
  }

  // ---- gradients ----

  // Per parameter: sum(grad * 0), NaN exactly when the gradient holds a NaN or an Inf; read back
  // with the pre-check's other values (one wait), then checked by check_finite.
  void request_finite_flags(std::vector<T const*> const& grads) {
    for (std::size_t p = 0; p < plan_.num_params(); ++p) {
      index_t const n = param_numel(p);
      auto const g = B::view(grads[p], make_layout(make_shape(n)));
      assign(Ctx::flat(grad_flags_.data() + p, 1), sum(g * T(0), keep), executor_);
    }
  }
  std::vector<T> finite_flags() const {
    std::vector<T> flags(plan_.num_params());
    B::to_host(executor_, grad_flags_.data(), static_cast<index_t>(flags.size()), flags.data());
    return flags;
  }
  // @pre the executor was waited for since finite_flags
  void check_finite(std::vector<T> const& flags, std::vector<T const*> const& grads) const {
    for (std::size_t p = 0; p < flags.size(); ++p)
      if (!(flags[p] == T(0))) throw_non_finite_gradient(p, grads[p]);
  }
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

  // ---- iterate averaging ----

  // This step's mu_x and mu_y (and the schedule-free sum of lr^p). @pre step_ counts this step
  void advance_averaging() {
    if (!averaging()) return;
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

  // eval() and train(): y and x = y + (1 - 1 / mu_y) (z - y) into each other, segment by segment.
  void switch_mode(std::vector<T*> const& params, bool to_train);

  // ---- passes over segments ----

  // Every block's gradient (plus s.l2 times its parameter) into its group's slots.
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
  // Block by block along direction: into the parameters, or with into_updates into out (a
  // distributed step's updates); stage_momentum writes the new momentum to the staging buffer.
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
  // static plan's where constant extents gain nothing worth an instantiation per segment shape.
  void gather_runtime_segments(std::vector<T*> const& params, std::vector<T const*> const& grads,
                               StepScalars<T> const& s) {
    for (auto& g : groups_)
      for (auto const& seg : g.segments)
        gather_segment(g, runtime_segment(seg, g.shape), params, grads, s);
  }
  void update_runtime_segments(std::vector<T*> const& params, StepScalars<T> const& s,
                               std::vector<T*> const& direction, std::vector<T*> const& out,
                               bool into_updates, bool stage_momentum) {
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      if (!direction[gi]) continue;
      for (auto const& seg : groups_[gi].segments)
        update_segment(groups_[gi], runtime_segment(seg, groups_[gi].shape), params, s,
                       direction[gi], out[gi], into_updates, stage_momentum);
    }
  }

  // ---- state buffers ----

  // f(StateBuffer) for group g's shared buffers that a state dictionary holds.
  template <class F>
  void for_each_core_buffer(Group const& g, F&& f) const {
    index_t const bytes = g.numel * static_cast<index_t>(sizeof(T));
    std::vector<index_t> const block(g.shape.begin(), g.shape.end());
    auto each = [&](auto const& buffer, char const* name) {
      f(StateBuffer(buffer, bytes, {name}, dtype_of_v<T>, block, block));
    };
    if (averaging()) each(g.z, "weight_buffer");
    if (options_.beta1 != 0.0) each(g.filtered, "filtered_grad");
    if (options_.momentum != 0.0) each(g.momentum, "momentum_buffer");
    if (keeps_grafting_state(options_.grafting.type)) each(g.grafting, "adagrad");
  }

  // The state key of slot `slot` of group g under [param, "block_i", tail...].
  StateKey state_key(Group const& g, index_t slot, std::vector<std::string> const& tail) const {
    BlockPlan const& bp =
        plan_.blocks[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])];
    StateKey k{std::to_string(key_of(bp.param)), "block_" + std::to_string(bp.index)};
    k.insert(k.end(), tail.begin(), tail.end());
    return k;
  }

  // ---- state dictionaries (step_core_state.hpp) ----
  // each(gi, f) calls f(StateBuffer) for every buffer of group gi that a state dictionary holds,
  // the family's and for_each_core_buffer's, in one fixed order.

  // Every key of the state with its dtype and shape, the data zero-filled.
  template <class Each>
  StateDict expected_state(Each const& each) const;
  template <class Each>
  StateDict state_dict_of(Each const& each) const;
  // load_state_dict's checks: throws unless `state` fits; returns its step.
  template <class Each>
  index_t check_state_dict_of(StateDict const& state, Each const& each) const;
  // load_state_dict's copy. @pre check_state_dict_of(state, each) returned step
  template <class Each>
  void assign_state_dict_of(StateDict const& state, index_t step, Each const& each);

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

}  // namespace tessel::shampoo

#include "step_core_state.hpp"
