// Parameter groups: one optimizer over a model's parameters where each group has its own options
// and blocking (Distributed Shampoo's param_groups: a model's embeddings with AdaGrad grafting
// alone, its matrices with Shampoo or spectral descent, its norms and biases with sign descent or
// Adam grafting). Each group is a Shampoo<T> over its own plan; the groups step together: every
// group's pre-check runs before any group accumulates, and every group accumulates before any
// parameter moves, so a refused step changes nothing and a failed one no parameter, as for one
// Shampoo. Parameters keep the caller's numbering in sentences and state keys (ParamKeys), so a
// grouped optimizer's state dictionary is keyed like Distributed Shampoo's over all its groups.
// With X = exec::Cuda the spans passed to step(), eval() and train() are device memory.
#pragma once

#include <charconv>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "../core/error.hpp"
#include "optimizer.hpp"
#include "plan/plan.hpp"

namespace tessel::shampoo {

// One group: the indices of its parameters (into the shapes the optimizer is built with), its
// options, and its blocking (the plan's max_preconditioner_dim and
// target_parameter_dimensionality; infinite for math.inf).
struct ParamGroup {
  std::vector<index_t> params;
  Options options{};
  index_t max_preconditioner_dim = 1024;
  index_t target_parameter_dimensionality = 1;
};

template <class T, class X = exec::Auto>
requires exec::Executor<X>
class GroupedShampoo {
 public:
  using value_type = T;
  // A group's optimizer as group(g) gives it: the step every plan kind shares.
  using Base = ShampooStep<T, AnyPreconditioner, X>;
  using Optimizer = Shampoo<T, RuntimePlan, X>;

  // Every parameter (shapes[i] is parameter i's) belongs to exactly one group; groups are not
  // empty. Throws tessel::Error naming the parameter or group otherwise, or a group's first
  // invalid option (prefixed with the group).
  GroupedShampoo(std::vector<std::vector<index_t>> const& shapes, std::vector<ParamGroup> groups,
                 X executor = {})
      : shapes_(shapes), groups_(std::move(groups)) {
    check_membership();
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) add_group<RuntimePlan>(gi, executor);
  }

  // The same with every group's plan a type: Plans...[i] is static_plan<plan> of group i's
  // parameters (in the group's order, with its blocking), so that group's passes over its blocks
  // are instantiated with the plan's Int<> layouts (basic_shampoo.hpp). Each must be the plan the
  // group's shapes and blocking give; the step is then the run-time-plan optimizer's, bit for bit.
  template <class... Plans>
  requires(sizeof...(Plans) > 0 && (is_static_plan_v<Plans> && ...))
      GroupedShampoo(std::vector<std::vector<index_t>> const& shapes,
                     std::vector<ParamGroup> groups, X executor, Plans...)
      : shapes_(shapes), groups_(std::move(groups)) {
    check_membership();
    if (groups_.size() != sizeof...(Plans))
      tessel::detail::throw_error(
          tessel::detail::sentence("GroupedShampoo got ", sizeof...(Plans), " static plans for ",
                                   groups_.size(), " parameter groups; give one plan per group."));
    std::size_t gi = 0;
    (add_group<Plans>(gi++, executor), ...);
  }

  std::size_t num_groups() const noexcept { return optimizers_.size(); }
  ParamGroup const& param_group(std::size_t g) const { return groups_.at(g); }
  Base const& group(std::size_t g) const { return *optimizers_.at(g); }
  index_t step_count() const noexcept { return optimizers_.front()->step_count(); }
  // Group g's learning rate can follow its own schedule between steps.
  void set_lr(std::size_t g, double lr) { optimizers_.at(g)->set_lr(lr); }

