// The FLCE chunk plan: how many rows of the (BT, V) logits exist at once, how many chunks the
// batch takes, and the exact scratch memory the chunk loop allocates. Static shapes give a
// static plan (StaticFlcePlan) whose numbers are usable as template arguments; run-time shapes
// give the same numbers from the same code as an FlcePlan value.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/int.hpp"

namespace tessel::flce {

namespace detail {
// FLCE's helpers build on the core's (sentence, throw_error, overflow checks).
using namespace ::tessel::detail;
}  // namespace detail

// Where the chunk loop runs; the scratch it allocates differs for 16-bit storage types.
enum class Device : std::uint8_t { host, cuda };

// The heuristic never picks more rows than this (the contract's cap; also Liger-Kernel's
// practical limit, beyond which the chunk buffer outgrows the savings).
inline constexpr index_t max_chunk_size = 2048;

// The host plan's default budget for one chunk of logits, in bytes of f32: 64 MiB. A CPU GEMM
// wants deep chunks (grad_weight's product is as deep as a chunk has rows, and each chunk streams
// the weight twice and grad_weight once), so the host plan takes the largest chunk the budget and
// the 1/8 rule allow (docs/flce.md, "The host plan").
inline constexpr index_t host_chunk_budget = index_t{64} << 20;

// The device plan's default budget for one chunk of logits, in bytes of f32: 1 GiB. On a GPU each
// chunk also reads and writes grad_weight's f32 accumulator (V * H * 8 bytes of traffic), which
// shallow chunks repeat: measured on an H200 at BT 4096, H 4096, V 128256 (bf16), Liger-Kernel's
// 128-row chunks take 76 ms, 1024-row chunks 24.5 ms, PyTorch's unchunked eager call 23.9 ms
// (docs/benchmarks.md, "CUDA FLCE").
inline constexpr index_t device_chunk_budget = index_t{1} << 30;

// Every scratch buffer starts on a multiple of this (cuBLAS and vector loads want it).
inline constexpr index_t scratch_alignment = 256;

// Bytes of the small block of scalars (divisors, the first bad target) in the scratch.
inline constexpr index_t scratch_scalar_bytes = 256;

// Byte offsets of the buffers the chunk loop carves out of one scratch allocation; a buffer
// that a (dtype, device) pair does not use has size 0. R = min(chunk_size, bt) rows are
// allocated, C = sizeof(compute type) (8 for f64, else 4), S = sizeof(storage type):
//   logits          R * V * C   (C type; in place for f32/f64: the gradient overwrites it)
//   gradient        R * V * S   (cuda, f16/bf16: the logits gradient in the storage type,
//                                 what the tensor-core GEMMs read)
//   weight_f32      V * H * 4   (host, f16/bf16: the weight converted once for Eigen)
//   input_f32       R * H * 4   (host, f16/bf16: one chunk of input, converted)
//   grad_input_f32  R * H * 4   (host, f16/bf16: one chunk of grad_input before rounding)
//   row_loss        BT * C      (each row's cross-entropy term, summed after the loop)
//   row_z           BT * C      (each row's z-loss term)
//   row_soft        BT * C      (each row's soft-target term)
//   row_correct     BT          (1 byte a row: its argmax is its target, for the accuracy)
//   scalars         256         (divisors and the first bad target)
// Every size is rounded up to scratch_alignment.
struct ScratchLayout {
  index_t logits = 0, logits_bytes = 0;
  index_t gradient = 0, gradient_bytes = 0;
  index_t weight_f32 = 0, weight_f32_bytes = 0;
  index_t input_f32 = 0, input_f32_bytes = 0;
  index_t grad_input_f32 = 0, grad_input_f32_bytes = 0;
  index_t row_loss = 0, row_loss_bytes = 0;
  index_t row_z = 0, row_z_bytes = 0;
  index_t row_soft = 0, row_soft_bytes = 0;
  index_t row_correct = 0, row_correct_bytes = 0;
  index_t scalars = 0, scalars_bytes = 0;
  index_t total = 0;
};

namespace detail {

// The smallest power of two >= x, but at most `cap` (so it cannot overflow). @pre x >= 1
constexpr index_t next_pow2_capped(index_t x, index_t cap) {
  index_t p = 1;
  while (p < x && p < cap) p *= 2;
  return p;
}

// Liger-Kernel's heuristic: as many row chunks as the vocabulary is wider than the hidden size,
// so that the (chunk, V) logits stay about as large as the (BT, H) input.
// @pre h >= 1, v >= 1
constexpr index_t heuristic_chunk_size(index_t bt, index_t h, index_t v) {
  if (bt <= 0) return 1;
  index_t const inc_factor = (v + h - 1) / h;
  index_t const rows = bt / inc_factor + (bt % inc_factor != 0 ? 1 : 0);
  return next_pow2_capped(rows, max_chunk_size);
}

// The budgeted heuristic of the host and device plans: the largest power of two of rows whose f32
// logits, rows * V * 4 bytes, stay within `budget` bytes and within 1/parts of the whole (BT, V)
// logits, at most max_chunk_size rows and at least 1.
// @pre v >= 1, budget >= 0, parts >= 1
constexpr index_t budgeted_chunk_size(index_t bt, index_t v, index_t budget, index_t parts) {
  index_t rows = 1;
  while (rows * 2 <= bt / parts && rows * 2 <= max_chunk_size && rows * 2 <= budget / 4 / v)
    rows *= 2;
  return rows;
}

// The host plan keeps a chunk within 1/8 of the logits, the device plan within 1/4.
inline constexpr index_t host_chunk_parts = 8;
inline constexpr index_t device_chunk_parts = 4;

constexpr index_t plan_num_chunks(index_t bt, index_t chunk) {
  return bt <= 0 ? 0 : bt / chunk + (bt % chunk != 0 ? 1 : 0);
}

inline void throw_bad_plan(char const* what, index_t value, char const* bound) {
  throw_error(sentence("an FLCE plan needs ", what, " ", bound, ", got ", value, "."));
}

constexpr void check_plan_arguments(index_t bt, index_t h, index_t v) {
  if (bt < 0) throw_bad_plan("a row count (bt)", bt, ">= 0");
  if (h < 1) throw_bad_plan("a hidden size", h, ">= 1");
  if (v < 1) throw_bad_plan("a vocabulary size", v, ">= 1");
}

constexpr index_t align_up(index_t bytes) {
  return (bytes + scratch_alignment - 1) / scratch_alignment * scratch_alignment;
}

// a * b * c bytes, or tessel::Error when that does not fit in int64.
constexpr index_t checked_bytes(index_t a, index_t b, index_t c) {
  index_t ab = 0, abc = 0;
  if (mul_overflow(a, b, ab) || mul_overflow(ab, c, abc) || abc > index_max - scratch_alignment)
    throw_error(sentence("the FLCE scratch buffer of ", a, " x ", b, " x ", c,
                         " bytes does not fit in a 64-bit size."));
  return align_up(abc);
}

}  // namespace detail

// A run-time plan. Also what a StaticFlcePlan converts to.
//
// Both plan kinds answer the same extent queries — batch_extent(), hidden_extent(),
// vocab_extent(), rows_per_chunk(), chunk_count() — with an index_t here and an Int<N> in a
// StaticFlcePlan. The chunk loop and the row kernel are written against these queries, so one
// template serves both: instantiated with a StaticFlcePlan its index arithmetic is on constants.
struct FlcePlan {
  index_t bt = 0;
  index_t hidden = 1;
  index_t vocab = 1;
  index_t chunk_size = 1;  // rows of logits per chunk
  index_t num_chunks = 0;  // ceil(bt / chunk_size)

