// XOR swizzles of offsets, and layouts followed by one: what makes a shared-memory tile free of
// bank conflicts for both its row-wise and its column-wise (transposing) accesses.
//
// Swizzle<B, M, S> is a function on offsets, not a layout: it XORs the B bits of an offset that
// start at bit M + max(0, S) into the B bits that start at bit M + max(0, -S), so y = x ^
// ((x & source_mask) >> S) for S > 0 (<< -S for S < 0). The M lowest bits (a vector of 2^M
// elements) never move. An XOR swizzle cannot be a Shape:Stride layout (it is not linear in the
// coordinates), so it is its own type and composition(swizzle, layout) gives a SwizzledLayout,
// another type whose offsets are swizzle(layout(coordinate)). Because the swizzle acts on
// offsets, it means the same thing whatever the convention of the layout under it: tessel's
// Swizzle<B, M, S> is CuTe's, bit for bit; only the 1-D indices of the layout are row-major.
//
// A SwizzledLayout is not a tessel::Layout: it has a shape and offsets but no strides, so the
// stride-based algebra (coalesce, complement, inverses) and the tensor layer (slices, views,
// executors, which read strides) do not take it. A kernel indexes its shared-memory tile with
// the swizzled layout's offsets on a raw pointer, smem[tile(i, j)], or with
// swizzled_offset(swizzle, tensor.layout(), i, j).
#pragma once

#include <ostream>
#include <string>
#include <type_traits>

#include "composition.hpp"
#include "layout.hpp"
#include "print.hpp"

namespace tessel {

// y = x ^ ((x & source_mask) >> S) (<< -S when S < 0), on offsets x >= 0. All parameters are
// compile-time: B bits are flipped, the M lowest bits are kept, S is the distance from the bits
// flipped to the bits read (positive: the bits read are the higher ones).
// @post an involution: sw(sw(x)) == x; a bijection of every aligned block of `block` offsets,
//       and of [0, size(sw)), onto itself; sw(x + k * size(sw)) == sw(x) + k * size(sw)
template <int B, int M, int S>
struct Swizzle {
  static_assert(B >= 0, "tessel: Swizzle<B, M, S> needs B >= 0 (B is the number of bits flipped).");
  static_assert(M >= 0,
                "tessel: Swizzle<B, M, S> needs M >= 0 (M is the number of low bits kept).");
  static_assert(S >= B || -S >= B,
                "tessel: Swizzle<B, M, S> needs |S| >= B: the B bits it reads and the B bits it "
                "flips, |S| apart, would overlap.");
  static_assert(B + M + (S < 0 ? -S : S) <= 62,
                "tessel: Swizzle<B, M, S> needs B + M + |S| <= 62, so its bits fit a non-negative "
                "int64 offset.");

  static constexpr int bits = B;
  static constexpr int base = M;
  static constexpr int shift = S;
  // The bits read and the bits flipped.
  static constexpr index_t source_mask = ((index_t{1} << B) - 1) << (M + (S > 0 ? S : 0));
  static constexpr index_t target_mask = ((index_t{1} << B) - 1) << (M + (S < 0 ? -S : 0));
  // The smallest aligned block of offsets mapped onto itself: x and sw(x) differ only below the
  // highest flipped bit (1 for B == 0, the identity).
  static constexpr index_t block = B == 0 ? 1 : index_t{1} << (B + M + (S < 0 ? -S : 0));

  // @pre offset >= 0
  TESSEL_HOST_DEVICE static constexpr index_t apply(index_t offset) {
    if constexpr (S >= 0) {
      return offset ^ ((offset & source_mask) >> S);
    } else {
      return offset ^ ((offset & source_mask) << -S);
    }
  }

  TESSEL_HOST_DEVICE constexpr index_t operator()(index_t offset) const { return apply(offset); }
  // A static offset stays static.
  template <index_t N>
  TESSEL_HOST_DEVICE constexpr Int<apply(N)> operator()(Int<N>) const {
    return {};
  }
};

namespace detail {
template <class T>
struct is_swizzle : std::false_type {};
template <int B, int M, int S>
struct is_swizzle<Swizzle<B, M, S>> : std::true_type {};
}  // namespace detail

// A tessel::Swizzle of any parameters.
template <class T>
concept SwizzleType = detail::is_swizzle<std::remove_cvref_t<T>>::value;

// 2^(B + M + |S|): past every bit the swizzle reads or flips, so [0, size) is permuted onto
// itself and the pattern repeats with this period.
template <int B, int M, int S>
TESSEL_HOST_DEVICE constexpr auto size(Swizzle<B, M, S>) {
  return Int<(index_t{1} << (B + M + (S < 0 ? -S : S)))>{};
}
// The swizzle is a bijection of [0, size) onto itself: cosize == size.
template <int B, int M, int S>
TESSEL_HOST_DEVICE constexpr auto cosize(Swizzle<B, M, S> sw) {
  return size(sw);
}

// An XOR swizzle is an involution: it is its own inverse, left and right.
template <SwizzleType Sw>
TESSEL_HOST_DEVICE constexpr auto left_inverse(Sw const& sw) {
  return sw;
}
template <SwizzleType Sw>
TESSEL_HOST_DEVICE constexpr auto right_inverse(Sw const& sw) {
  return sw;
}

// The layout l followed by the swizzle sw: offset sw(l(c)) for every coordinate c of l.
template <SwizzleType Sw, LayoutType L>
struct SwizzledLayout : private tuple<Sw, L> {
  using swizzle_type = Sw;
  using layout_type = L;

