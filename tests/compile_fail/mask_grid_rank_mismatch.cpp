// apply_mask with a grid of another rank than the tensor fails to compile.
// expect: the grid's rank differs from the tensor's rank
#include <tessel/sparsity/block_update.hpp>
#include <tessel/tensor/host_tensor.hpp>
using namespace tessel;
void f() {
  auto w = make_host_tensor<float>(make_shape(4, 8));
  auto mask = make_host_tensor<bool>(make_shape(8));
  apply_mask(w, mask, make_shape(2, 4));
}
