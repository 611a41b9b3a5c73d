// ShampooStep<T, F, X>: a Shampoo step with preconditioner family F (preconditioners/): the
// family-independent half StepCore<T, X> (step_core.hpp) composed with F at compile time, so that a
// program instantiates the one family it names. The step, in order:
//   1. checks (before anything is written): finite gradients, gathered into each group's slots;
//      the family prepares what its factors accumulate; the overflow pre-check (step/bounds.hpp);
//   2. accumulates every group: the grafting accumulator and filtered gradient, then the family's
//      statistics and, on amortized steps, its amortized work (a slot that fails refuses the step
//      before any parameter moves);
//   3. updates: each block's direction (the family's, or the grafted one alone before
//      preconditioning starts), rescaled to the grafted norm, decayed, given momentum or averaged,
//      into the parameters (or into a distributed step's updates).
// The passes over a plan's segments are BasicShampoo<T, F, P, X>'s (basic_shampoo.hpp), the one
// part that depends on the plan's type.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../preconditioners/preconditioner.hpp"
#include "step_core.hpp"

namespace tessel::shampoo {

template <class T, class X>
requires exec::Executor<X>
class DistributedShampoo;

template <class T, class X>
requires exec::Executor<X>
class GroupedShampoo;

namespace detail {

// The options a family F steps with: the family named by the type, which options may leave at the
// default (shampoo) or name again, but not contradict.
template <class F>
Options options_for(Options o) {
  if constexpr (requires { F::type; }) {
    if (o.preconditioner != Options{}.preconditioner && o.preconditioner != F::type)
      tessel::detail::throw_error(
          sentence("the options name the preconditioner ", preconditioner_name(o.preconditioner),
                   " but this optimizer's family is ", preconditioner_name(F::type),
                   "; leave Options::preconditioner at its default or name the family's."));
    if (o.kl_shampoo && !F::kl)
      tessel::detail::throw_error(sentence(
          "the options set kl_shampoo but this optimizer's family (", preconditioner_name(F::type),
          ") has no KL factor estimate; name KlShampoo<...> or "
          "KlSoap."));
    o.preconditioner = F::type;
    o.kl_shampoo = F::kl;
  }
  return o;
}

template <class F>
F make_family(Options const& o) {
  if constexpr (std::constructible_from<F, Options const&>)
    return F(o);
  else
    return F{};
}

}  // namespace detail

template <class T, class F, class X>
class ShampooStep : public StepCore<T, X> {
  using Core = StepCore<T, X>;

 protected:
  using typename Core::B;
  using typename Core::Ctx;
  using typename Core::Group;
  using State = typename F::template State<T, X>;

 public:
  // Virtual: GroupedShampoo owns each group's BasicShampoo (of its plan kind) through this base.
  virtual ~ShampooStep() = default;

  using family_type = F;

  F const& family() const noexcept { return family_; }

  // Iterate averaging (Options::averaging): eval moves the parameters to the averaged sequence x =
  // y + (1 - 1 / mu_y) (z - y) for evaluation, train moves them back to y (Distributed Shampoo's
  // eval() and train()); step() is refused in eval mode. Without iterate averaging, or in the mode
  // asked for already, nothing changes. params as for step().
  void eval(std::vector<std::span<T>> const& params) {
    this->switch_mode(Core::pointers_of(params), false);
  }
  void train(std::vector<std::span<T>> const& params) {
    this->switch_mode(Core::pointers_of(params), true);
  }
  void eval(std::vector<T*> const& params) { this->switch_mode(params, false); }
  void train(std::vector<T*> const& params) { this->switch_mode(params, true); }

  // One optimization step: params[i] holds parameter i of the plan (contiguous, row-major, in its
  // planned shape, in the executor's memory) and is updated in place; grads[i] is its gradient.
  // Everything is validated before anything is written (counts, sizes, finite gradients, and
  // gradients that would overflow a factor matrix: step/bounds.hpp). A NaN or Inf in a factor
  // matrix (a loaded state) or an inverse root, or more failed amortized computations in a row
  // than tolerated, throws tessel::Error naming the parameter and block after the factors of this
  // step were accumulated but before any parameter is changed.
  // A parameter without a gradient this step (an empty span, a null pointer: PyTorch's `grad is
  // None`) is skipped as Distributed Shampoo skips it: its blocks' state and values stay as they
  // were, while the step count (bias correction, precondition_frequency) advances for all.
  void step(std::span<std::span<T> const> params, std::span<std::span<T const> const> grads) {
    this->check_step_arguments(params, grads);
    auto const ptrs = Core::pointers(params, grads);
    step(ptrs.first, ptrs.second);
  }
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

