// ShampooStep's step (declared in shampoo_step.hpp): the pre-check, the accumulation and the
// update, out of the class so that a translation unit that declares an instantiation extern
// compiles none of them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shampoo_step.hpp"

namespace tessel::shampoo {

template <class T, class F, class X>
void ShampooStep<T, F, X>::step(std::vector<T*> const& params, std::vector<T const*> const& grads) {
  this->check_counts(params.size(), grads.size());
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

template <class T, class F, class X>
void ShampooStep<T, F, X>::compute_updates(std::span<std::span<T> const> params,
                                           std::span<std::span<T const> const> grads,
                                           std::span<T> updates) {
  this->check_step_arguments(params, grads, "compute_updates");
  if (updates.size() != static_cast<std::size_t>(this->update_numel()))
    tessel::detail::throw_error(
        tessel::detail::sentence("compute_updates needs room for ", this->update_numel(),
                                 " update values (one per element of ", this->plan_.num_blocks(),
                                 " blocks), got ", updates.size(), "."));
  auto const ptrs = Core::pointers(params, grads);
  run_step<true>(ptrs.first, ptrs.second, updates.data());
}

template <class T, class F, class X>
void ShampooStep<T, F, X>::compute_updates(std::vector<T*> const& params,
                                           std::vector<T const*> const& grads, T* updates) {
  this->check_counts(params.size(), grads.size());
  this->require_every_gradient(grads, "compute_updates");
  run_step<true>(params, grads, updates);
}

template <class T, class F, class X>
void ShampooStep<T, F, X>::finish_step(std::vector<T*> const& params) {
  update<false>(params, step_scalars<T>(this->options_, this->step_, this->peak_lr_), nullptr,
                false);
}

template <class T, class F, class X>
auto ShampooStep<T, F, X>::check_gradients_and_bounds(std::vector<T*> const& params,
                                                      std::vector<T const*> const& grads)
    -> std::optional<BlockFailure> {
  using KF = KroneckerFactors<T, X>;
  StepScalars<T> const s = step_scalars<T>(this->options_, this->step_ + 1, this->peak_lr_);
  Ctx const c = this->context();
  auto& groups = this->groups_;
  this->request_finite_flags(grads);
  gather_segments(params, grads, s);
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    family::prepare_factor_inputs(family_, c, groups[gi], states_[gi]);
  auto input_of = [&](std::size_t gi) {
    return [&, gi](std::size_t j) {
      return family::factor_input(family_, groups[gi], states_[gi], j);
    };
  };
  // Row norms of what every mode's factor accumulates, max_i r_i per slot.
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    if (KF* kf = family::kronecker<T, X>(states_[gi]); kf && groups[gi].numel != 0)
      kf->request_row_norms(c, groups[gi], input_of(gi));
  std::vector<T> const flags = this->finite_flags();
  auto read_per_slot = [&](std::vector<std::vector<double>>& inputs) {
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      KF const* kf = family::kronecker<T, X>(states_[gi]);
      inputs[gi].resize(2 * (kf ? kf->modes.size() : 0) *
                        static_cast<std::size_t>(groups[gi].count));
      B::to_host(this->executor_, groups[gi].per_slot.data(),
                 static_cast<index_t>(inputs[gi].size()), inputs[gi].data());
    }
    B::wait(this->executor_);
  };
  std::vector<std::vector<double>> inputs(groups.size());
  read_per_slot(inputs);
  this->check_finite(flags, grads);
  // The cheap bound per slot; the tight one for every mode where some slot's cheap one fails.
  std::vector<std::vector<char>> tight(groups.size());
  bool any_tight = false;
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    if (KF* kf = family::kronecker<T, X>(states_[gi]); kf && groups[gi].numel != 0)
      any_tight = kf->cheap_bounds(c, groups[gi], inputs[gi], tight[gi], s) || any_tight;
  if (any_tight) {
    // Only the modes that ran entry_bounds take the tight bounds read back.
    std::vector<std::vector<double>> fresh(groups.size());
    read_per_slot(fresh);
    for (std::size_t gi = 0; gi < groups.size(); ++gi)
      for (std::size_t j = 0; j < tight[gi].size(); ++j)
        if (tight[gi][j])
          for (index_t slot = 0; slot < groups[gi].count; ++slot)
            inputs[gi][KF::at(j, groups[gi].count, slot)] =
                fresh[gi][KF::at(j, groups[gi].count, slot)];
  }
  std::optional<BlockFailure> first;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    Group const& g = groups[gi];
    KF* kf = family::kronecker<T, X>(states_[gi]);
    if (!kf || g.numel == 0) continue;
    kf->decide_bounds(c, g, inputs[gi], this->step_ + 1, s, [&](index_t slot, auto const& error) {
      auto const b = static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)]);
      if ((first && first->block <= b) || skipped(b)) return;
      std::string e = error();
      if (!e.empty()) first = BlockFailure{b, std::move(e)};
    });
  }
  return first;
}

