// The body of a tiled copy of a static (BT, H) activation, written once for the host and the GPU:
// block b copies tile b (local_tile), thread k of the block the elements it owns in that tile
// (local_partition), and an identity tensor tiled the same way says which of them lie inside the
// (BT, H) matrix. tiled_copy.cpp runs the body on the host over every block and thread (the host
// twin); tests/cuda/exec_cuda_test.cu launches it as a kernel, with blockIdx.x and threadIdx.x.
#pragma once

#include <type_traits>

#include <tessel/tessel.hpp>

namespace tiled_copy {

using tessel::index_t;
using tessel::Int;

// (BT, H) = (50, 40) is not a multiple of the (16, 32) tile: the buffers are padded to the tile
// grid's extent, (64, 64), and the body predicates the ragged edge. Functions rather than
// constexpr variables, so that device code can use them; every extent is a type.
TESSEL_HOST_DEVICE constexpr auto activation_shape() {  // (BT, H)
  return tessel::make_shape(Int<50>{}, Int<40>{});
}
TESSEL_HOST_DEVICE constexpr auto tile_shape() {  // a block's tile
  return tessel::make_shape(Int<16>{}, Int<32>{});
}
TESSEL_HOST_DEVICE constexpr auto thread_shape() {  // a block's threads, numbered row-major
  return tessel::make_shape(Int<4>{}, Int<8>{});
}
TESSEL_HOST_DEVICE constexpr auto padded_shape() {  // each extent rounded up to the tile's
  return tessel::make_shape(tessel::ceil_div(Int<50>{}, Int<16>{}) * Int<16>{},
                            tessel::ceil_div(Int<40>{}, Int<32>{}) * Int<32>{});
}
// Both buffers' layout; the (BT, H) matrix is its top-left corner.
TESSEL_HOST_DEVICE constexpr auto buffer_layout() {
  return tessel::make_layout(padded_shape());
}

static_assert(std::is_same_v<decltype(padded_shape()), tessel::tuple<Int<64>, Int<64>>>);
inline constexpr index_t block_count = 8;    // the (4, 2) grid of tiles
inline constexpr index_t thread_count = 32;  // per block
static_assert(block_count * 16 * 32 == decltype(tessel::size(buffer_layout()))::value);
static_assert(thread_count == decltype(tessel::size(thread_shape()))::value);

// What thread `thread` of block `block` does: copy the elements of src it owns in tile `block` to
// the same places of dst, those inside (BT, H) only. src and dst are tensors of buffer_layout, in
// host or device memory; dst's padding is never written.
template <class Src, class Dst>
TESSEL_HOST_DEVICE void copy_tile_part(Src const& src, Dst const& dst, index_t block,
                                       index_t thread) {
  auto coords = tessel::make_identity_tensor(padded_shape());    // coords(i, j) == (i, j)
  auto src_tile = tessel::local_tile(src, tile_shape(), block);  // (_16,_32)
  auto dst_tile = tessel::local_tile(dst, tile_shape(), block);
  auto where = tessel::local_tile(coords, tile_shape(), block);  // their coordinates in the whole
  auto mine = tessel::local_partition(src_tile, thread_shape(), thread);  // (_4,_4)
  auto out = tessel::local_partition(dst_tile, thread_shape(), thread);
  auto at = tessel::local_partition(where, thread_shape(), thread);
  for (index_t i = 0; i < decltype(tessel::size(mine))::value; ++i)
    if (tessel::elem_less(at(i), activation_shape())) out(i) = mine(i);
}

}  // namespace tiled_copy