  TESSEL_HOST_DEVICE constexpr index_t batch_extent() const { return bt; }
  TESSEL_HOST_DEVICE constexpr index_t hidden_extent() const { return hidden; }
  TESSEL_HOST_DEVICE constexpr index_t vocab_extent() const { return vocab; }
  TESSEL_HOST_DEVICE constexpr index_t rows_per_chunk() const { return chunk_size; }
  TESSEL_HOST_DEVICE constexpr index_t chunk_count() const { return num_chunks; }

  // Rows the chunk buffers hold: a chunk, or the whole batch when it is smaller.
  constexpr index_t buffer_rows() const { return bt < chunk_size ? bt : chunk_size; }

  // Where each scratch buffer lies for `storage` on `device` (see ScratchLayout).
  // @pre storage is f32, f64, f16 or bf16
  constexpr ScratchLayout scratch_layout(DType storage, Device device = Device::cuda) const {
    bool const wide = storage == DType::f64;
    bool const narrow = storage == DType::f16 || storage == DType::bf16;
    if (!wide && !narrow && storage != DType::f32)
      detail::throw_error(detail::sentence("FLCE computes on f32, f64, f16 or bf16 storage, not ",
                                           dtype_name(storage), "."));
    index_t const c = wide ? 8 : 4;
    index_t const s = static_cast<index_t>(dtype_size(storage));
    index_t const r = buffer_rows();
    ScratchLayout l{};
    index_t at = 0;
    auto place = [&](index_t& offset, index_t& size, index_t bytes) {
      offset = at;
      size = bytes;
      at += bytes;
    };
    place(l.logits, l.logits_bytes, detail::checked_bytes(r, vocab, c));
    place(l.gradient, l.gradient_bytes,
          narrow && device == Device::cuda ? detail::checked_bytes(r, vocab, s) : 0);
    bool const host_narrow = narrow && device == Device::host;
    place(l.weight_f32, l.weight_f32_bytes,
          host_narrow ? detail::checked_bytes(vocab, hidden, 4) : 0);
    place(l.input_f32, l.input_f32_bytes, host_narrow ? detail::checked_bytes(r, hidden, 4) : 0);
    place(l.grad_input_f32, l.grad_input_f32_bytes,
          host_narrow ? detail::checked_bytes(r, hidden, 4) : 0);
    place(l.row_loss, l.row_loss_bytes, detail::checked_bytes(bt, 1, c));
    place(l.row_z, l.row_z_bytes, detail::checked_bytes(bt, 1, c));
    place(l.row_soft, l.row_soft_bytes, detail::checked_bytes(bt, 1, c));
    place(l.row_correct, l.row_correct_bytes, detail::checked_bytes(bt, 1, 1));
    place(l.scalars, l.scalars_bytes, scratch_scalar_bytes);
    l.total = at;
    return l;
  }

