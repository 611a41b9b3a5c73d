// Where lm_demo's LM head (FLCE: loss and both gradients, no (BT, V) logits kept) and its
// optimizer step (Shampoo) run. The embedding and the hidden layer always run on the host; an
// Executor takes the hidden activations and returns the loss and their gradient, then steps all
// three parameters. The host executor is host_executor.hpp; the CUDA one cuda_executor.cu.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <tessel/shampoo/options.hpp>
#include <tessel/shampoo/state.hpp>

#include "config.hpp"

namespace lm {

// The embedding, the hidden layer and the LM head, in the plan's order, in host memory.
using Params = std::array<std::span<float>, num_params>;

class Executor {
 public:
  virtual ~Executor() = default;

  // One sentence: what runs where.
  virtual std::string where() const = 0;

  // Ties the executor to the parameters; step() updates them in place. Call again after the
  // host changes them (loading a checkpoint).
  virtual void attach(Params params) = 0;

  // The mean cross-entropy of the head on h (BT, H) against targets (BT). With a non-empty dh it
  // also writes d loss / d h (BT, H) and keeps the head's weight gradient for step().
  virtual float head(std::span<float const> h, std::span<std::int64_t const> targets,
                     std::span<float> dh) = 0;

  // One Shampoo step on the attached parameters, with the gradients of the embedding and the
  // hidden layer and the head's from the last head() call.
  virtual void step(std::span<float const> grad_embedding, std::span<float const> grad_hidden) = 0;

  virtual tessel::shampoo::StateDict state_dict() const = 0;
  // Both executors keep the same state (keys, dtypes, bytes), so either resumes the other's run.
  virtual void load_state_dict(tessel::shampoo::StateDict const& state) = 0;
};

// The CUDA executor when the program was built with CUDA and a device is present; otherwise
// nullptr, with the reason in why_not.
std::unique_ptr<Executor> make_cuda_executor(tessel::shampoo::Options const& options,
                                             std::string& why_not);

}  // namespace lm
