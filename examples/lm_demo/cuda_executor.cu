// lm_demo's CUDA executor: the LM head runs tessel's CUDA FLCE (flce::forward on exec::Cuda:
// cuBLAS GEMMs per chunk and the fused row kernel, instantiated with the static flce_plan) and the step runs DeviceShampoo (batched cuBLAS/cuSOLVER per block group).
// The parameters live on the device; after each step they are copied back to the host, where the
// embedding and the hidden layer run (they have no device path in this demo). Per step the host
// sends the hidden activations, the targets and two gradients, and receives d loss / d h and the
// parameters; the head's weight gradient never leaves the device.
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/shampoo/device_shampoo.cuh>

#include "config.hpp"
#include "executor.hpp"

namespace lm {

namespace {

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(tessel::shampoo::Options const& options, std::string device_name)
      : optimizer_(shampoo_plan, options), device_name_(std::move(device_name)) {
    for (index_t p = 0; p < num_params; ++p)
      params_dev_[p] = Buffer(static_cast<std::size_t>(param_sizes[p]));
  }

  std::string where() const override {
    return "On " + device_name_ +
           ": the LM head (tessel::flce CUDA path: cuBLAS GEMMs and the fused row kernel) and the "
           "optimizer (tessel::shampoo::DeviceShampoo). On the host: the embedding, the hidden "
           "layer and their gradients (Eigen), and sampling";
  }

  void attach(Params params) override {
    params_ = params;
    for (index_t p = 0; p < num_params; ++p)
      params_dev_[p].upload(params[p].data(), params[p].size());
  }

  float head(std::span<float const> h, std::span<std::int64_t const> targets,
             std::span<float> dh) override {
    using tessel::make_device_tensor;
    using tessel::make_shape;
    h_.upload(h.data(), h.size());
    y_.upload(targets.data(), targets.size());
    auto input = make_device_tensor(static_cast<float const*>(h_.data()),
                                    make_shape(Int<batch_tokens>{}, Int<hidden>{}));
    auto weight = make_device_tensor(static_cast<float const*>(params_dev_[2].data()),
                                     make_shape(Int<vocab>{}, Int<hidden>{}));
    auto target = make_device_tensor(static_cast<std::int64_t const*>(y_.data()),
                                     make_shape(Int<batch_tokens>{}));
    tessel::flce::Outputs<float, tessel::DeviceSpace> out{
        .loss = make_device_tensor(loss_.data(), make_shape(1))};
    if (!dh.empty()) {
      out.grad_input = make_device_tensor(dh_.data(), make_shape(batch_tokens, hidden));
      out.grad_weight = make_device_tensor(grad_head_.data(), make_shape(vocab, hidden));
    }
    tessel::flce::forward(input, weight, target, {}, out, tessel::exec::Cuda{});
    if (!dh.empty()) {
      auto const host_dh = dh_.download();
      std::copy(host_dh.begin(), host_dh.end(), dh.begin());
    }
    return loss_.download()[0];
  }

  void step(std::span<float const> grad_embedding, std::span<float const> grad_hidden) override {
    grads_dev_[0].upload(grad_embedding.data(), grad_embedding.size());
    grads_dev_[1].upload(grad_hidden.data(), grad_hidden.size());
    optimizer_.step({params_dev_[0].data(), params_dev_[1].data(), params_dev_[2].data()},
                    {grads_dev_[0].data(), grads_dev_[1].data(), grad_head_.data()});
    for (index_t p = 0; p < num_params; ++p) {
      auto const values = params_dev_[p].download();
      std::copy(values.begin(), values.end(), params_[p].begin());
    }
  }

  tessel::shampoo::StateDict state_dict() const override { return optimizer_.state_dict(); }
  void load_state_dict(tessel::shampoo::StateDict const&) override {
    tessel::detail::throw_error(
        "the device Shampoo cannot load a state yet; resume on the host (--host).");
  }
  bool can_load_state() const override { return false; }

 private:
  using Buffer = tessel::shampoo::DeviceBuffer<float>;
  tessel::shampoo::DeviceShampoo optimizer_;
  std::string device_name_;
  Params params_{};
  std::array<Buffer, num_params> params_dev_;
  std::array<Buffer, 2> grads_dev_{Buffer(static_cast<std::size_t>(param_sizes[0])),
                                   Buffer(static_cast<std::size_t>(param_sizes[1]))};
  Buffer h_{static_cast<std::size_t>(batch_tokens * hidden)};
  Buffer dh_{static_cast<std::size_t>(batch_tokens * hidden)};
  Buffer grad_head_{static_cast<std::size_t>(vocab * hidden)};
  Buffer loss_{1};
  tessel::shampoo::DeviceBuffer<std::int64_t> y_{static_cast<std::size_t>(batch_tokens)};
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(tessel::shampoo::Options const& options,
                                             std::string& why_not) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    why_not = "it was built with CUDA but finds no GPU (cudaGetDeviceCount: " +
              std::string(e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")";
    return nullptr;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  return std::make_unique<CudaExecutor>(options, std::string(prop.name) + " (device 0)");
}

}  // namespace lm