  // Bytes of scratch the chunk loop allocates (one allocation; ScratchLayout gives the formula).
  constexpr index_t scratch_bytes(DType storage, Device device = Device::cuda) const {
    return scratch_layout(storage, device).total;
  }

  friend constexpr bool operator==(FlcePlan const&, FlcePlan const&) = default;
};

namespace detail {

// Each check is a class template so that a failure shows the offending values.
template <index_t BT, index_t H, index_t V>
struct StaticPlanArguments {
  static_assert(BT >= 0, "tessel: an FLCE plan needs a row count (bt) >= 0.");
  static_assert(H >= 1, "tessel: an FLCE plan needs a hidden size >= 1.");
  static_assert(V >= 1, "tessel: an FLCE plan needs a vocabulary size >= 1.");
  static constexpr bool ok = true;
};
template <index_t Chunk>
struct StaticChunkSize {
  static_assert(Chunk >= 1, "tessel: an FLCE chunk size must be >= 1.");
  static constexpr bool ok = true;
};

}  // namespace detail

// A plan whose numbers are types: decltype(plan)::chunk_size is a constant expression, and the
// extent queries (FlcePlan's, above) return Int<...>s, so the chunk loop and the row kernel
// instantiated with this plan see BT, H, V, the chunk size and the chunk count as constants. An
// empty object: passing it to a kernel costs no parameter space.
template <index_t BT, index_t H, index_t V, index_t Chunk>
struct StaticFlcePlan {
  static constexpr index_t bt = BT;
  static constexpr index_t hidden = H;
  static constexpr index_t vocab = V;
  static constexpr index_t chunk_size = Chunk;
  static constexpr index_t num_chunks = detail::plan_num_chunks(BT, Chunk);

