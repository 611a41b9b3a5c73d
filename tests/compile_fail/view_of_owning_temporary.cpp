// A view of an owning temporary would dangle; it fails to compile with a sentence.
// expect: would make a view of an owning temporary tensor
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>
using namespace tessel;
auto bad = transpose(make_host_tensor<float>(make_shape(2, 3)));
