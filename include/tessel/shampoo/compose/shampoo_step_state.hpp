// ShampooStep's construction and state dictionaries (declared in shampoo_step.hpp): the family's
// state beside the groups' shared state, and the family's buffers saved and loaded with the shared
// ones (compose/step_core_state.hpp).
#pragma once

#include "shampoo_step.hpp"

namespace tessel::shampoo {

template <class T, class F, class X>
void ShampooStep<T, F, X>::build() {
  this->build_core();
  Ctx const c = this->context();
  states_.resize(this->groups_.size());
  for (std::size_t gi = 0; gi < this->groups_.size(); ++gi) {
    Group& g = this->groups_[gi];
    family_.init(c, g, states_[gi]);
    auto const* kf = family::kronecker<T, X>(states_[gi]);
    this->allocate_core(g, kf ? static_cast<index_t>(kf->modes.size()) : 0,
                        kf ? kf->total_extent() : 0);
  }
  B::wait(this->executor_);
}

template <class T, class F, class X>
StateDict ShampooStep<T, F, X>::state_dict() const {
  return this->state_dict_of(each_buffer());
}

template <class T, class F, class X>
void ShampooStep<T, F, X>::load_state_dict(StateDict const& state) {
  index_t const step = check_state_dict(state);
  assign_state_dict(state, step);
}

template <class T, class F, class X>
index_t ShampooStep<T, F, X>::check_state_dict(StateDict const& state) const {
  return this->check_state_dict_of(state, each_buffer());
}

template <class T, class F, class X>
void ShampooStep<T, F, X>::assign_state_dict(StateDict const& state, index_t step) {
  this->assign_state_dict_of(state, step, each_buffer());
  for (std::size_t gi = 0; gi < states_.size(); ++gi) {
    family::invalidate(family_, states_[gi]);
    if (auto* kf = family::kronecker<T, X>(states_[gi]))
      kf->forget_bounds(this->groups_[gi].count);  // unknown until the next step reads them
  }
}

}  // namespace tessel::shampoo