  constexpr SwizzledLayout() = default;
  TESSEL_HOST_DEVICE constexpr SwizzledLayout(Sw const& sw, L const& l) : tuple<Sw, L>(sw, l) {}

  TESSEL_HOST_DEVICE constexpr Sw swizzle() const {
    return tessel::get<0>(static_cast<tuple<Sw, L> const&>(*this));
  }
  TESSEL_HOST_DEVICE constexpr decltype(auto) layout() const {
    return tessel::get<1>(static_cast<tuple<Sw, L> const&>(*this));
  }
  TESSEL_HOST_DEVICE constexpr decltype(auto) shape() const { return layout().shape(); }

  // sl(i, j, ...) with one coordinate per mode, or sl(i) with a 1-D row-major index; static when
  // the layout's offset is.
  template <class... C>
  TESSEL_HOST_DEVICE constexpr auto operator()(C const&... c) const {
    return swizzle()(layout()(c...));
  }
};

namespace detail {
template <class T>
struct is_swizzled_layout : std::false_type {};
template <class Sw, class L>
struct is_swizzled_layout<SwizzledLayout<Sw, L>> : std::true_type {};
}  // namespace detail

// A tessel::SwizzledLayout.
template <class T>
concept SwizzledLayoutType = detail::is_swizzled_layout<std::remove_cvref_t<T>>::value;

// sw after l: a SwizzledLayout with l's shape. l may be a layout or a shape (its compact
// row-major layout).
// @post c(x) == sw(l(x)) for every coordinate x of l; shape(c) == shape(l)
template <SwizzleType Sw, class LArg>
requires(LayoutType<LArg> || IntTuple<LArg>) TESSEL_HOST_DEVICE
    constexpr auto composition(Sw const& sw, LArg const& l) {
  auto layout = make_layout(l);
  return SwizzledLayout<Sw, decltype(layout)>(sw, layout);
}

// A swizzled layout after b: sw(l(b(x))), the swizzle kept outermost (composition is
// associative). Refused, as composition(l, b) is, when l and b do not compose.
// @post c(x) == s(b(x)) for every coordinate x of b
template <SwizzledLayoutType SL, class BArg>
TESSEL_HOST_DEVICE constexpr auto composition(SL const& s, BArg const& b) {
  return composition(s.swizzle(), composition(s.layout(), b));
}

// ---- queries ----

template <SwizzledLayoutType SL>
TESSEL_HOST_DEVICE constexpr decltype(auto) shape(SL const& s) {
  return s.shape();
}
template <SwizzledLayoutType SL>
TESSEL_HOST_DEVICE constexpr auto rank(SL const& s) {
  return rank(s.layout());
}
template <SwizzledLayoutType SL>
TESSEL_HOST_DEVICE constexpr auto size(SL const& s) {
  return size(s.layout());
}

// The offsets the swizzled layout may reach: cosize(l) rounded up to a multiple of the swizzle's
// block (the swizzle maps each aligned block onto itself). This is the memory to allocate; it is
// 1 + the largest offset whenever l reaches every offset of the last block below it (a compact
// tile whose size is a multiple of the block, as every smem_swizzled_layout is). Static for a
// static layout.
// @post every offset s(i), 0 <= i < size(s), is < cosize(s)
template <SwizzledLayoutType SL>
TESSEL_HOST_DEVICE constexpr auto cosize(SL const& s) {
  constexpr auto block = Int<std::remove_cvref_t<SL>::swizzle_type::block>{};
  return ceil_div(cosize(s.layout()), block) * block;
}

// The offset of coordinate c of l once swizzled, sw(l(c...)): how a kernel indexes a tensor (a
// tessel::Tensor cannot hold a SwizzledLayout) whose memory is swizzled, e.g.
// t.data()[swizzled_offset(sw, t.layout(), i, j)].
template <SwizzleType Sw, LayoutType L, class... C>
TESSEL_HOST_DEVICE constexpr auto swizzled_offset(Sw const& sw, L const& l, C const&... c) {
  return composition(sw, l)(c...);
}

// ---- text ----

// "Swizzle<3,3,3>".
template <int B, int M, int S>
std::string to_string(Swizzle<B, M, S>) {
  return "Swizzle<" + std::to_string(B) + "," + std::to_string(M) + "," + std::to_string(S) + ">";
}
// "Swizzle<3,3,3> o (_8,_64):(_64,_1)": the swizzle after the layout.
template <SwizzledLayoutType SL>
std::string to_string(SL const& s) {
  return to_string(s.swizzle()) + " o " + to_string(s.layout());
}
template <int B, int M, int S>
std::ostream& operator<<(std::ostream& os, Swizzle<B, M, S> sw) {
  return os << to_string(sw);
}
template <class Sw, class L>
std::ostream& operator<<(std::ostream& os, SwizzledLayout<Sw, L> const& s) {
  return os << to_string(s);
}

// ---- shared memory ----

namespace detail {

TESSEL_HOST_DEVICE constexpr int log2_exact(index_t x) {
  int k = 0;
  while (x > 1 && x % 2 == 0) {
    x /= 2;
    ++k;
  }
  return x == 1 ? k : -1;
}

// The rule of SmemSwizzle. Shared memory serves a warp's 16-byte accesses a quarter warp (8
// threads, 128 bytes) at a time, from 32 banks of 4 bytes, i.e. 8 groups of 16 bytes; 8 threads
// are conflict-free when their vectors lie in 8 distinct groups. In element units a vector is
// 2^M elements (M = log2(16 / sizeof(T))) and a row holds R = 2^r vectors. Reading a column of
// vectors from 8 consecutive rows (a transposing copy, ldmatrix) puts all 8 in the same group
// when R >= 8, and in 8 / R groups otherwise. XORing the row's index bits into the vector's group
// bits spreads them: B = min(r, 3) bits (the group bits a row spans), shifted by S = max(r, 3)
// (from the first bit above one row, or above one 128-byte line when rows are shorter). Within
// the 8 consecutive vectors of a row-wise access the bits read are constant, so the XOR only
// permutes their groups and row-wise access stays conflict-free.
template <class T, index_t Cols>
struct SmemSwizzleRule {
  static constexpr bool element_fits = sizeof(T) <= 16 && 16 % sizeof(T) == 0;
  static constexpr index_t vector = element_fits ? index_t{16} / index_t{sizeof(T)} : 1;
  static constexpr bool rows_fit = Cols > 0 && Cols % vector == 0 && log2_exact(Cols / vector) >= 0;
  static_assert(element_fits,
                "tessel: SmemSwizzle needs an element type whose size divides 16 bytes (1, 2, 4, "
                "8 or 16), so a 16-byte vector holds whole elements.");
  static_assert(!element_fits || rows_fit,
                "tessel: SmemSwizzle needs rows of a power-of-two number of 16-byte vectors "
                "(Cols * sizeof(T) == 16 * 2^k bytes).");
  static constexpr int m = log2_exact(vector);
  static constexpr int r = rows_fit ? log2_exact(Cols / vector) : 0;
  using type = Swizzle<(r < 3 ? r : 3), m, (r > 3 ? r : 3)>;
};

}  // namespace detail

// The swizzle that makes a row-major shared-memory tile of Cols elements of T per row free of
// bank conflicts for 16-byte accesses, row-wise and column-wise (see detail::SmemSwizzleRule):
// Swizzle<min(r, 3), log2(16 / sizeof(T)), max(r, 3)> for rows of 2^r 16-byte vectors, e.g.
// Swizzle<3,3,3> for 64 halves (128-byte rows), Swizzle<2,2,3> for 16 floats (64-byte rows).
template <class T, index_t Cols>
using SmemSwizzle = typename detail::SmemSwizzleRule<T, Cols>::type;

// The row-major (rows, cols) tile of T swizzled by SmemSwizzle<T, cols>. cols must be static (the
// swizzle's bits are template parameters); rows may be a run-time integer.
// @post cosize(result) == rows * cols; result(i, j) keeps 16-byte vectors whole
template <class T, Integer Rows, Integer Cols>
TESSEL_HOST_DEVICE constexpr auto smem_swizzled_layout(Rows const& rows, Cols const& cols) {
  static_assert(StaticInt<Cols>,
                "tessel: smem_swizzled_layout needs the column count as a static Int<N> (the "
                "swizzle's bits are template parameters); rows may be a run-time integer.");
  if constexpr (StaticInt<Cols>) {
    return composition(SmemSwizzle<T, Cols::value>{}, make_layout(make_shape(rows, cols)));
  }
}

}  // namespace tessel
