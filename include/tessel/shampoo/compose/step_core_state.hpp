// StepCore's state dictionaries and eval()/train() (declared in step_core.hpp): Distributed Shampoo's
// key paths around the buffers a step names, [p, "step"]; [p, "block_i", tail...] for every buffer
// of every slot; [p, "lr_sum" | "train_mode"] with iterate averaging. The same keys, dtypes and
// bytes on every executor: a device run saves, and resumes from, a host run's state. A symmetric
// matrix (a factor, or Shampoo's inverse root) loads from either layout, full (d, d) or packed (d
// (d + 1) / 2,).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "step_core.hpp"

namespace tessel::shampoo {

namespace detail {

// [.., "shampoo", "factor_matrices" | "inv_factor_matrices", j]: a Kronecker factor or its
// inverse root, symmetric, saved packed or full.
inline bool is_symmetric_key(StateKey const& key) {
  return key.size() >= 2 &&
         (key[key.size() - 2] == "factor_matrices" || key[key.size() - 2] == "inv_factor_matrices");
}

}  // namespace detail

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> template <class Each>
    StateDict StepCore<T, X>::expected_state(Each const& each) const {
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
    each(gi, [&](StateBuffer const& b) {
      std::size_t const bytes = b.saved == b.shape ? static_cast<std::size_t>(b.slot_bytes)
                                                   : static_cast<std::size_t>(b.saved[0]) *
                                                         dtype_size(b.dtype);  // packed
      for (index_t slot = 0; slot < g.count; ++slot)
        out[state_key(g, slot, b.tail)] =
            StateTensor{b.dtype, b.saved, std::vector<std::byte>(bytes)};
    });
  }
  return out;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> template <class Each>
    StateDict StepCore<T, X>::state_dict_of(Each const& each) const {
  StateDict out = expected_state(each);
  std::int64_t const step = step_;
  for (std::size_t p = 0; p < plan_.num_params(); ++p) {
    std::memcpy(out[{std::to_string(key_of(p)), "step"}].data.data(), &step, sizeof step);
    if (averaging()) {
      std::memcpy(out[{std::to_string(key_of(p)), "lr_sum"}].data.data(), &lr_sum_, sizeof lr_sum_);
      out[{std::to_string(key_of(p)), "train_mode"}].data[0] =
          training_ ? std::byte{1} : std::byte{0};
    }
  }
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    Group const& g = groups_[gi];
    each(gi, [&](StateBuffer const& b) {
      std::vector<std::byte> host(static_cast<std::size_t>(b.slot_bytes * g.count));
      B::to_host(executor_, static_cast<std::byte const*>(b.data),
                 static_cast<index_t>(host.size()), host.data());
      for (index_t slot = 0; slot < g.count; ++slot) {
        auto& data = out.at(state_key(g, slot, b.tail)).data;
        if (b.saved == b.shape)
          std::memcpy(data.data(), host.data() + slot * b.slot_bytes, data.size());
        else  // an inverse root saved packed
          pack_symmetric_bytes(host.data() + slot * b.slot_bytes, data.data(), b.shape[0],
                               dtype_size(b.dtype));
      }
    });
  }
  B::wait(executor_);
  return out;
}

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> template <class Each>
    index_t StepCore<T, X>::check_state_dict_of(StateDict const& state, Each const& each) const {
  StateDict const expected = expected_state(each);
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
    if (it->second.shape != tensor.shape && detail::is_symmetric_key(key)) {
      // A factor or inverse root loads from either layout (assign_state_dict_of converts it).
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
      tessel::detail::throw_error(tessel::detail::sentence(
          "the state has the key ", state_key_text(key), ", which this optimizer does not keep."));
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

template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> template <class Each>
    void StepCore<T, X>::assign_state_dict_of(StateDict const& state, index_t step,
                                              Each const& each) {
  std::vector<std::vector<std::byte>> staged;  // alive until the copies are done
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    Group const& g = groups_[gi];
    each(gi, [&](StateBuffer const& b) {
      auto& host = staged.emplace_back(static_cast<std::size_t>(b.slot_bytes * g.count));
      std::vector<std::byte> upper;
      for (index_t slot = 0; slot < g.count; ++slot) {
        StateTensor const& t = state.at(state_key(g, slot, b.tail));
        std::byte* to = host.data() + slot * b.slot_bytes;
        // Only a symmetric matrix's shape can differ (check_state_dict_of): the other layout.
        if (t.shape == b.shape && b.saved == b.shape) {
          std::memcpy(to, t.data.data(), t.data.size());
        } else if (b.shape.size() == 1) {  // full into packed storage
          pack_symmetric_bytes(t.data.data(), to, t.shape[0], dtype_size(b.dtype));
        } else if (t.shape == b.shape) {
          // A full root into an optimizer that saves roots packed: symmetric from its upper
          // triangle, as the roots it computes are.
          upper.resize(static_cast<std::size_t>(packed_size(b.shape[0])) * dtype_size(b.dtype));
          pack_symmetric_bytes(t.data.data(), upper.data(), b.shape[0], dtype_size(b.dtype));
          unpack_symmetric_bytes(upper.data(), to, b.shape[0], dtype_size(b.dtype));
        } else {
          unpack_symmetric_bytes(t.data.data(), to, b.shape[0], dtype_size(b.dtype));
        }
      }
      B::from_host(executor_, host.data(), static_cast<index_t>(host.size()), b.data);
    });
  }
  B::wait(executor_);
  step_ = step;
  if (averaging() && plan_.num_params() > 0) {
    std::string const first = std::to_string(key_of(0));
    std::memcpy(&lr_sum_, state.at({first, "lr_sum"}).data.data(), sizeof lr_sum_);
    training_ = state.at({first, "train_mode"}).data[0] != std::byte{0};
    z_ready_ = step > 0;
  }
  for (auto& g : groups_) std::fill(g.failures.begin(), g.failures.end(), 0);
}

// eval() and train(), out of the class (not inline) as the step's other entry points.
template <class T, class X>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> void StepCore<T, X>::switch_mode(std::vector<T*> const& params,
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

}  // namespace tessel::shampoo