  // One step of every group: params[i] and grads[i] are parameter i's (in the shapes' order).
  // Everything is checked before anything is written; see the file comment for failures.
  void step(std::vector<std::span<T>> const& params, std::vector<std::span<T const>> const& grads) {
    if (params.size() != shapes_.size() || grads.size() != shapes_.size())
      tessel::detail::throw_error(tessel::detail::sentence(
          "step got ", params.size(), " parameters and ", grads.size(), " gradients but the ",
          "optimizer has ", shapes_.size(), " parameters."));
    std::vector<std::vector<std::span<T>>> ps(optimizers_.size());
    std::vector<std::vector<std::span<T const>>> gs(optimizers_.size());
    for (std::size_t gi = 0; gi < groups_.size(); ++gi)
      for (index_t p : groups_[gi].params) {
        ps[gi].push_back(params[static_cast<std::size_t>(p)]);
        gs[gi].push_back(grads[static_cast<std::size_t>(p)]);
      }
    std::vector<typename Base::Pointers> ptrs;
    for (std::size_t gi = 0; gi < optimizers_.size(); ++gi) {
      base(gi).check_step_arguments(std::span<std::span<T> const>(ps[gi]),
                                    std::span<std::span<T const> const>(gs[gi]));
      ptrs.push_back(Base::pointers(ps[gi], gs[gi]));
    }
    // Parameters without a gradient are skipped (ShampooStep::step), group by group.
    std::vector<typename Base::Skipped> skipped;
    auto restore = [&] {
      for (std::size_t gi = 0; gi < skipped.size(); ++gi)
        base(gi).restore_skipped(skipped[gi], ptrs[gi].first);
    };
    try {
      for (std::size_t gi = 0; gi < optimizers_.size(); ++gi)
        skipped.push_back(base(gi).skip_missing_gradients(ptrs[gi].first, ptrs[gi].second));
      step_groups(ptrs);
    } catch (...) {
      restore();
      throw;
    }
    restore();
  }

  // Iterate averaging's eval() and train() (ShampooStep::eval) for every group that averages.
  void eval(std::vector<std::span<T>> const& params) { switch_mode(params, false); }
  void train(std::vector<std::span<T>> const& params) { switch_mode(params, true); }

  // Every group's state, keyed by the parameters' indices (as one Distributed Shampoo over all
  // the groups keys it).
  StateDict state_dict() const {
    StateDict out;
    for (auto const& o : optimizers_) out.merge(o->state_dict());
    return out;
  }

