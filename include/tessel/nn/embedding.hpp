// Embedding lookup (torch.nn.functional.embedding) and its backward, the scatter-add of the output
// gradient into the table's gradient (what autograd accumulates into weight.grad).
//
// The forward is a gather: a row body per token copies its table row (lanes stride over the
// features). The backward must add several tokens into one table row; atomics would make the
// sums depend on the order threads arrive in, so it is deterministic by construction instead:
// the token positions are sorted stably by id (std::stable_sort on the host; a CUB radix sort,
// also stable, in <tessel/nn/cuda.cuh>), and a row body per sorted position that starts a run
// of equal ids sums that run's gradient rows in increasing position, lanes striding over the
// features. Every element is summed in the same order on every executor and every run, so the
// host and the GPU give the same bits. Ids are checked on the host (their min and max, read
// back) before anything is written.
#pragma once

#include <algorithm>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/int.hpp"
#include "../core/int_tuple.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/memory.hpp"
#include "../exec/rows.hpp"
#include "../expr/assign.hpp"
#include "../expr/element.hpp"
#include "../expr/reduce.hpp"
#include "../tensor/tensor.hpp"
#include "detail/checks.hpp"

namespace tessel::nn {

namespace detail {

// out(n, :) = table(ids(n), :) for token n.
template <class OutV, class IdsV, class TableV>
struct EmbeddingRows {
  OutV out;      // (N, D)
  IdsV ids;      // (N)
  TableV table;  // (V, D)

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t n) const {
    index_t const id = static_cast<index_t>(ids(n));
    auto const d = get<1>(out.shape());
    for (index_t j = ctx.lane(); j < d; j += ctx.lanes())
      out(n, j) = store_element<typename OutV::element_type>(load_element(table(id, j)));
  }
};

// grad_table(id, :) += sum of grad_out(n, :) over the tokens n with that id, in increasing n.
// sorted_ids (N) are the ids in sorted order, positions (N) the token of each; the row of sorted
// position r works only when r starts a run of equal ids.
template <class C, class GradTableV, class GradOutV>
struct EmbeddingGradRows {
  GradTableV grad_table;  // (V, D)
  GradOutV grad_out;      // (N, D)
  index_t const* sorted_ids;
  index_t const* positions;
  index_t tokens;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t r) const {
    index_t const id = sorted_ids[r];
    if (r > 0 && sorted_ids[r - 1] == id) return;
    index_t end = r + 1;
    while (end < tokens && sorted_ids[end] == id) ++end;
    auto const d = get<1>(grad_out.shape());
    using G = typename GradTableV::element_type;
    for (index_t j = ctx.lane(); j < d; j += ctx.lanes()) {
      C sum = C(0);
      for (index_t m = r; m < end; ++m)
        sum += static_cast<C>(load_element(grad_out(positions[m], j)));
      grad_table(id, j) = store_element<G>(static_cast<C>(load_element(grad_table(id, j))) + sum);
    }
  }
};

// How an executor sorts token positions by id, stably: sort(executor, ids, sorted_ids,
// positions) with ids a rank-1 tensor of integers and the outputs N index_t each in the
// executor's space. The host's is here; exec::Cuda's in <tessel/nn/cuda.cuh>.
template <class X>
struct TokenSort {
  static_assert(sizeof(X) == 0,
                "tessel: nn::embedding_backward on device tensors (exec::Cuda) needs "
                "<tessel/nn/cuda.cuh>, included from a CUDA translation unit.");
};

template <exec::HostExecutor X>
struct TokenSort<X> {
  template <class Ids>
  static void sort(X const&, Ids const& ids, index_t* sorted_ids, index_t* positions) {
    index_t const n = to_index(size(ids.shape()));
    for (index_t i = 0; i < n; ++i) positions[i] = i;
    std::stable_sort(positions, positions + n,
                     [&](index_t a, index_t b) { return ids(a) < ids(b); });
    for (index_t i = 0; i < n; ++i) sorted_ids[i] = static_cast<index_t>(ids(positions[i]));
  }
};

template <TensorType Ids>
constexpr void check_ids_type() {
  static_assert(rank_of<Ids> == 1,
                "tessel: embedding ids are a rank-1 tensor (N); flatten a "
                "(B, T) tensor of ids first.");
  using V = typename std::remove_cvref_t<Ids>::value_type;
  static_assert(std::is_integral_v<V> && !std::is_same_v<V, bool>,
                "tessel: embedding ids are integers (int32 or int64, as torch's indices).");
}

