// The host executor refuses device tensors at compile time.
// expect: the host executor writes host tensors only
#include <tessel/tessel.hpp>
using namespace tessel;
void f(float* device, float* host) {
  auto dst = make_device_tensor(device, make_shape(4));
  assign(dst, make_tensor(host, make_shape(4)) * 2.0f, exec::Serial{});
}
