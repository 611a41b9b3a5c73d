// The kernels the ptxas spill check compiles (check_ptxas_spills.cmake), at their default
// configurations: the elementwise kernels (packet, linear, FastDivmod nest) for a fused
// expression, the row kernels (block and warp teams) for a row logsumexp and a softmax, the
// full reduction (cub::DeviceReduce over the expression iterator), and FLCE's row kernel for a
// static and a run-time plan. Compiled, never run: the launches below are instantiated in
// functions nobody calls.
#include <cstdint>

#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/rows.cuh>
#include <tessel/flce/cuda.cuh>
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

// FLCE's row kernel as a call lowers it (flce::lowered_t): Llama-3 8B's LM head at 16k tokens with
// its static plan, and the run-time plan; f32, and bf16 storage (a bf16 gradient for the GEMMs).
// docs/design.md ("From shape to kernel") reads their registers from this report.
template <class Plan, class T>
void instantiate_flce_row_kernel() {
  using Loop = flce::ChunkLoop<Plan, T, std::int64_t, exec::Cuda>;
  exec::for_each_row<Loop::row_threads>(exec::Cuda{}, 1, 1, typename Loop::row_body{});
}

void instantiate_flce_row_kernels() {
  using Static = flce::StaticFlcePlan<16384, 4096, 128256, 512>;
  instantiate_flce_row_kernel<Static, float>();
  instantiate_flce_row_kernel<flce::FlcePlan, float>();
  instantiate_flce_row_kernel<Static, bfloat16>();
  instantiate_flce_row_kernel<flce::FlcePlan, bfloat16>();
}

}  // namespace tessel

int main() {
  return 0;
}
