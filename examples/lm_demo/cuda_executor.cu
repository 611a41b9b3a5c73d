// lm_demo's CUDA executor: the LM head runs tessel's CUDA FLCE (cuBLAS GEMMs per chunk and the
// fused row kernel) and the step runs the device Shampoo: the host optimizer's step with the
// static plan, run by exec::Cuda (batched cuBLAS/cuSOLVER per block group, one fused kernel per
// elementwise stage and segment); it loads a saved state, so --resume works on the GPU too.
// The parameters live on the device; after each step they are copied back to the host, where the
// embedding and the hidden layer run (they have no device path in this demo). Per step the host
// sends the hidden activations, the targets and two gradients, and receives d loss / d h and the
// parameters; the head's weight gradient never leaves the device.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/shampoo/device_shampoo.cuh>

#include "config.hpp"
#include "executor.hpp"

namespace lm {

namespace {

// A device vector of n elements, and copies to and from host memory on the legacy default stream
// (the stream FLCE and the optimizer run on here), waited for.
template <class T>
auto device_vector(index_t n) {
  return tessel::make_device_tensor<T>(tessel::make_shape(n));
}
template <class D, class T>
void upload(D const& device, std::span<T const> host) {
  tessel::gpu::copy_to_device(
      device, tessel::make_tensor(host.data(), tessel::make_shape(static_cast<index_t>(host.size()))),
      nullptr);
}
template <class D>
std::vector<typename D::value_type> download(D const& device) {
  std::vector<typename D::value_type> host(static_cast<std::size_t>(tessel::to_index(size(device))));
  tessel::gpu::copy_to_host(
      tessel::make_tensor(host.data(), tessel::make_shape(static_cast<index_t>(host.size()))),
      device, nullptr);
  TESSEL_CUDA_CHECK(cudaStreamSynchronize(nullptr), "reading a result of the device");
  return host;
}

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(tessel::shampoo::Options const& options, std::string device_name)
      : optimizer_(options), device_name_(std::move(device_name)) {
    for (index_t p = 0; p < num_params; ++p) params_dev_[p] = device_vector<float>(param_sizes[p]);
  }

  std::string where() const override {
    return "On " + device_name_ +
           ": the LM head (tessel::flce CUDA path: cuBLAS GEMMs and the fused row kernel) and the "
           "optimizer (tessel::shampoo::Shampoo on exec::Cuda). On the host: the embedding, the "
           "hidden "
           "layer and their gradients (Eigen), and sampling";
  }

  void attach(Params params) override {
    params_ = params;
    for (index_t p = 0; p < num_params; ++p)
      upload(params_dev_[p], std::span<float const>(params[p]));
  }

  float head(std::span<float const> h, std::span<std::int64_t const> targets,
             std::span<float> dh) override {
    using tessel::make_device_tensor;
    using tessel::make_shape;
    upload(h_, h);
    upload(y_, targets);
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
      auto const host_dh = download(dh_);
      std::copy(host_dh.begin(), host_dh.end(), dh.begin());
    }
    return download(loss_)[0];
  }

  void step(std::span<float const> grad_embedding, std::span<float const> grad_hidden) override {
    upload(grads_dev_[0], grad_embedding);
    upload(grads_dev_[1], grad_hidden);
    optimizer_.step({params_dev_[0].data(), params_dev_[1].data(), params_dev_[2].data()},
                    {grads_dev_[0].data(), grads_dev_[1].data(), grad_head_.data()});
    for (index_t p = 0; p < num_params; ++p) {
      auto const values = download(params_dev_[p]);
      std::copy(values.begin(), values.end(), params_[p].begin());
    }
  }

  // The host optimizer's keys and bytes: a run saved here resumes on the host and vice versa.
  tessel::shampoo::StateDict state_dict() const override { return optimizer_.state_dict(); }
  void load_state_dict(tessel::shampoo::StateDict const& state) override {
    optimizer_.load_state_dict(state);
  }

 private:
  using Vector = decltype(device_vector<float>(0));
  tessel::shampoo::Shampoo<float, tessel::shampoo::static_plan<shampoo_plan>, tessel::exec::Cuda>
      optimizer_;
  std::string device_name_;
  Params params_{};
  std::array<Vector, num_params> params_dev_;
  std::array<Vector, 2> grads_dev_{device_vector<float>(param_sizes[0]),
                                   device_vector<float>(param_sizes[1])};
  Vector h_ = device_vector<float>(batch_tokens * hidden);
  Vector dh_ = device_vector<float>(batch_tokens * hidden);
  Vector grad_head_ = device_vector<float>(vocab * hidden);
  Vector loss_ = device_vector<float>(1);
  decltype(device_vector<std::int64_t>(0)) y_ = device_vector<std::int64_t>(batch_tokens);
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
