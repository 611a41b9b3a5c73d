// FLCE on CUDA tensors for the Python module, without nanobind on the nvcc side: module.cpp turns
// the caller's DLPack arrays into these plain descriptions (pointers, extents and strides in
// elements), and flce_cuda.cu turns them into tessel device views and queues flce::forward on the
// caller's stream (PyTorch's current stream for the tensors' device). Built with
// TESSEL_PYTHON_CUDA only.
#pragma once

#include <cstdint>

#include "flce_scalars.hpp"

#include <tessel/core/dtype.hpp>

namespace tessel_python {

// A (rows, cols) matrix or a (size) vector in device memory; data == nullptr: not given.
struct DeviceMatrix {
  void* data = nullptr;
  tessel::index_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
};
struct DeviceVector {
  void* data = nullptr;
  tessel::index_t size = 0, stride = 0;
};

// One call: the inputs, the options, and the outputs the caller allocated on the same device
// (an output whose data is null is not computed). The loss, z_loss and accuracy are (rows)
// vectors for reduction none and one element otherwise.
struct DeviceFlceCall {
  tessel::DType dtype = tessel::DType::f32;  // the storage type of input, weight, bias, ...
  int device = 0;                            // the CUDA device every array lives on
  std::uintptr_t stream = 0;                 // a cudaStream_t of that device
  DeviceMatrix input, weight, soft_target_indices, soft_target_probs;
  DeviceVector target, bias, class_weights, grad_output_rows;
  FlceScalars scalars;
  DeviceVector loss, z_loss, accuracy, lse, target_logprob, entropy, argmax, grad_bias;
  DeviceMatrix grad_input, grad_weight;
};

// flce::forward on exec::Cuda{stream} with the call's device current; tessel::Error for what
// tessel refuses, before any output is written.
void run_linear_cross_entropy_cuda(DeviceFlceCall const& call);

}  // namespace tessel_python
