// The CUDA executor: `tessel::assign(dst, expr, exec::Cuda{stream})` for device tensors, one fused
// kernel per assignment, queued on the stream (include from CUDA translation units; link
// CUDA::cudart). The host side lowers the assignment exactly as the host executor does
// (exec/lower.hpp: bind, refine, order by destination stride, jointly coalesce); then
//   elementwise                one grid-stride kernel over the coalesced destination: 16-byte
//                              packets when the nest is one contiguous aligned mode; else, when
//                              every layout is static, the nest lowered at compile time with its
//                              extents and strides as constants; else plain accesses when it is
//                              one mode, FastDivmod coordinates otherwise (rows and full
//                              reductions take the compile-time nest the same way)
//   reduction over one mode    one row kernel (a block per row, a warp per row for short rows),
//                              the producer expression evaluated inside it
//   softmax / log_softmax      the row kernel with the epilogue that writes the row
//   reduction over every mode  cub::DeviceReduce over a counting iterator transformed by the
//                              expression (argmax: (value, index) pairs), finalized on the way out
// Validation (shapes, destinations that repeat elements) happens on the host before any launch;
// device tensors only, checked at compile time. See docs/cuda.md.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#include <cub/device/device_reduce.cuh>

#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/cuda/scratch.hpp>
#include <tessel/exec/executors.hpp>
#include <tessel/exec/host.hpp>
#include <tessel/exec/lower.hpp>
#include <tessel/exec/route.hpp>

#include "cuda/kernels.cuh"

namespace tessel::exec::detail::cuda_exec {

using tessel::detail::view_of;

inline cudaStream_t stream_of(Cuda const& x) {
  return x.stream;
}

// Streaming multiprocessors of the current device (cached per device).
inline int sm_count() {
  int device = 0;
  TESSEL_CUDA_CHECK(cudaGetDevice(&device), "finding the current CUDA device");
  static int cache[64] = {};
  int& n = cache[device & 63];
  if (n == 0)
    TESSEL_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device),
                      "reading the device's multiprocessor count");
  return n;
}

// Blocks of a grid-stride kernel over `work` items: enough to fill the device several times
// over, never more than the work needs.
inline unsigned grid_blocks(index_t work, int threads) {
  index_t const needed = (work + threads - 1) / threads;
  index_t const fill = index_t{sm_count()} * (2048 / threads) * 4;
  return static_cast<unsigned>(std::max<index_t>(1, std::min(needed, fill)));
}

inline void check_launch(char const* what) {
  TESSEL_CUDA_CHECK(cudaGetLastError(), what);
}

// True when every flat index below n fits Index's signed half (what FastDivmod needs).
template <class Index>
constexpr bool fits(index_t n) {
  return n >= 0 && static_cast<std::uint64_t>(n) < (std::uint64_t{1} << (sizeof(Index) * 8 - 1));
}

// ---- device temporaries ----

// A zero-free compact device tensor of shape s in stream-ordered scratch.
template <class T, std::size_t R>
auto device_temporary(ExprShape<R> const& s, cudaStream_t stream) {
  auto layout = make_layout(shape_tuple(s));
  index_t const n = to_index(cosize(layout));
  auto buffer =
      std::make_shared<gpu::StreamBuffer>(static_cast<std::size_t>(n) * sizeof(T), stream);
  using V = ViewEngine<T, DeviceSpace>;
  T* p = static_cast<T*>(buffer->data());
  auto view = Tensor<V, decltype(layout)>(V{p, p, n}, layout);
  return OwnedView<decltype(view)>{view, std::move(buffer)};
}

template <class DV, class Node>
void run_assignment(DV const& dst, Node const& node, Cuda const& x);

// The element type of a node's device temporary: a compacted tensor leaf keeps its own element
// type (a bf16 leaf stays bf16, so the leaf's evaluator type does not change), anything else is
// stored in its compute type.
template <class Node>
struct temporary_element {
  using type = typename Node::value_type;
};
template <class V>
struct temporary_element<tessel::detail::TensorLeaf<V>> {
  using type = typename tessel::detail::TensorLeaf<V>::element_type;
};