// Every id in [0, rows): their min and max through the executor, read back.
template <class X, TensorType Ids>
void check_ids(X const& executor, char const* kernel, Ids const& ids, index_t rows) {
  if (to_index(size(ids.shape())) == 0) return;
  using V = std::remove_cv_t<typename std::remove_cvref_t<Ids>::value_type>;
  using Memory = exec::Memory<X>;
  auto range = Memory::template scratch<V>(executor, 2);
  assign(Memory::view(range.data(), make_shape(Int<1>{})), min(ids.view(), keep), executor);
  assign(Memory::view(range.data() + 1, make_shape(Int<1>{})), max(ids.view(), keep), executor);
  auto const lo = static_cast<index_t>(Memory::read(executor, range.data()));
  auto const hi = static_cast<index_t>(Memory::read(executor, range.data() + 1));
  if (lo < 0 || hi >= rows)
    tessel::detail::throw_error(tessel::detail::sentence(
        kernel, ": token ids range over [", lo, ", ", hi, "] but the table has ", rows,
        " rows; every id needs 0 <= id < ", rows, "."));
}

}  // namespace detail

// out(n, :) = table(ids(n), :) (torch.nn.functional.embedding(ids, table)).
// @pre ids: (N) integers in [0, V); table: (V, D); out: (N, D) — else tessel::Error naming the
//      values, before anything is written
template <TensorType Out, TensorType Ids, TensorType Table, exec::Executor X = exec::Auto>
void embedding(Out const& out, Ids const& ids, Table const& table, X const& executor = {}) {
  detail::check_ids_type<Ids>();
  static_assert(detail::rank_of<Table> == 2 && detail::rank_of<Out> == 2,
                "tessel: embedding takes a rank-2 table (V, D) and a rank-2 output (N, D).");
  detail::check_spaces<X, Out, Ids, Table>();
  detail::check_writable<Out>();
  detail::check_shape("embedding", "out", out, "table", table,
                      make_shape(get<0>(ids.shape()), get<1>(table.shape())));
  detail::check_ids(executor, "embedding", ids, to_index(get<0>(table.shape())));
  detail::EmbeddingRows<decltype(out.view()), decltype(ids.view()), decltype(table.view())> const
      body{out.view(), ids.view(), table.view()};
  for_each_row(executor, to_index(get<0>(ids.shape())), to_index(get<1>(table.shape())), body);
}

// grad_table(ids(n), :) += grad_out(n, :) for every token n, deterministically (the tokens of one
// id summed in increasing n, then added). Adds to what grad_table holds, as autograd accumulates
// into weight.grad, so a tied LM head's gradient may be there already; zero it first for the
// embedding's gradient alone.
// @pre ids: (N) integers in [0, V); grad_out: (N, D); grad_table: (V, D)
template <TensorType GradTable, TensorType Ids, TensorType GradOut, exec::Executor X = exec::Auto>
void embedding_backward(GradTable const& grad_table, Ids const& ids, GradOut const& grad_out,
                        X const& executor = {}) {
  detail::check_ids_type<Ids>();
  static_assert(detail::rank_of<GradTable> == 2 && detail::rank_of<GradOut> == 2,
                "tessel: embedding_backward takes a rank-2 grad_table (V, D) and a rank-2 "
                "grad_out (N, D).");
  detail::check_spaces<X, GradTable, Ids, GradOut>();
  detail::check_writable<GradTable>();
  detail::check_shape("embedding_backward", "grad_out", grad_out, "grad_table", grad_table,
                      make_shape(get<0>(ids.shape()), get<1>(grad_table.shape())));
  detail::check_ids(executor, "embedding_backward", ids, to_index(get<0>(grad_table.shape())));
  index_t const tokens = to_index(get<0>(ids.shape()));
  if (tokens == 0) return;
  using Memory = exec::Memory<X>;
  auto sorted_ids = Memory::template scratch<index_t>(executor, tokens);
  auto positions = Memory::template scratch<index_t>(executor, tokens);
  detail::TokenSort<X>::sort(executor, ids.view(), sorted_ids.data(), positions.data());
  using C = compute_t<typename std::remove_cvref_t<GradTable>::value_type>;
  detail::EmbeddingGradRows<C, decltype(grad_table.view()), decltype(grad_out.view())> const body{
      grad_table.view(), grad_out.view(), sorted_ids.data(), positions.data(), tokens};
  for_each_row(executor, tokens, to_index(get<1>(grad_out.shape())), body);
}

}  // namespace tessel::nn
