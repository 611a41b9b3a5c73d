// A block score given as a callable cannot score device tensors: it is called with host views.
// expect: a block score given as a callable runs on the host only
#include <tessel/sparsity/block_scores.hpp>
using namespace tessel;
void f(float* device_memory) {
  auto w = make_device_tensor(device_memory, make_shape(8, 16));
  (void)block_scores(
      w, make_shape(2, 4), [](auto const& block) { return block(0); }, exec::Cuda{});
}