// A reduction, row operation or non-coalescable leaf evaluated into a device temporary.
template <class Node>
auto materialize(Node const& node, Cuda const& x) {
  auto tmp = device_temporary<typename temporary_element<Node>::type>(node.shape(), stream_of(x));
  run_assignment(tmp.view, node, x);
  return tmp;
}

template <class DV>
constexpr void check_destination() {
  static_assert(std::is_same_v<typename DV::space, DeviceSpace>,
                "tessel: the CUDA executor writes device tensors only; this destination is a host "
                "tensor (use a host executor, or copy to the host afterwards).");
  static_assert(!std::is_const_v<typename DV::element_type>,
                "tessel: cannot assign to a tensor of const elements.");
}

// ---- launches ----

// True when every leaf of ev (and the destination) can be read with V-packets: unit innermost
// stride and packet-aligned pointers.
template <int V, class D, class Ev>
bool packet_ready(D const& d, Ev ev) {
  using T = typename D::element_type;
  bool ok = d.inner == 1 && reinterpret_cast<std::uintptr_t>(d.ptr) % packet_alignment_v<T, V> == 0;
  ev.visit_leaves([&](auto const& leaf) {
    using L = typename std::remove_cvref_t<decltype(leaf)>::element_type;
    ok = ok && leaf.inner == 1 &&
         reinterpret_cast<std::uintptr_t>(leaf.ptr) % packet_alignment_v<L, V> == 0;
  });
  return ok;
}

// Elements per 16-byte packet of the destination (at most 8).
template <class T>
inline constexpr int packet_width_v = sizeof(T) >= 16 ? 1
                                                      : (16 / sizeof(T) > 8 ? 8 : 16 / sizeof(T));

// The flat index type of a kernel over the compile-time nest of Of: 32 bits when twice its size
// (what a grid-stride loop's last index can reach: lanes never exceed the work plus a block) fits.
template <class Of>
using static_index_t =
    std::conditional_t<fits<std::uint32_t>(2 * Of::value.nest.size(0, Of::value.nest.rank) +
                                           kernels::row_threads + kernels::elementwise_threads),
                       std::uint32_t, std::uint64_t>;

// The compile-time indexer of Of's nest when the run-time lowering produced that very nest
// (always, for static layouts, unless the destination was swapped for a temporary of another
// layout); f(indexer) is then called and true returned.
template <class Of, class Nest, class F>
bool with_static_nest(Nest const& nest, F&& f) {
  if constexpr (Of::value.ok) {
    if (same_nest(nest, Of::value.nest)) {
      f(StaticNestIndexer<Of, static_index_t<Of>>{});
      return true;
    }
  }
  return false;
}

// The modes of a reduction node, and of a row operation, as types (for StaticNestOver).
template <class Node>
struct ReductionModesOf {
  static constexpr auto modes = reduction_modes<Node>();
  static constexpr auto dst_map = modes.output_to_input;
  static constexpr auto reduced = modes.reduced;
};
template <class Node>
struct RowOpModesOf {
  static constexpr std::size_t R = Node::input_type::rank;
  static constexpr auto dst_map = identity_map<R>();
  static constexpr auto reduced = [] {
    std::array<bool, at_least_one<R>> r{};
    r[Node::axis] = true;
    return r;
  }();
};

