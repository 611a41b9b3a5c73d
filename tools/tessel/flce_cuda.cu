// `tessel flce --device cuda`: the job's arrays copied to the device, the CUDA forward, the
// results copied back. Built only with TESSEL_CUDA.
#include <cstdint>
#include <vector>

#include <tessel/exec/cuda/error.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/tensor/tensor.hpp>

#include "flce_job.hpp"

namespace tessel::cli {

namespace {

// Device memory holding a copy of a host vector; copied back with to(host).
template <class T>
class DeviceCopy {
 public:
  explicit DeviceCopy(std::vector<T> const& host) : size_(host.size()) {
    TESSEL_CUDA_CHECK(cudaMalloc(&data_, (size_ > 0 ? size_ : 1) * sizeof(T)),
                      "allocating device memory for an FLCE argument");
    if (size_ > 0)
      TESSEL_CUDA_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice),
                        "copying an FLCE argument to the device");
  }
  ~DeviceCopy() { cudaFree(data_); }
  DeviceCopy(DeviceCopy const&) = delete;
  DeviceCopy& operator=(DeviceCopy const&) = delete;
  T* data() const { return data_; }
  void to(std::vector<T>& host) const {
    if (size_ > 0)
      TESSEL_CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost),
                        "copying an FLCE result to the host");
  }

 private:
  T* data_ = nullptr;
  std::size_t size_;
};

}  // namespace

template <class T>
void run_flce_cuda(FlceJob<T>& job) {
  using C = flce::accum_t<T>;
  DeviceCopy<T> x(job.input), w(job.weight), bias(job.bias), cw(job.class_weights),
      dx(job.grad_input);
  DeviceCopy<std::int64_t> y(job.target);
  DeviceCopy<C> rows(job.grad_output_rows), loss(job.loss), z(job.z_loss), dw(job.grad_weight),
      db(job.grad_bias);
  flce::Options<T, DeviceSpace> o;
  o.reduction = job.reduction;
  o.ignore_index = job.ignore_index;
  o.label_smoothing = job.label_smoothing;
  o.lse_square_scale = job.lse_square_scale;
  o.softcap = job.softcap;
  o.grad_output = job.grad_output;
  if (!job.bias.empty())
    o.bias = make_device_tensor(static_cast<T const*>(bias.data()), make_shape(job.vocab));
  if (!job.class_weights.empty())
    o.class_weights = make_device_tensor(static_cast<T const*>(cw.data()), make_shape(job.vocab));
  if (!job.grad_output_rows.empty())
    o.grad_output_rows = make_device_tensor(static_cast<C const*>(rows.data()), make_shape(job.bt));
  flce::Outputs<T, DeviceSpace> out;
  out.loss = make_device_tensor(loss.data(), make_shape(job.loss_size()));
  if (job.want_z_loss) out.z_loss = make_device_tensor(z.data(), make_shape(job.loss_size()));
  if (job.want_grad_input)
    out.grad_input = make_device_tensor(dx.data(), make_shape(job.bt, job.hidden));
  if (job.want_grad_weight)
    out.grad_weight = make_device_tensor(dw.data(), make_shape(job.vocab, job.hidden));
  if (job.want_grad_bias) out.grad_bias = make_device_tensor(db.data(), make_shape(job.vocab));
  flce::forward(
      make_device_tensor(static_cast<T const*>(x.data()), make_shape(job.bt, job.hidden)),
      make_device_tensor(static_cast<T const*>(w.data()), make_shape(job.vocab, job.hidden)),
      make_device_tensor(static_cast<std::int64_t const*>(y.data()), make_shape(job.bt)), o, out);
  TESSEL_CUDA_CHECK(cudaDeviceSynchronize(), "waiting for the FLCE forward");
  loss.to(job.loss);
  z.to(job.z_loss);
  dx.to(job.grad_input);
  dw.to(job.grad_weight);
  db.to(job.grad_bias);
}

template void run_flce_cuda<float>(FlceJob<float>&);
template void run_flce_cuda<double>(FlceJob<double>&);
template void run_flce_cuda<half>(FlceJob<half>&);
template void run_flce_cuda<bfloat16>(FlceJob<bfloat16>&);

}  // namespace tessel::cli
