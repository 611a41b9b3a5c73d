// ShampooStep's parameters without a gradient (declared in shampoo_step.hpp): their blocks step on
// a zero gradient with the others, then get back what they held, so that their state and values
// stay as they were, as Distributed Shampoo leaves them out of its step.
#pragma once

#include <algorithm>
#include <vector>

#include "shampoo_step.hpp"

namespace tessel::shampoo {

template <class T, class F, class X>
auto ShampooStep<T, F, X>::skip_missing_gradients(std::vector<T*> const& params,
                                                  std::vector<T const*>& grads) -> Skipped {
  Skipped out;
  this->skipped_.clear();
  for (std::size_t p = 0; p < grads.size(); ++p)
    if (grads[p] == nullptr) out.params.push_back(p);
  if (out.params.empty()) return out;
  if (this->averaging() && !this->z_ready_)
    tessel::detail::throw_error(tessel::detail::sentence(
        "with iterate averaging the first step needs the gradient of every parameter (it starts "
        "each block's sequence z at the parameter's values), but parameter ",
        this->key_of(out.params.front()), " has none."));
  Plan const& plan = this->plan_;
  X const& x = this->executor_;
  if (this->zeros_.data() == nullptr) {
    index_t most = 0;
    for (std::size_t p = 0; p < plan.num_params(); ++p) most = std::max(most, this->param_numel(p));
    this->zeros_ = B::template allocate<T>(most);
    assign(Ctx::flat(this->zeros_.data(), most), T(0), x);
  }
  this->skipped_.assign(plan.num_blocks(), 0);
  for (std::size_t b = 0; b < plan.num_blocks(); ++b)
    this->skipped_[b] = grads[static_cast<std::size_t>(plan.blocks[b].param)] == nullptr;
  for (std::size_t p : out.params) {
    grads[p] = this->zeros_.data();
    auto& values = out.values.emplace_back(static_cast<std::size_t>(this->param_numel(p)));
    B::to_host(x, params[p], this->param_numel(p), values.data());
  }
  for (std::size_t gi = 0; gi < this->groups_.size(); ++gi) {
    for_each_state_buffer(gi, [&](StateBuffer const& buffer) {
      for_each_skipped_slot(gi, [&](index_t slot) {
        auto& host = out.state.emplace_back(static_cast<std::size_t>(buffer.slot_bytes));
        B::to_host(x, static_cast<std::byte const*>(buffer.data) + slot * buffer.slot_bytes,
                   buffer.slot_bytes, host.data());
      });
    });
    Group const& g = this->groups_[gi];
    if (auto const* kf = family::kronecker<T, X>(states_[gi]))
      for (auto const& m : kf->modes)
        for_each_skipped_slot(gi, [&](index_t slot) {
          out.bounds.push_back(m.bound[static_cast<std::size_t>(slot)]);
        });
    for_each_skipped_slot(gi, [&](index_t slot) {
      out.failures.push_back(g.failures[static_cast<std::size_t>(slot)]);
    });
  }
  B::wait(x);
  return out;
}

template <class T, class F, class X>
void ShampooStep<T, F, X>::restore_skipped(Skipped const& skipped, std::vector<T*> const& params) {
  if (skipped.params.empty()) return;
  X const& x = this->executor_;
  std::size_t state = 0, bound = 0, failure = 0;
  for (std::size_t gi = 0; gi < this->groups_.size(); ++gi) {
    for_each_state_buffer(gi, [&](StateBuffer const& buffer) {
      for_each_skipped_slot(gi, [&](index_t slot) {
        B::from_host(x, skipped.state[state++].data(), buffer.slot_bytes,
                     buffer.data + slot * buffer.slot_bytes);
      });
    });
    Group& g = this->groups_[gi];
    // A skipped slot's state went back to before the step; what the family derives from it (SOAP's
    // rotated filtered gradient) did not.
    for_each_skipped_slot(gi, [&](index_t) { family::invalidate(family_, states_[gi]); });
    if (auto* kf = family::kronecker<T, X>(states_[gi]))
      for (auto& m : kf->modes)
        for_each_skipped_slot(gi, [&](index_t slot) {
          m.bound[static_cast<std::size_t>(slot)] = skipped.bounds[bound++];
        });
    for_each_skipped_slot(gi, [&](index_t slot) {
      g.failures[static_cast<std::size_t>(slot)] = skipped.failures[failure++];
    });
  }
  for (std::size_t i = 0; i < skipped.params.size(); ++i) {
    std::size_t const p = skipped.params[i];
    B::from_host(x, skipped.values[i].data(), this->param_numel(p), params[p]);
  }
  B::wait(x);
  this->skipped_.clear();
}

}  // namespace tessel::shampoo