  TESSEL_HOST_DEVICE static constexpr Int<BT> batch_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<H> hidden_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<V> vocab_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<Chunk> rows_per_chunk() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<num_chunks> chunk_count() { return {}; }
  static constexpr index_t buffer_rows() { return BT < Chunk ? BT : Chunk; }

  constexpr operator FlcePlan() const { return {bt, hidden, vocab, chunk_size, num_chunks}; }

  constexpr ScratchLayout scratch_layout(DType storage, Device device = Device::cuda) const {
    return FlcePlan(*this).scratch_layout(storage, device);
  }
  constexpr index_t scratch_bytes(DType storage, Device device = Device::cuda) const {
    return FlcePlan(*this).scratch_bytes(storage, device);
  }
};

namespace detail {
template <class T>
struct is_static_flce_plan : std::false_type {};
template <index_t BT, index_t H, index_t V, index_t C>
struct is_static_flce_plan<StaticFlcePlan<BT, H, V, C>> : std::true_type {};
}  // namespace detail

// A plan of either kind.
template <class P>
concept AnyFlcePlan = std::same_as<std::remove_cvref_t<P>, FlcePlan> ||
    detail::is_static_flce_plan<std::remove_cvref_t<P>>::value;

// The plan for BT rows of hidden size H over a vocabulary of V, Liger-Kernel's:
//   chunk_size = min(2048, next_pow2(ceil(bt / ceil(v / h)))) (1 when bt <= 0),
//   num_chunks = ceil(bt / chunk_size).
// Static bt, h and v give a StaticFlcePlan; otherwise an FlcePlan with the same numbers.
// @pre bt >= 0, h >= 1, v >= 1 (tessel::Error, or a static_assert when static)
template <Integer BT, Integer H, Integer V>
constexpr auto make_plan(BT bt, H h, V v) {
  if constexpr (StaticInt<BT> && StaticInt<H> && StaticInt<V>) {
    static_assert(detail::StaticPlanArguments<BT::value, H::value, V::value>::ok);
    return StaticFlcePlan<BT::value, H::value, V::value,
                          detail::heuristic_chunk_size(BT::value, H::value, V::value)>{};
  } else {
    detail::check_plan_arguments(to_index(bt), to_index(h), to_index(v));
    index_t const chunk = detail::heuristic_chunk_size(to_index(bt), to_index(h), to_index(v));
    return FlcePlan{to_index(bt), to_index(h), to_index(v), chunk,
                    detail::plan_num_chunks(to_index(bt), chunk)};
  }
}

namespace detail {
// The budgeted plan (make_host_plan, make_device_plan): chunks of budgeted_chunk_size rows, a
// chunk at most 1/Parts of the batch.
template <index_t Parts, Integer BT, Integer H, Integer V, Integer Budget>
constexpr auto make_budgeted_plan(BT bt, H h, V v, Budget budget_bytes) {
  if constexpr (StaticInt<BT> && StaticInt<H> && StaticInt<V> && StaticInt<Budget>) {
    static_assert(StaticPlanArguments<BT::value, H::value, V::value>::ok);
    static_assert(Budget::value >= 0, "tessel: an FLCE scratch budget must be >= 0 bytes.");
    return StaticFlcePlan<BT::value, H::value, V::value,
                          budgeted_chunk_size(BT::value, V::value, Budget::value, Parts)>{};
  } else {
    check_plan_arguments(to_index(bt), to_index(h), to_index(v));
    if (to_index(budget_bytes) < 0)
      throw_error(
          sentence("an FLCE scratch budget must be >= 0 bytes, got ", to_index(budget_bytes), "."));
    index_t const chunk =
        budgeted_chunk_size(to_index(bt), to_index(v), to_index(budget_bytes), Parts);
    return FlcePlan{to_index(bt), to_index(h), to_index(v), chunk,
                    plan_num_chunks(to_index(bt), chunk)};
  }
}
}  // namespace detail

// The plan of a host call (flce::forward on host tensors): the largest power of two of rows whose
// f32 logits fit in budget_bytes (64 MiB by default) and in 1/8 of the whole (BT, V) logits, at
// most 2048:
//   chunk_size = max{2^j : 2^j <= bt / 8, 2^j <= 2048, 2^j * v * 4 <= budget_bytes} (1 if none),
//   num_chunks = ceil(bt / chunk_size).
// A CPU's GEMMs want the deepest chunks memory allows (Liger-Kernel's rule, make_plan, sizes
// chunks for a GPU's memory and gives 64 rows at BT 2048, V 32000; this gives 256). Static bt, h,
// v (and budget) give a StaticFlcePlan.
// @pre bt >= 0, h >= 1, v >= 1, budget_bytes >= 0
template <Integer BT, Integer H, Integer V, Integer Budget = Int<host_chunk_budget>>
constexpr auto make_host_plan(BT bt, H h, V v, Budget budget_bytes = {}) {
  return detail::make_budgeted_plan<detail::host_chunk_parts>(bt, h, v, budget_bytes);
}

// The plan of a CUDA call (flce::forward on device tensors): the largest power of two of rows
// whose f32 logits fit in budget_bytes (1 GiB by default) and in 1/4 of the whole (BT, V) logits,
// at most 2048:
//   chunk_size = max{2^j : 2^j <= bt / 4, 2^j <= 2048, 2^j * v * 4 <= budget_bytes} (1 if none),
//   num_chunks = ceil(bt / chunk_size).
// Deep chunks keep the GEMMs on the tensor cores and read grad_weight's f32 accumulator a few
// times instead of BT / chunk times; Liger-Kernel's rule (make_plan) gives 128 rows at BT 4096,
// V 128256 and runs 3.1x longer there (device_chunk_budget). Static bt, h, v (and budget) give a
// StaticFlcePlan.
// @pre bt >= 0, h >= 1, v >= 1, budget_bytes >= 0
template <Integer BT, Integer H, Integer V, Integer Budget = Int<device_chunk_budget>>
constexpr auto make_device_plan(BT bt, H h, V v, Budget budget_bytes = {}) {
  return detail::make_budgeted_plan<detail::device_chunk_parts>(bt, h, v, budget_bytes);
}

// The same with the chunk size chosen by the caller (any size >= 1; the 2048 cap applies only to
// the heuristic).
template <Integer BT, Integer H, Integer V, Integer C>
constexpr auto make_plan(BT bt, H h, V v, C chunk_size) {
  if constexpr (StaticInt<BT> && StaticInt<H> && StaticInt<V> && StaticInt<C>) {
    static_assert(detail::StaticPlanArguments<BT::value, H::value, V::value>::ok);
    static_assert(detail::StaticChunkSize<C::value>::ok);
    return StaticFlcePlan<BT::value, H::value, V::value, C::value>{};
  } else {
    detail::check_plan_arguments(to_index(bt), to_index(h), to_index(v));
    if (to_index(chunk_size) < 1)
      detail::throw_error(
          detail::sentence("an FLCE chunk size must be >= 1, got ", to_index(chunk_size), "."));
    return FlcePlan{to_index(bt), to_index(h), to_index(v), to_index(chunk_size),
                    detail::plan_num_chunks(to_index(bt), to_index(chunk_size))};
  }
}

}  // namespace tessel::flce
