// A static 2:4 pattern along a static extent of 6 fails to compile.
// expect: the N:M group size M does not divide the extent
#include <tessel/sparsity/nm_mask.hpp>
using namespace tessel;
auto w = make_host_tensor<float>(make_shape(Int<2>{}, Int<6>{}));
auto bad = nm_mask(w, NMPattern<Int<2>, Int<4>>{});
