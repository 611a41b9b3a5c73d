// A tiled copy of a static (BT, H) activation over a thread-block grid, run on the host: the body
// in tiled_copy.hpp (one tile per block, a part of it per thread, an identity tensor for the ragged
// edge) runs for every block and every thread, as the GPU runs it, and the result is checked
// against the source. The exit status is 1 on any mismatch. tests/cuda/exec_cuda_test.cu launches
// the same body as a CUDA kernel.
#include <iostream>

#include "tiled_copy.hpp"

int main() {
  using namespace tessel;
  using namespace tiled_copy;

  auto src = make_host_tensor<float>(buffer_layout());  // the (50, 40) matrix is its top-left
  auto dst = make_host_tensor<float>(buffer_layout());
  for (index_t i = 0; i < size(buffer_layout()); ++i) src[i] = static_cast<float>(i);
  for (float& x : dst) x = -1.0f;  // what no thread may write stays -1

  std::cout << "(BT, H) = " << activation_shape() << " in a buffer " << buffer_layout() << '\n';
  std::cout << block_count << " blocks, each a tile " << tile_shape() << " of " << thread_count
            << " threads " << thread_shape() << '\n';
  std::cout << "block 3's tile:    " << local_tile(src, tile_shape(), 3).layout() << '\n';
  std::cout << "its thread 9 owns: "
            << local_partition(local_tile(src, tile_shape(), 3), thread_shape(), 9).layout()
            << '\n';
  auto where = local_tile(make_identity_tensor(padded_shape()), tile_shape(), 3);
  auto first = local_partition(where, thread_shape(), 9)(0);
  std::cout << "its first element: (" << get<0>(first) << ", " << get<1>(first) << ")\n";

  // The host twin of the launch <<<block_count, thread_count>>>.
  for (index_t b = 0; b < block_count; ++b)
    for (index_t k = 0; k < thread_count; ++k) copy_tile_part(src.view(), dst.view(), b, k);

  index_t copied = 0, wrong = 0;
  for (index_t i = 0; i < get<0>(padded_shape()); ++i)
    for (index_t j = 0; j < get<1>(padded_shape()); ++j) {
      bool inside = elem_less(make_tuple(i, j), activation_shape());
      float want = inside ? src(i, j) : -1.0f;
      if (dst(i, j) != want) {
        if (wrong < 5)
          std::cout << "mismatch at (" << i << ", " << j << "): " << dst(i, j) << ", want " << want
                    << '\n';
        ++wrong;
      }
      copied += inside ? 1 : 0;
    }
  std::cout << "copied " << copied << " elements, " << wrong << " mismatches (padding included)\n";
  return wrong == 0 ? 0 : 1;
}