// Static: the assignment's compile-time nest as a type (Static::value.ok false when some layout
// is dynamic).
template <std::size_t K, class Static, class Nest, class D, class Ev>
void launch_elementwise(Nest const& nest, D const& d, Ev const& ev, index_t total,
                        cudaStream_t stream) {
  constexpr int threads = kernels::elementwise_threads;
  if (nest.rank == 1) {
    constexpr int V = packet_width_v<typename D::element_type>;
    if constexpr (V > 1) {
      if (packet_ready<V>(d, ev)) {
        kernels::elementwise_packet_kernel<V>
            <<<grid_blocks((total + V - 1) / V, threads), threads, 0, stream>>>(d, ev, total);
        return check_launch("launching the elementwise kernel");
      }
    }
  }
  // Constant extents and strides: coordinates by multiply-high, offsets by immediates.
  if (with_static_nest<Static>(nest, [&](auto idx) {
        using Index = typename decltype(idx)::index_type;
        kernels::elementwise_nest_kernel<<<grid_blocks(total, threads), threads, 0, stream>>>(
            idx, d, ev, static_cast<Index>(total));
      }))
    return check_launch("launching the elementwise kernel");
  if (nest.rank == 1) {
    kernels::elementwise_linear_kernel<<<grid_blocks(total, threads), threads, 0, stream>>>(d, ev,
                                                                                            total);
    return check_launch("launching the elementwise kernel");
  }
  if (fits<std::uint32_t>(total + index_t{grid_blocks(total, threads)} * threads)) {
    auto const idx = make_indexer<std::uint32_t, K>(nest);
    kernels::elementwise_nest_kernel<<<grid_blocks(total, threads), threads, 0, stream>>>(
        idx, d, ev, static_cast<std::uint32_t>(total));
  } else {
    auto const idx = make_indexer<std::uint64_t, K>(nest);
    kernels::elementwise_nest_kernel<<<grid_blocks(total, threads), threads, 0, stream>>>(
        idx, d, ev, static_cast<std::uint64_t>(total));
  }
  check_launch("launching the elementwise kernel");
}

// Row kernels: the team (block or warp), Flat (one reduced mode) and the indexer (compile-time
// nest, or run-time divisors in 32 or 64 bits) chosen here. `launch(team_tag, flat_tag, indexer)`
// launches one instantiation.
template <std::size_t K, class Static, class Nest, class Launch>
void dispatch_rows(Nest const& nest, index_t rows, index_t n, Launch const& launch) {
  if constexpr (Static::value.ok) {
    constexpr auto& S = Static::value.nest;
    constexpr index_t row_size = S.size(S.outer, S.rank);
    constexpr int team = row_size <= kernels::warp_row_limit ? 32 : kernels::row_threads;
    if (with_static_nest<Static>(nest, [&](auto idx) {
          launch(std::integral_constant<int, team>{}, std::bool_constant<S.rank - S.outer == 1>{},
                 idx);
        }))
      return;
  }
  bool const flat = nest.rank - nest.outer == 1;
  bool const narrow = fits<std::uint32_t>(rows) && fits<std::uint32_t>(n);
  auto with_index = [&](auto team, auto flat_tag) {
    if (narrow)
      launch(team, flat_tag, make_indexer<std::uint32_t, K>(nest));
    else
      launch(team, flat_tag, make_indexer<std::uint64_t, K>(nest));
  };
  auto with_flat = [&](auto team) {
    if (flat)
      with_index(team, std::true_type{});
    else
      with_index(team, std::false_type{});
  };
  if (n <= kernels::warp_row_limit)
    with_flat(std::integral_constant<int, 32>{});
  else
    with_flat(std::integral_constant<int, kernels::row_threads>{});
}

inline unsigned row_blocks(index_t rows, int team) {
  index_t const per_block = kernels::row_threads / team;
  index_t const blocks = (rows + per_block - 1) / per_block;
  if (blocks > INT_MAX)
    tessel::detail::throw_error(tessel::detail::sentence("cannot launch a row kernel over ", rows,
                                                         " rows: more than ", INT_MAX, " blocks."));
  return static_cast<unsigned>(blocks);
}

// ---- drivers (mirror exec/host.hpp's; the validation and messages are the same) ----

template <class DV, class Node>
void run_elementwise_assignment(DV const& dst, Node const& node, Cuda const& x);
template <class DV, class Node>
void run_reduction(DV const& dst, Node const& node, Cuda const& x);
template <class DV, class Node>
void run_row_op(DV const& dst, Node const& node, Cuda const& x);

