// A guided tour of tessel's core: layouts whose static parts are types, the plans computed from
// shapes (merge_small_dims, multi_dim_split) and the three block views. Every static_assert below
// is checked by the compiler; every line printed is computed by the same code at run time.
#include <iostream>

#include <tessel/tessel.hpp>

using namespace tessel;
using namespace tessel::literals;  // 4_c is Int<4>{}

namespace {

void section(char const* title) { std::cout << "\n== " << title << " ==\n"; }

}  // namespace

int main() {
  section("1. A layout maps coordinates to offsets (row-major: the last mode is fastest)");
  auto matrix = make_layout(make_shape(4_c, 6_c));  // a 4x6 row-major matrix
  std::cout << "make_layout((4, 6))      = " << matrix << "   (static integers print as _N)\n";
  static_assert(matrix(2, 3) == 15);
  static_assert(std::is_empty_v<decltype(matrix)>);  // all static: the layout is a type
  std::cout << "matrix(2, 3)             = " << matrix(2, 3) << '\n';

  index_t rows = 3;  // a run-time extent keeps its place next to static ones
  auto mixed = make_layout(make_shape(rows, 8_c));
  std::cout << "make_layout((rows, 8))   = " << mixed << "   (rows = " << rows << " at run time)\n";
  print_layout(std::cout, make_layout(make_shape(2_c, 3_c), make_stride(1_c, 2_c)));

  section("2. Hierarchical modes: a 1-D index into mode (a, b) means (i / b, i % b)");
  auto nested = make_layout(make_shape(2_c, make_shape(3_c, 4_c)));
  std::cout << "layout  = " << nested << "\n";
  std::cout << "(1, 5) -> " << nested(1, 5) << "   (1, (1, 1)) -> " << nested(1, make_tuple(1, 1))
            << '\n';

  section("3. Layout algebra");
  std::cout << "coalesce(" << matrix << ")  = " << coalesce(matrix) << '\n';
  auto view = reshape(make_layout(make_shape(6_c), make_stride(2_c)), make_shape(2_c, 3_c));
  std::cout << "reshape((6):(2), (2, 3)) = " << view << "   (every other element, as a 2x3 view)\n";
  std::cout << "permute<1, 0>(matrix)    = " << permute<1, 0>(matrix) << '\n';
  try {
    (void)reshape(make_layout(make_shape(4, 4), make_stride(8, 1)), make_shape(16));
  } catch (Error const& e) {
    std::cout << "reshape of 4 columns of a 4x8 matrix to (16): tessel::Error: " << e.what() << '\n';
  }

  section("4. merge_small_dims: Distributed Shampoo's dimension merging, as a type");
  constexpr auto conv = make_shape(32_c, 3_c, 64_c, 64_c);  // a conv weight
  constexpr auto merged = merge_small_dims(conv, 8192_c, 1_c);
  static_assert(to_array(merged) == std::array<std::int64_t, 2>{96, 4096});
  std::cout << "merge_small_dims(" << conv << ", 8192, 1) = " << merged << '\n';
  std::cout << "merge_small_dims((32,3,64,64), 1024, 2) at run time = "
            << merge_small_dims(make_shape(32, 3, 64, 64), 1024, 2) << '\n';

  section("5. multi_dim_split: blocks of at most 2 per mode, in row-major block order");
  constexpr auto blocks = multi_dim_split(make_shape(5_c, 3_c), 2_c);
  static_assert(blocks.size() == 6);
  static_assert(to_array(get<5>(blocks).shape) == std::array<std::int64_t, 2>{1, 1});
  blocks.for_each([](auto block) {
    std::cout << "  offset " << block.offset << "  shape " << block.shape << '\n';
  });

  section("6. Block views of a 4x6 matrix with 2x3 blocks");
  auto block = make_shape(2_c, 3_c);
  std::cout << "interleaved (B0, b0, B1, b1)   " << block_layout(matrix, block, BlockOrder::interleaved) << '\n';
  std::cout << "reordered   (B0, B1, b0, b1)   " << block_layout(matrix, block, BlockOrder::reordered) << '\n';
  auto merged_view = block_layout(matrix, block, BlockOrder::merged);
  std::cout << "merged      (B0, B1, (b0, b1)) " << merged_view << '\n';
  std::cout << "block (1, 1), its 5th element  -> offset " << merged_view(1, 1, 4)
            << " = element (3, 4) of the matrix\n";

  section("7. Broadcasting a per-block value to every element (stride 0, no copy)");
  auto grid = make_layout(make_shape(2_c, 2_c));
  print_layout(std::cout, block_broadcast_layout(grid, block));
  return 0;
}
