// The kernels the ptxas spill check compiles (check_ptxas_spills.cmake), at their default
// configurations: the elementwise kernels (packet, linear, FastDivmod nest) for a fused
// expression, the row kernels (block and warp teams) for a row logsumexp and a softmax, and the
// full reduction (cub::DeviceReduce over the expression iterator). Compiled, never run: the
// assignments below are instantiated in a function nobody calls.
#include <tessel/exec/cuda.cuh>
#include <tessel/tensor/tensor.hpp>
#include <tessel/tensor/views.hpp>

namespace tessel {

void instantiate_default_kernels(float* p, index_t* q) {
  auto x = make_device_tensor(p, make_shape(index_t{1024}, index_t{4096}));
  auto y = make_device_tensor(p, make_shape(index_t{1024}, index_t{4096}));
  auto out = make_device_tensor(p, make_shape(index_t{1024}, index_t{4096}));
  auto rows = make_device_tensor(p, make_shape(index_t{1024}));
  auto scalar = make_device_tensor(p, make_shape(index_t{1}));
  auto index = make_device_tensor(q, make_shape(index_t{1}));
  exec::Cuda const gpu{};
  assign(out, x * 2.0f + y, gpu);            // elementwise: packet, linear, nest kernels
  assign(rows, logsumexp(x, mode<1>), gpu);  // row reduction: block and warp teams
  assign(out, softmax(x), gpu);              // row kernel with the softmax epilogue
  assign(scalar, sum(x), gpu);               // full reduction through cub::DeviceReduce
  assign(index, argmax(x), gpu);             // full argmax: (value, index) pairs

  // Static layouts: the same families with the nest lowered at compile time.
  auto sx = make_device_tensor(p, make_shape(Int<256>{}, Int<512>{}));
  auto st = make_device_tensor(p, make_shape(Int<512>{}, Int<256>{}));
  auto sb = make_device_tensor(p, make_shape(Int<256>{}));
  auto sy = make_device_tensor(p, make_shape(Int<256>{}, Int<512>{}));
  auto srows = make_device_tensor(p, make_shape(Int<256>{}));
  assign(st, transpose(sx) * 2.0f + sb, gpu);  // elementwise: two constant modes
  assign(srows, logsumexp(sx, mode<1>), gpu);  // row reduction over a constant nest
  assign(sy, softmax(sx), gpu);                // softmax epilogue over a constant nest
  assign(scalar, sum(sx), gpu);                // full reduction's constant input iterator
}

}  // namespace tessel

int main() {
  return 0;
}