// The CUDA executor's passes for the shared front end (exec/route.hpp).
struct CudaPasses {
  Cuda const& executor;
  template <class DV>
  void check(DV const&) const {
    check_destination<DV>();
  }
  template <class DV, class Node>
  void elementwise(DV const& dst, Node const& node) const {
    run_elementwise_assignment(dst, node, executor);
  }
  template <class DV, class Node>
  void reduction(DV const& dst, Node const& node) const {
    run_reduction(dst, node, executor);
  }
  template <class DV, class Node>
  void row_op(DV const& dst, Node const& node) const {
    run_row_op(dst, node, executor);
  }
  template <class Node>
  auto materialize(Node const& node) const {
    return cuda_exec::materialize(node, executor);
  }
  template <class T, class Shape>
  auto temporary(Shape const& shape) const {
    return device_temporary<T>(shape, stream_of(executor));
  }
  template <class Tmp>
  static auto view(Tmp& tmp) {
    return tmp.view;
  }
};

template <class DV, class Node>
void run_elementwise_assignment(DV const& dst, Node const& node, Cuda const& x) {
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr std::size_t R = tessel::detail::tensor_rank<DV>();
  auto const shape = tessel::detail::logical_shape(dst);
  index_t const total = tessel::detail::shape_size(shape);
  if (total == 0) return;
  constexpr std::size_t K = R + max_leaves_v<decltype(dst.shape())> + mode_capacity_v<Node> + 2;
  constexpr std::size_t N = 1 + leaf_count_v<Node>;
  Binder<R, K, N, DeviceSpace> b(shape, {});
  b.set_destination(dst, identity_map<R>());
  auto ev = bind<K>(node, b, [&](auto const& n) { return materialize(n, x); });
  auto nest = b.lower();
  if (nest.destination_repeats) throw_destination_repeats(dst);
  using S = StaticElementwiseNest<R, K, N, typename DV::layout_type, Node>;
  auto pass = [&](T* data) {
    b.apply(nest, ev);
    launch_elementwise<K, S>(nest, b.destination(data, nest), ev, total, stream_of(x));
  };
  write_through<T>(CudaPasses{x}, b, nest, true, dst, shape, identity_map<R>(), pass);
}

// dst = Kind over every mode of ev, through cub::DeviceReduce.
template <class Op, class T, std::size_t K, class Static, class Nest, class Ev>
void full_reduction(Op const& op, Nest const& nest, Ev const& ev, T* out, index_t n,
                    cudaStream_t stream) {
  auto run = [&](auto indexer) {
    using Index = typename decltype(indexer)::index_type;
    auto const input = thrust::make_transform_iterator(
        thrust::counting_iterator<Index>(0),
        NestReduceInput<Op, Ev, decltype(indexer)>{op, ev, indexer});
    auto const output = thrust::make_transform_output_iterator(out, FinalizeAs<Op, T>{op, n});
    std::size_t bytes = 0;
    TESSEL_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, input, output,
                                                static_cast<Index>(n), op, op.identity(), stream),
                      "sizing a device-wide reduction");
    gpu::StreamBuffer temp(bytes, stream);
    TESSEL_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), bytes, input, output,
                                                static_cast<Index>(n), op, op.identity(), stream),
                      "launching a device-wide reduction");
  };
  if (with_static_nest<Static>(nest, run)) return;
  if (fits<std::uint32_t>(n))
    run(make_indexer<std::uint32_t, K>(nest));
  else
    run(make_indexer<std::uint64_t, K>(nest));
}

