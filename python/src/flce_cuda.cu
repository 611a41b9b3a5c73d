// run_linear_cross_entropy_cuda (flce_cuda.hpp): the plain descriptions become tessel device views
// and flce::forward runs on exec::Cuda{caller's stream}, with the caller's device current for the
// call. One instantiation per storage type, all with int64 targets (PyTorch's class indices).
#include "flce_cuda.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

#include <tessel/core/error.hpp>
#include <tessel/core/float16.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/tensor/tensor.hpp>

namespace tessel_python {

namespace {

using tessel::DeviceSpace;
using tessel::index_t;

template <class T>
auto device_matrix(DeviceMatrix const& m) {
  return tessel::make_device_tensor(
      static_cast<T*>(m.data),
      tessel::make_layout(tessel::make_shape(m.rows, m.cols),
                          tessel::make_stride(m.row_stride, m.col_stride)));
}
template <class T>
auto device_vector(DeviceVector const& v) {
  return tessel::make_device_tensor(
      static_cast<T*>(v.data),
      tessel::make_layout(tessel::make_shape(v.size), tessel::make_stride(v.stride)));
}

// An optional argument: absent (data null) stays {}; present, the view above, taken apart by
// the argument types' own constructors.
template <class T>
tessel::flce::VectorArg<T, DeviceSpace> vector_arg(DeviceVector const& v) {
  if (v.data == nullptr) return {};
  return device_vector<T>(v);
}
template <class T>
tessel::flce::MatrixArg<T, DeviceSpace> matrix_arg(DeviceMatrix const& m) {
  if (m.data == nullptr) return {};
  return device_matrix<T>(m);
}

template <class T>
void run(DeviceFlceCall const& call) {
  using C = tessel::flce::accum_t<T>;
  tessel::flce::Options<T, DeviceSpace> options;
  call.scalars.apply_to(options);
  options.bias = vector_arg<T const>(call.bias);
  options.class_weights = vector_arg<T const>(call.class_weights);
  options.grad_output_rows = vector_arg<C const>(call.grad_output_rows);
  options.soft_target_indices = matrix_arg<index_t const>(call.soft_target_indices);
  options.soft_target_probs = matrix_arg<C const>(call.soft_target_probs);
  tessel::flce::Outputs<T, DeviceSpace> outputs;
  outputs.loss = vector_arg<C>(call.loss);
  outputs.z_loss = vector_arg<C>(call.z_loss);
  outputs.accuracy = vector_arg<C>(call.accuracy);
  outputs.lse = vector_arg<C>(call.lse);
  outputs.target_logprob = vector_arg<C>(call.target_logprob);
  outputs.entropy = vector_arg<C>(call.entropy);
  outputs.argmax = vector_arg<index_t>(call.argmax);
  outputs.grad_input = matrix_arg<T>(call.grad_input);
  outputs.grad_weight = matrix_arg<C>(call.grad_weight);
  outputs.grad_bias = vector_arg<C>(call.grad_bias);
  tessel::flce::forward(device_matrix<T const>(call.input), device_matrix<T const>(call.weight),
                        device_vector<std::int64_t const>(call.target), options, outputs,
                        tessel::exec::Cuda{reinterpret_cast<cudaStream_t>(call.stream)});
}

// The caller's device current for the call, the previous one back afterwards (also on throw).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    TESSEL_CUDA_CHECK(cudaGetDevice(&previous_), "reading the current device");
    if (device != previous_)
      TESSEL_CUDA_CHECK(cudaSetDevice(device), "making the tensors' device current");
  }
  DeviceGuard(DeviceGuard const&) = delete;
  DeviceGuard& operator=(DeviceGuard const&) = delete;
  ~DeviceGuard() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

}  // namespace

void run_linear_cross_entropy_cuda(DeviceFlceCall const& call) {
  DeviceGuard const guard(call.device);
  switch (call.dtype) {
    case tessel::DType::f32:
      return run<float>(call);
    case tessel::DType::f64:
      return run<double>(call);
    case tessel::DType::f16:
      return run<tessel::half>(call);
    case tessel::DType::bf16:
      return run<tessel::bfloat16>(call);
    case tessel::DType::i8:
    case tessel::DType::i16:
    case tessel::DType::i32:
    case tessel::DType::i64:
    case tessel::DType::u8:
    case tessel::DType::u16:
    case tessel::DType::u32:
    case tessel::DType::u64:
    case tessel::DType::bool_:
      break;
  }
  tessel::detail::throw_error(
      tessel::detail::sentence("tessel's FLCE computes on f32, f64, f16 and bf16, not ",
                               tessel::dtype_name(call.dtype), "."));
}

}  // namespace tessel_python
