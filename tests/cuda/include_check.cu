// The whole umbrella header compiles under nvcc for TESSEL_CUDA_ARCHITECTURES, and the core is
// usable inside a kernel: the core stays CUDA-clean.
#include <tessel/tessel.hpp>

namespace {

using namespace tessel;

__global__ void block_offsets(index_t* out, index_t rows) {
  auto matrix = make_layout(make_shape(rows, Int<8>{}));
  auto blocks = block_layout(make_layout(make_shape(Int<4>{}, Int<8>{})),
                             make_shape(Int<2>{}, Int<4>{}), MergedOrder{});
  index_t i = static_cast<index_t>(threadIdx.x);
  // A shared-memory tile of 8 rows of 32 floats, swizzled: the swizzle runs in device code.
  auto tile = smem_swizzled_layout<float>(Int<8>{}, Int<32>{});
  if (i < size(matrix)) out[i] = matrix(i) + blocks(i % 2, i % 2, i % 8) + tile(i % 8, i);
  static_assert(decltype(size(coalesce(blocks)))::value == 32);
  static_assert(decltype(cosize(tile))::value == 256);
}

}  // namespace

int main() {
  index_t* out = nullptr;
  if (cudaMalloc(&out, 32 * sizeof(index_t)) != cudaSuccess) return 0;  // no device: nothing to run
  block_offsets<<<1, 32>>>(out, 4);
  cudaFree(out);
  return 0;
}
