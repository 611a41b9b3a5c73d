// 2:4 structured pruning of a small weight matrix, the sparsity that NVIDIA's sparse tensor cores
// (cuSPARSELt) run at twice the dense rate: in every group of 4 consecutive weights along the input
// dimension (the last mode of an (out, in) weight), at most 2 are nonzero.
//
// The groups are the blocks of a merged block view: a (4, 8) weight with blocks (1, 4) is seen as
// (4, 2, (1, 4)) — row, group, and the group's 4 weights — without copying anything.
//
// Every sparsity function takes an executor last: exec::Auto{} when it is left out (serial for a
// weight this small), exec::Serial{} or exec::OpenMP{} to choose, exec::Cuda{stream} for a weight
// in GPU memory (from a CUDA translation unit including <tessel/sparsity/cuda.cuh>; the mask is
// then computed on the GPU, without a copy to the host).
#include <cstdio>
#include <iostream>
#include <type_traits>

#include <tessel/tessel.hpp>

using namespace tessel;
using namespace tessel::literals;  // 4_c is Int<4>{}

namespace {

template <class T>
void print_matrix(char const* title, T const& t) {
  std::printf("%s\n", title);
  for (index_t r = 0; r < to_index(size(get<0>(t.shape()))); ++r) {
    for (index_t c = 0; c < to_index(size(get<1>(t.shape()))); ++c) {
      if (c % 4 == 0) std::printf(" |");
      if constexpr (std::is_same_v<typename T::value_type, bool>) {
        std::printf(" %5d", t(r, c) ? 1 : 0);
      } else {
        std::printf(" %5.2f", static_cast<double>(t(r, c)));
      }
    }
    std::printf(" |\n");
  }
}

}  // namespace

int main() {
  // A (4, 8) weight whose shape is known at compile time, with made-up values.
  auto w = make_host_tensor<float>(make_shape(4_c, 8_c));
  float const values[] = {0.3f,  -1.2f, 0.8f,  0.1f,  2.0f,  -0.4f, 0.0f, 0.9f,  -0.7f, 0.2f,  1.5f,
                          -1.1f, 0.6f,  0.5f,  -2.2f, 0.05f, 1.0f,  1.0f, -0.3f, 0.4f,  -0.8f, 1.7f,
                          0.2f,  -0.6f, 0.25f, -0.9f, 0.35f, 1.3f,  0.1f, -0.1f, 0.7f,  -1.4f};
  for (index_t i = 0; i < 32; ++i) w[i] = values[i];
  print_matrix("weight (4, 8), groups of 4 between bars:", w);

  // The groups as a view: (row, group, (1, 4)). A static pattern makes its shape static.
  constexpr NMPattern<Int<2>, Int<4>> p24{};
  auto groups = block_view(w, nm_group_shape<-1, 2>(p24), BlockOrder::merged);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(groups.shape())>,
                               tuple<Int<4>, Int<2>, tuple<Int<1>, Int<4>>>>);
  std::cout << "group view layout: " << groups.layout() << "; group (1, 1) starts with "
            << groups(1, 1, 0) << '\n';

  // The keep mask: the 2 largest |w| of every group (ties: the lower index), through the default
  // executor.
  auto keep = nm_mask(w, p24);
  print_matrix("keep mask (1 = kept):", keep);

  std::cout << "before pruning, satisfies 2:4? " << (satisfies(w, p24) ? "yes" : "no");
  if (auto v = first_violation(w, p24)) std::cout << " (" << to_string(*v) << ")";
  std::cout << '\n';

  apply_keep_mask(w, keep, exec::Serial{});  // in place, through the same memory, on this thread
  print_matrix("pruned weight:", w);
  std::cout << "after pruning, satisfies 2:4? " << (satisfies(w, p24, exec::Auto{}) ? "yes" : "no")
            << '\n';
  std::printf("kept fraction: %.3f (%lld of %lld weights)\n", density(w),
              static_cast<long long>(count_nonzero(w)), static_cast<long long>(numel(w)));
  return satisfies(w, p24) ? 0 : 1;
}
