// A static k larger than a static scope fails to compile.
// expect: k exceeds the number of blocks in a scope
#include <tessel/sparsity/topk.hpp>
using namespace tessel;
void f() {
  auto s = make_host_tensor<float>(make_shape(Int<2>{}, Int<8>{}));
  (void)topk_mask(s, make_shape(Int<1>{}, Int<4>{}), Int<5>{});
}