  // ---- inspection (copies to the host) ----

  // Modes of block b that have a Kronecker factor, in order.
  std::vector<index_t> preconditioned_dims(std::size_t b) const {
    std::vector<index_t> out;
    if (auto const* kf = kronecker_of(b))
      for (auto const& m : kf->modes) out.push_back(m.dim);
    return out;
  }
  // The roots 1 / exponent of those modes.
  std::vector<double> roots(std::size_t b) const {
    std::vector<double> out;
    if (auto const* kf = kronecker_of(b))
      for (auto const& m : kf->modes) out.push_back(m.root);
    return out;
  }
  // Factor matrix j of block b in T (dequantized, unpacked), row-major d x d.
  std::vector<T> factor_matrix(std::size_t b, std::size_t j) const {
    return mode_of(b, j).factor_matrix(this->context(), this->plan_.blocks[b].slot, j);
  }
  // The family's matrix j of block b: Shampoo's inverse root, or the eigenvectors of the families
  // that keep them; row-major d x d.
  std::vector<T> inverse_root(std::size_t b, std::size_t j) const {
    return mode_of(b, j).matrix(this->context(), this->plan_.blocks[b].slot, j);
  }
  index_t failed_amortized_computations(std::size_t b) const {
    return group_of(b).failures[static_cast<std::size_t>(this->plan_.blocks[b].slot)];
  }

  // ---- state ----

  // The state under Distributed Shampoo's key paths (compose/step_core_state.hpp); the family's
  // buffers under the keys its header names (e.g. [p, "block_i", "shampoo", "factor_matrices", j]).
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

  ShampooStep(Plan plan, Options options, X executor, ParamKeys keys)
      : Core(std::move(plan), detail::options_for<F>(std::move(options)), executor,
             std::move(keys)),
        family_(detail::make_family<F>(this->options_)) {
    build();
  }
  ShampooStep(ShampooStep&&) noexcept = default;
  ShampooStep& operator=(ShampooStep&&) noexcept = default;

  // The passes over segments, defined by BasicShampoo<T, F, P, X> for its plan: every block's
  // gradient into its group's slots; every block of group gi moved along direction[gi] (skipped
  // where null), into the parameters, or with into_updates into out[gi].
  virtual void gather_segments(std::vector<T*> const& params, std::vector<T const*> const& grads,
                               StepScalars<T> const& s) = 0;
  virtual void update_segments(std::vector<T*> const& params, StepScalars<T> const& s,
                               std::vector<T*> const& direction, std::vector<T*> const& out,
                               bool into_updates, bool stage_momentum) = 0;

  // The groups' shared state and the family's (out of the class, as every entry point to the
  // step: a translation unit that declares the instantiation extern compiles none of them).
  void build();

  // f(StateBuffer) for every state buffer of group gi: the family's, then the shared ones.
  template <class Fn>
  void for_each_state_buffer(std::size_t gi, Fn&& f) const {
    Group const& g = this->groups_[gi];
    family_.for_each_buffer(this->context(), g, states_[gi], f);
    this->for_each_core_buffer(g, f);
  }
  auto each_buffer() const {
    return [this](std::size_t gi, auto&& f) { this->for_each_state_buffer(gi, f); };
  }

  index_t check_state_dict(StateDict const& state) const;
  void assign_state_dict(StateDict const& state, index_t step);

  // ---- the step (shampoo_step_run.hpp) ----

  // The first block (in plan order) whose step failed, and the error.
  struct BlockFailure {
    std::size_t block = 0;
    std::string message;
  };

  // The checks, then the step; throws the first failure. The parameters are updated when
  // `updates` is null, else the updates are written there (compute_updates).
  template <bool IntoUpdates>
  void run_step(std::vector<T*> const& params, std::vector<T const*> const& grads, T* updates) {
    if constexpr (IntoUpdates) this->check_updates_express_the_step();
    if (auto failure = check_gradients_and_bounds(params, grads))
      tessel::detail::throw_error(failure->message);
    if (auto failure = prepare_updates<IntoUpdates>(params, grads, updates, false))
      tessel::detail::throw_error(failure->message);
  }