template <class T, class F, class X>
auto ShampooStep<T, F, X>::accumulate_step() -> std::optional<BlockFailure> {
  ++this->step_;
  this->advance_averaging();
  StepScalars<T> const s = step_scalars<T>(this->options_, this->step_, this->peak_lr_);
  Ctx const c = this->context();
  for (auto& state : states_)
    if (auto* kf = family::kronecker<T, X>(state)) kf->accept_bounds();
  for (std::size_t gi = 0; gi < this->groups_.size(); ++gi) {
    Group& g = this->groups_[gi];
    std::fill(g.errors.begin(), g.errors.end(), std::string());
    if (g.empty()) continue;
    index_t const n = g.count * g.numel;
    if (keeps_grafting_state(this->options_.grafting.type))
      stages::accumulate_grafting(this->executor_, Ctx::flat(g.grafting.data(), n),
                                  Ctx::flat(g.grad.data(), n), s);
    if (this->options_.beta1 != 0.0)
      stages::filter_gradient(this->executor_, Ctx::flat(g.filtered.data(), n),
                              Ctx::flat(g.grad.data(), n), Ctx::flat(g.direction.data(), n), s);
    family_.accumulate(c, g, states_[gi], s);
  }
  Plan const& plan = this->plan_;
  for (std::size_t b = 0; b < plan.num_blocks(); ++b) {
    auto const& g = this->groups_[static_cast<std::size_t>(plan.blocks[b].group)];
    auto const& e = g.errors[static_cast<std::size_t>(plan.blocks[b].slot)];
    if (!e.empty() && !skipped(b)) return BlockFailure{b, e};
  }
  return std::nullopt;
}

template <class T, class F, class X>
template <bool IntoUpdates>
void ShampooStep<T, F, X>::update(std::vector<T*> const& params, StepScalars<T> const& s,
                                  T* updates, bool stage_momentum) {
  auto& groups = this->groups_;
  std::vector<T*> direction(groups.size(), nullptr), out(groups.size(), nullptr);
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    Group& g = groups[gi];
    if (g.empty()) continue;
    direction[gi] = search_direction(gi, s);
    out[gi] = direction[gi] == g.spare.data() ? g.search.data() : g.spare.data();
  }
  update_segments(params, s, direction, out, IntoUpdates, stage_momentum);
  if (this->averaging()) this->z_ready_ = true;
  if constexpr (IntoUpdates) {
    Plan const& plan = this->plan_;
    for (std::size_t b = 0; b < plan.num_blocks(); ++b) {
      auto const gi = static_cast<std::size_t>(plan.blocks[b].group);
      Group const& g = groups[gi];
      if (!out[gi]) continue;
      assign(Ctx::flat(updates + this->update_offsets_[b], g.numel),
             Ctx::flat(out[gi] + plan.blocks[b].slot * g.numel, g.numel), this->executor_);
    }
  }
}

template <class T, class F, class X>
T* ShampooStep<T, F, X>::search_direction(std::size_t gi, StepScalars<T> const& s) {
  Group& g = this->groups_[gi];
  X const& x = this->executor_;
  index_t const n = g.count * g.numel;
  T* const filtered_or_grad = this->options_.beta1 != 0.0 ? g.direction.data() : g.grad.data();
  GraftingType const grafting = this->options_.grafting.type;
  auto const scale = Ctx::flat(g.scale.data(), g.count);
  // The accumulator, or for SGD the gradient itself (see grafting_direction).
  T* accumulator = keeps_grafting_state(grafting) ? g.grafting.data() : filtered_or_grad;
  if (s.grafting_only) {
    assign(
        Ctx::flat(g.search.data(), n),
        grafting_direction(Ctx::flat(accumulator, n), Ctx::flat(filtered_or_grad, n), s.grafting),
        x);
    assign(scale, T(1), x);
    return g.search.data();
  }
  T* const cur = family_.direction(this->context(), g, states_[gi], filtered_or_grad, s);
  if (grafting == GraftingType::none) {
    assign(scale, T(1), x);
    return cur;
  }
  auto const graft2 = Ctx::flat(g.per_slot.data(), g.count);
  auto const shampoo2 = Ctx::flat(g.per_slot.data() + g.count, g.count);
  stages::squared_norms(
      x, graft2,
      grafting_direction(Ctx::rows(accumulator, g), Ctx::rows(filtered_or_grad, g), s.grafting));
  stages::squared_norms(x, shampoo2, Ctx::rows(cur, g));
  stages::grafting_scale(x, scale, graft2, shampoo2, T(0));
  return cur;
}

}  // namespace tessel::shampoo
