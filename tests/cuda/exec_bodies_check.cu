// The kernel bodies under exec/body compile for the device from the same source the host executor
// runs (here with a one-thread context per row), and the host executor itself compiles in a CUDA
// translation unit (where it takes the scalar path). Compile and link only: nothing needs a GPU.
#include <vector>

#include <tessel/tessel.hpp>

namespace {

using namespace tessel;

// One thread per row: the simplest device context (a block-wide one replaces reduce with CUB).
struct ThreadContext {
  __device__ index_t lane() const { return 0; }
  __device__ index_t lanes() const { return 1; }
  template <class T, class Combine>
  __device__ T reduce(T partial, Combine const&) const {
    return partial;
  }
};

__global__ void row_kernels(float const* x, float* out, float* lse, index_t* arg, index_t n) {
  ThreadContext ctx;
  exec::LeafEval<float, 2> row{};
  row.ptr = x + blockIdx.x * n;
  row.inner = 1;
  exec::DstEval<float, 2> dst{};
  dst.ptr = out + blockIdx.x * n;
  dst.inner = 1;
  lse[blockIdx.x] = exec::row_logsumexp_body(ctx, row, n);
  arg[blockIdx.x] = exec::row_argmax_body(ctx, row, n);
  exec::row_softmax_body(ctx, row, dst, n);
  exec::MapEval<ops::Mul, exec::MapEval<ops::Exp, exec::LeafEval<float, 2>>,
                exec::ScalarEval<float>>
      e{{},
        {exec::MapEval<ops::Exp, exec::LeafEval<float, 2>>{{}, {row}},
         exec::ScalarEval<float>{2.0f}}};
  exec::elementwise_body(ctx, dst, e, 0, n);
}

}  // namespace

int main() {
  // Views of host memory (element access on an owning tensor is not nvcc-clean in the tensor
  // layer yet: Tensor::data() is __host__ __device__ over a host-only engine).
  std::vector<float> xs(32, 0.0f), ys(32, 0.0f);
  auto x = make_tensor(xs.data(), make_shape(4, 8));
  auto y = make_tensor(ys.data(), make_shape(4, 8));
  y = softmax(x) + exp(x - logsumexp(x, mode<1>, keep));
  float* dx = nullptr;
  if (cudaMalloc(&dx, 64 * sizeof(float)) != cudaSuccess) return 0;  // no device: nothing to run
  row_kernels<<<4, 1>>>(dx, dx + 32, dx + 32, reinterpret_cast<index_t*>(dx), 8);
  cudaFree(dx);
  return ys[0] >= 0.0f ? 0 : 1;
}