  // Before anything is written: finite gradients (throws, naming the first bad element) and the
  // overflow pre-check (returns the first block in plan order whose factors the step could
  // overflow). Gathers every block's gradient into its group (the step then starts from there).
  std::optional<BlockFailure> check_gradients_and_bounds(std::vector<T*> const& params,
                                                         std::vector<T const*> const& grads);

  // accumulate_step, then update: into the parameters when `updates` is null, else into updates
  // (at update_offset). With stage_momentum the new momentum goes to a staging buffer that
  // commit_momentum() makes current, so a distributed step can drop it when another rank's block
  // failed. (IntoUpdates says which at compile time, so a program that only calls step() does not
  // instantiate the other.)
  template <bool IntoUpdates>
  std::optional<BlockFailure> prepare_updates(std::vector<T*> const& params,
                                              std::vector<T const*> const&, T* updates,
                                              bool stage_momentum) {
    if (auto failure = accumulate_step()) return failure;
    update<IntoUpdates>(params, step_scalars<T>(this->options_, this->step_, this->peak_lr_),
                        updates, stage_momentum);
    return std::nullopt;
  }

  // The second half of a step() whose accumulate_step succeeded: the parameters move.
  void finish_step(std::vector<T*> const& params);

  // Counts the step, takes the pre-check's bounds and accumulates every block; returns the first
  // failure in plan order. Nothing is updated.
  std::optional<BlockFailure> accumulate_step();

  // Precondition, graft and update every block.
  template <bool IntoUpdates>
  void update(std::vector<T*> const& params, StepScalars<T> const& s, T* updates,
              bool stage_momentum);

  // The direction each block of group gi moves along, and the per-slot scale (the grafting
  // rescale, or 1). Returns where the direction is.
  T* search_direction(std::size_t gi, StepScalars<T> const& s);

  // ---- parameters without a gradient (shampoo_step_skip.hpp) ----

  // What the blocks of the parameters without a gradient held before a step. Distributed Shampoo
  // leaves those blocks out of its step; tessel steps a group's blocks as one batch, so it runs
  // them on a zero gradient and then puts back their state and values (copied through the host:
  // the cost is the skipped blocks' state, paid only on steps that skip).
  struct Skipped {
    std::vector<std::size_t> params;            // the parameters without a gradient
    std::vector<std::vector<T>> values;         // their values
    std::vector<std::vector<std::byte>> state;  // their blocks' slots, state buffer order
    std::vector<double> bounds;                 // their slots' factor bounds, mode by mode
    std::vector<index_t> failures;              // their slots' failed computations in a row
  };

  // Points each missing gradient (null) of `grads` at zeros and saves what its blocks hold; an
  // empty Skipped when every gradient is there. Throws before anything is changed when the step
  // cannot skip.
  Skipped skip_missing_gradients(std::vector<T*> const& params, std::vector<T const*>& grads);
  // Puts back what skip_missing_gradients saved (after the step, or when it threw).
  void restore_skipped(Skipped const& skipped, std::vector<T*> const& params);
  // Each slot of group gi whose block is skipped this step, in order.
  template <class Fn>
  void for_each_skipped_slot(std::size_t gi, Fn&& f) const {
    Group const& g = this->groups_[gi];
    for (index_t slot = 0; slot < g.count; ++slot)
      if (this->skipped_[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])])
        f(slot);
  }
  bool skipped(std::size_t b) const { return !this->skipped_.empty() && this->skipped_[b]; }

  // ---- blocks ----

  Group const& group_of(std::size_t b) const {
    return this->groups_[static_cast<std::size_t>(this->plan_.blocks[b].group)];
  }
  KroneckerFactors<T, X> const* kronecker_of(std::size_t b) const {
    return family::kronecker<T, X>(states_[static_cast<std::size_t>(this->plan_.blocks[b].group)]);
  }
  KroneckerFactors<T, X> const& mode_of(std::size_t b, std::size_t j) const {
    auto const* kf = kronecker_of(b);
    std::size_t const modes = kf ? kf->modes.size() : 0;
    if (j >= modes)
      tessel::detail::throw_error(tessel::detail::sentence(
          "block ", b, " has ", modes, " preconditioned modes (factor matrices); there is no ",
          "factor matrix ", j, "."));
    return *kf;
  }

  F family_;
  std::vector<State> states_;  // per batch group
};

}  // namespace tessel::shampoo

#include "shampoo_step_run.hpp"
#include "shampoo_step_skip.hpp"
#include "shampoo_step_state.hpp"
