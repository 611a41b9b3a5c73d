// A 2:4 mask of a device weight with the default (host) executor fails to compile, naming the fix.
// expect: these tensors live in device memory; pass exec::Cuda
#include <tessel/sparsity/nm_mask.hpp>
using namespace tessel;
void f(float* device_memory) {
  auto w = make_device_tensor(device_memory, make_shape(8, 16));
  (void)nm_mask(w, NMPattern<Int<2>, Int<4>>{});
}
