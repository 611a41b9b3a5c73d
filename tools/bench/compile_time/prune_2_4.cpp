// Compile-time probe: a small sparsity program as a user writes it first (the umbrella header, a
// 2:4 keep mask of a run-time-shaped weight applied in place through the host executor, then a
// check), for the compile times of docs/benchmarks.md (issue #20's sparsity program).
#include <tessel/tessel.hpp>

#include <cstdio>

using namespace tessel;

int main() {
  auto w = make_host_tensor<float>(make_shape(index_t{64}, index_t{128}));
  for (index_t i = 0; i < numel(w); ++i) w[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  constexpr NMPattern<Int<2>, Int<4>> p24{};
  auto keep = nm_mask(w, p24);
  apply_keep_mask(w, keep, exec::Auto{});
  std::printf("2:4 %s, density %.3f\n", satisfies(w, p24) ? "yes" : "no", density(w));
  return satisfies(w, p24) ? 0 : 1;
}