  // All or nothing: every group checks its part (and no key may belong to no group) before any
  // group copies.
  void load_state_dict(StateDict const& state) {
    std::vector<StateDict> parts(optimizers_.size());
    std::vector<index_t> owner(shapes_.size(), -1);
    for (std::size_t gi = 0; gi < groups_.size(); ++gi)
      for (index_t p : groups_[gi].params)
        owner[static_cast<std::size_t>(p)] = static_cast<index_t>(gi);
    for (auto const& [key, tensor] : state) {
      index_t p = -1;
      if (!key.empty()) {
        auto const& first = key.front();
        auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), p);
        if (ec != std::errc{} || end != first.data() + first.size()) p = -1;
      }
      if (p < 0 || static_cast<std::size_t>(p) >= shapes_.size())
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state has the key ", state_key_text(key), ", which names no parameter of the ",
            shapes_.size(), " in this optimizer."));
      parts[static_cast<std::size_t>(owner[static_cast<std::size_t>(p)])].emplace(key, tensor);
    }
    std::vector<index_t> steps;
    for (std::size_t gi = 0; gi < optimizers_.size(); ++gi) {
      try {
        steps.push_back(base(gi).check_state_dict(parts[gi]));
      } catch (Error const& e) {
        tessel::detail::throw_error(
            tessel::detail::sentence("parameter group ", gi, ": ", e.what()));
      }
    }
    for (std::size_t gi = 1; gi < steps.size(); ++gi)
      if (steps[gi] != steps[0])
        tessel::detail::throw_error(tessel::detail::sentence(
            "the state's step of parameter group ", gi, " is ", steps[gi], " but group 0's is ",
            steps[0], "; all groups share one step."));
    for (std::size_t gi = 0; gi < optimizers_.size(); ++gi)
      base(gi).assign_state_dict(parts[gi], steps[gi]);
  }

 private:
  void switch_mode(std::vector<std::span<T>> const& params, bool to_train) {
    if (params.size() != shapes_.size())
      tessel::detail::throw_error(tessel::detail::sentence(
          to_train ? "train" : "eval", " got ", params.size(), " parameters but the optimizer has ",
          shapes_.size(), " parameters."));
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      std::vector<T*> ps;
      for (index_t p : groups_[gi].params) ps.push_back(params[static_cast<std::size_t>(p)].data());
      base(gi).switch_mode(ps, to_train);
    }
  }

  // The steps' halves are ShampooStep's (this class is its friend).
  Base& base(std::size_t g) { return *optimizers_[g]; }

  // Every parameter in exactly one group, no group empty.
  void check_membership() const {
    std::vector<index_t> owner(shapes_.size(), -1);
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      if (groups_[gi].params.empty())
        tessel::detail::throw_error(
            tessel::detail::sentence("parameter group ", gi, " has no parameters."));
      for (index_t p : groups_[gi].params) {
        if (p < 0 || static_cast<std::size_t>(p) >= shapes_.size())
          tessel::detail::throw_error(
              tessel::detail::sentence("parameter group ", gi, " names parameter ", p,
                                       ", but there are ", shapes_.size(), " parameters."));
        auto& o = owner[static_cast<std::size_t>(p)];
        if (o != -1)
          tessel::detail::throw_error(
              tessel::detail::sentence("parameter ", p, " is in parameter groups ", o, " and ", gi,
                                       "; every parameter belongs to exactly one group."));
        o = static_cast<index_t>(gi);
      }
    }
    for (std::size_t p = 0; p < owner.size(); ++p)
      if (owner[p] == -1)
        tessel::detail::throw_error(tessel::detail::sentence(
            "parameter ", p,
            " is in no parameter group; every parameter belongs to exactly one "
            "group."));
  }

  // Group gi's optimizer, Shampoo<T, P, X> over the plan of its shapes and blocking; a static
  // plan must be that plan (its constructor takes it from the type). Errors are prefixed with the
  // group.
  template <class P>
  void add_group(std::size_t gi, X const& executor) {
    ParamGroup const& g = groups_[gi];
    std::vector<std::vector<index_t>> group_shapes;
    for (index_t p : g.params) group_shapes.push_back(shapes_[static_cast<std::size_t>(p)]);
    try {
      auto const plan =
          make_plan(PlanOptions<index_t, index_t>{g.max_preconditioner_dim,
                                                  g.target_parameter_dimensionality, 1},
                    group_shapes);
      if constexpr (is_static_plan_v<P>) {
        if (!(plan == P::value))
          tessel::detail::throw_error(
              "its static plan is not the plan of its parameters' shapes and blocking; make it "
              "with make_plan from the same shapes, max_preconditioner_dim and "
              "target_parameter_dimensionality.");
        optimizers_.push_back(std::make_unique<BasicShampoo<T, AnyPreconditioner, P, X>>(
            g.options, executor, ParamKeys{g.params}));
      } else {
        optimizers_.push_back(
            std::make_unique<Optimizer>(plan, g.options, executor, ParamKeys{g.params}));
      }
    } catch (Error const& e) {
      tessel::detail::throw_error(tessel::detail::sentence("parameter group ", gi, ": ", e.what()));
    }
  }

  // The step of every group once the arguments passed: the checks of all groups first, then
  // every group accumulates, then (when no group failed) every group's parameters move.
  void step_groups(std::vector<typename Base::Pointers> const& ptrs) {
    for (std::size_t gi = 0; gi < optimizers_.size(); ++gi)
      if (auto failure = base(gi).check_gradients_and_bounds(ptrs[gi].first, ptrs[gi].second))
        tessel::detail::throw_error(failure->message);
    std::string first;
    for (std::size_t gi = 0; gi < optimizers_.size(); ++gi)
      if (auto failure = base(gi).accumulate_step(); failure && first.empty())
        first = std::move(failure->message);
    if (!first.empty()) tessel::detail::throw_error(first);
    for (std::size_t gi = 0; gi < optimizers_.size(); ++gi) base(gi).finish_step(ptrs[gi].first);
  }
  std::vector<std::vector<index_t>> shapes_;
  std::vector<ParamGroup> groups_;
  std::vector<std::unique_ptr<Base>> optimizers_;
};

}  // namespace tessel::shampoo
