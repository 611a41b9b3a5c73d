// lm_demo's host executor: the LM head through tessel's host FLCE (Eigen GEMMs per chunk, OpenMP
// when built with it) on static-shape tensors, so the call runs the compile-time plan, and the
// step through the host Shampoo<float> with the static plan (config.hpp's shampoo_plan as a type).
#pragma once

#include <string>
#include <vector>

#include <tessel/shampoo.hpp>
#include <tessel/tessel.hpp>

#include "executor.hpp"

namespace lm {

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(tessel::shampoo::Options const& options)
      : optimizer_(options), grad_head_(static_cast<std::size_t>(vocab * hidden)) {}

  std::string where() const override {
    return "Everything runs on the host: embedding and hidden layer (Eigen), the LM head "
           "(tessel::flce host path) and the optimizer (tessel::shampoo::Shampoo<float>)";
  }

  void attach(Params params) override { params_ = params; }

  float head(std::span<float const> h, std::span<std::int64_t const> targets,
             std::span<float> dh) override {
    using tessel::make_shape;
    using tessel::make_tensor;
    // Static shapes: the plan FLCE runs is flce_plan, checked when this is compiled.
    auto input = make_tensor(h.data(), make_shape(Int<batch_tokens>{}, Int<hidden>{}));
    auto weight = make_tensor(static_cast<float const*>(params_[2].data()),
                              make_shape(Int<vocab>{}, Int<hidden>{}));
    auto target = make_tensor(targets.data(), make_shape(Int<batch_tokens>{}));
    float loss = 0;
    tessel::flce::Outputs<float> out{.loss = make_tensor(&loss, make_shape(1))};
    if (!dh.empty()) {
      out.grad_input = make_tensor(dh.data(), make_shape(batch_tokens, hidden));
      out.grad_weight = make_tensor(grad_head_.data(), make_shape(vocab, hidden));
    }
    tessel::flce::FlcePlan const plan = tessel::flce::forward(input, weight, target, {}, out);
    if (plan.chunk_size != flce_plan.chunk_size)  // what the static plan promised
      tessel::detail::throw_error("FLCE ran another plan than the static one.");
    return loss;
  }

  void step(std::span<float const> grad_embedding, std::span<float const> grad_hidden) override {
    optimizer_.step({params_[0], params_[1], params_[2]},
                    {grad_embedding, grad_hidden, std::span<float const>(grad_head_)});
  }

  tessel::shampoo::StateDict state_dict() const override { return optimizer_.state_dict(); }
  void load_state_dict(tessel::shampoo::StateDict const& state) override {
    optimizer_.load_state_dict(state);
  }

 private:
  tessel::shampoo::Shampoo<float, tessel::shampoo::static_plan<shampoo_plan>> optimizer_;
  std::vector<float> grad_head_;  // (V, H), written by head(), read by step()
  Params params_{};
};

}  // namespace lm