template <class DV, class Node>
void run_reduction(DV const& dst, Node const& node, Cuda const& x) {
  using Kind = typename Node::kind;
  using In = typename Node::input_type;
  using Op = reduce_op_t<Kind, typename In::value_type>;
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr std::size_t R = In::rank;
  if (!prepare_reduction(node, [&](auto const& value) { run_assignment(dst, value, x); })) return;
  auto const shape = node.input.shape();
  Op const op{};
  constexpr auto modes = reduction_modes<Node>();
  constexpr std::size_t K = R + max_leaves_v<decltype(dst.shape())> + mode_capacity_v<In> + 2;
  constexpr std::size_t N = 1 + leaf_count_v<In>;
  using S = StaticNestOver<R, K, N, typename DV::layout_type, In, ReductionModesOf<Node>>;
  Binder<R, K, N, DeviceSpace> b(shape, modes.reduced);
  b.set_destination(dst, modes.output_to_input);
  auto ev = bind<K>(node.input, b, [&](auto const& n) { return materialize(n, x); });
  auto nest = b.lower();
  if (nest.destination_repeats) throw_destination_repeats(dst);
  cudaStream_t const stream = stream_of(x);
  auto pass = [&](T* data) {
    b.apply(nest, ev);
    auto d = b.destination(data, nest);
    index_t const rows = nest.size(0, nest.outer);
    index_t const n = nest.size(nest.outer, nest.rank);
    if constexpr (Node::over_all) {
      full_reduction<Op, T, K, S>(op, nest, ev, data, n, stream);
    } else {
      dispatch_rows<K, S>(nest, rows, n, [&](auto team, auto flat, auto idx) {
        using Index = typename decltype(idx)::index_type;
        kernels::reduce_row_kernel<decltype(team)::value, decltype(flat)::value>
            <<<row_blocks(rows, decltype(team)::value), kernels::row_threads, 0, stream>>>(
                op, idx, d, ev, static_cast<Index>(rows), n);
      });
      check_launch("launching a row reduction kernel");
    }
  };
  write_through<T>(CudaPasses{x}, b, nest, false, dst, node.shape(), modes.output_to_input, pass);
}

template <class DV, class Node>
void run_row_op(DV const& dst, Node const& node, Cuda const& x) {
  using In = typename Node::input_type;
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr std::size_t R = In::rank;
  constexpr bool log = Node::kind::log;
  auto const shape = node.input.shape();
  index_t const total = tessel::detail::shape_size(shape);
  if (total == 0) return;
  std::array<bool, at_least_one<R>> reduced{};
  reduced[Node::axis] = true;
  constexpr std::size_t K = R + max_leaves_v<decltype(dst.shape())> + mode_capacity_v<In> + 2;
  constexpr std::size_t N = 1 + leaf_count_v<In>;
  using S = StaticNestOver<R, K, N, typename DV::layout_type, In, RowOpModesOf<Node>>;
  Binder<R, K, N, DeviceSpace> b(shape, reduced);
  b.set_destination(dst, identity_map<R>());
  auto ev = bind<K>(node.input, b, [&](auto const& n) { return materialize(n, x); });
  auto nest = b.lower();
  if (nest.destination_repeats) throw_destination_repeats(dst);
  cudaStream_t const stream = stream_of(x);
  auto pass = [&](T* data) {
    b.apply(nest, ev);
    auto d = b.destination(data, nest);
    index_t const rows = nest.size(0, nest.outer);
    index_t const n = nest.size(nest.outer, nest.rank);
    dispatch_rows<K, S>(nest, rows, n, [&](auto team, auto flat, auto idx) {
      using Index = typename decltype(idx)::index_type;
      kernels::softmax_row_kernel<decltype(team)::value, log, decltype(flat)::value>
          <<<row_blocks(rows, decltype(team)::value), kernels::row_threads, 0, stream>>>(
              idx, d, ev, static_cast<Index>(rows), n);
    });
    check_launch("launching a softmax row kernel");
  };
  write_through<T>(CudaPasses{x}, b, nest, true, dst, shape, identity_map<R>(), pass);
}

// dst = node on the device (node broadcast to dst's shape). Validates before anything is queued.
template <class DV, class Node>
void run_assignment(DV const& dst, Node const& node, Cuda const& x) {
  route_assignment(CudaPasses{x}, dst, node);
}

}  // namespace tessel::exec::detail::cuda_exec

namespace tessel {

// dst = src on the device: one kernel (or one CUB reduction) queued on executor.stream. dst and
// every tensor in src are device tensors (a host tensor is a compile-time error). Throws
// tessel::Error, with nothing queued, when the shapes do not match.
template <class D, Operand Src, exec::DeviceExecutor X>
requires TensorType<D>
void assign(D&& dst, Src const& src, X const& executor) {
  exec::detail::cuda_exec::run_assignment(detail::view_of(dst), as_expr(src), executor);
}

}  // namespace tessel
