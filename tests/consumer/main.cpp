// Uses the installed package: a compile-time plan and a run-time view, checked, not just printed.
#include <tessel/tessel.hpp>

#include <cstdio>

int main() {
  using namespace tessel;
  constexpr auto merged = merge_small_dims(make_shape(Int<32>{}, Int<3>{}, Int<64>{}, Int<64>{}), Int<8192>{}, Int<1>{});
  static_assert(to_array(merged) == std::array<std::int64_t, 2>{96, 4096});
  auto t = make_host_tensor<float>(make_shape(4, 6));
  auto blocks = block_view(t, make_shape(2, 3), BlockOrder::merged);
  blocks(1, 1, 4) = 1.0f;
  if (t(3, 4) != 1.0f) {
    std::puts("consumer: block view did not write through");
    return 1;
  }
  std::printf("consumer: tessel %s works from an installed package\n", to_string(merged).c_str());
  return 0;
}
