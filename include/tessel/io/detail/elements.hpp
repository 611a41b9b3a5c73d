// Shared by the io readers and writers: shapes as text, checked byte counts, and element-wise
// conversion of a byte buffer of one DType into a vector of another C++ type.
#pragma once

#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/float16.hpp"
#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"

namespace tessel::detail::io {

// The file formats are little-endian and tessel copies their bytes straight into memory.
static_assert(std::endian::native == std::endian::little,
              "tessel: the io readers and writers need a little-endian host.");

// A shape as Python writes a tuple, "()", "(5,)", "(2, 3)": the notation the .npy header itself
// uses (error sentences write shapes with tessel::detail::shape_text, as everywhere else).
inline std::string python_tuple(std::span<std::int64_t const> shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ',';
  return out + ")";
}

// numel(shape) * itemsize, or nothing when that overflows int64. A zero extent gives 0 whatever
// the other extents are (the true product).
// @pre every extent >= 0
inline std::optional<std::int64_t> checked_nbytes(std::span<std::int64_t const> shape,
                                                  std::size_t itemsize) {
  for (std::int64_t e : shape) {
    if (e == 0) return 0;
  }
  std::int64_t n = static_cast<std::int64_t>(itemsize);
  for (std::int64_t e : shape) {
    if (mul_overflow(n, e, n)) return std::nullopt;
  }
  return n;
}

// The number of elements of a shape given by a user; throws on a negative extent or overflow.
inline std::int64_t checked_numel(std::span<std::int64_t const> shape) {
  for (std::int64_t e : shape) {
    if (e < 0)
      throw_error(sentence("shape ", tessel::detail::shape_text(shape), " has a negative extent."));
  }
  auto const n = checked_nbytes(shape, 1);
  if (!n) {
    throw_error(sentence("the number of elements of shape ", tessel::detail::shape_text(shape),
                         " overflows int64."));
  }
  return *n;
}

// The shortest text that reads back as v.
template <class T>
std::string number_text(T v) {
  char buffer[32];
  auto const r = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, r.ptr);
}

template <class T>
T load(std::byte const* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The C++ type a DType's bytes are read as, in DType's declaration order. bool is read as its
// byte, so a stored 2 means true instead of being an invalid bool object.
using storage_types =
    std::tuple<std::uint8_t, std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
               std::uint16_t, std::uint32_t, std::uint64_t, half, bfloat16, float, double>;
template <DType D>
using storage_t = std::tuple_element_t<static_cast<std::size_t>(D), storage_types>;
static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
  return ((static_cast<std::size_t>(all_dtypes[I]) == I &&
           sizeof(storage_t<all_dtypes[I]>) == dtype_size(all_dtypes[I])) &&
          ...);
}(std::make_index_sequence<all_dtypes.size()>{}));
static_assert(std::is_same_v<storage_t<DType::f16>, half> &&
              std::is_same_v<storage_t<DType::f32>, float> &&
              std::is_same_v<storage_t<DType::u64>, std::uint64_t>);

template <HasDType To, DType From>
[[noreturn]] void throw_cannot_hold(std::int64_t index, std::string const& value) {
  throw_error(sentence("cannot convert ", dtype_name(From), " to ", dtype_name(dtype_of_v<To>),
                       ": element ", index, " is ", value, ", which ", dtype_name(dtype_of_v<To>),
                       " cannot hold."));
}

// One element of dtype From (its stored value v) as To. Integer results are checked: a value
// that To cannot hold (NaN, infinity, out of range) throws instead of being undefined behaviour
// or silently wrapping. Floating-point results round to nearest (and overflow to infinity).
template <HasDType To, DType From>
To convert_element(storage_t<From> v, std::int64_t index) {
  using S = storage_t<From>;
  constexpr bool from_bool = From == DType::bool_;
  constexpr bool from_float16 = std::is_same_v<S, half> || std::is_same_v<S, bfloat16>;
  constexpr bool from_floating = from_float16 || std::is_floating_point_v<S>;
  // The stored value as a C++ arithmetic value (half and bfloat16 widen to float, exactly).
  auto value = [&] {
    if constexpr (from_float16)
      return static_cast<float>(v);
    else
      return v;
  };
  if constexpr (std::is_same_v<To, bool>) {
    return value() != 0;
  } else if constexpr (from_bool) {
    return v != 0 ? To(1.0f) : To(0.0f);
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
    if constexpr (std::is_same_v<S, To>)
      return v;
    else
      return To(static_cast<float>(value()));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value());
  } else if constexpr (!from_floating) {
    if (!std::in_range<To>(v)) throw_cannot_hold<To, From>(index, std::to_string(v));
    return static_cast<To>(v);
  } else {
    // Truncation toward zero, like static_cast, once the value is known to fit.
    double const t = std::trunc(static_cast<double>(value()));
    double const limit = std::ldexp(1.0, std::numeric_limits<To>::digits);  // exclusive
    double const low = std::is_signed_v<To> ? -limit : 0.0;                 // inclusive
    if (!(t >= low && t < limit)) throw_cannot_hold<To, From>(index, number_text(value()));
    return static_cast<To>(t);
  }
}

// The elements of a C-order buffer of `dtype`, converted to T.
// @pre bytes.size() == numel * dtype_size(dtype)
template <HasDType T>
std::vector<T> convert_elements(DType dtype, std::span<std::byte const> bytes, std::int64_t numel) {
  std::vector<T> out(static_cast<std::size_t>(numel));
  if constexpr (!std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    if (dtype == dtype_of_v<T>) {
      if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
      return out;
    }
  }
  visit_dtype(dtype, [&](auto element) {
    constexpr DType From = dtype_of_v<typename decltype(element)::type>;
    using S = storage_t<From>;
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = convert_element<T, From>(load<S>(bytes.data() + i * sizeof(S)),
                                        static_cast<std::int64_t>(i));
    }
  });
  return out;
}

// The checks shared by NpyArray::as and SafetensorsEntry::as: a valid dtype, a valid shape and
// a data buffer of exactly the size they describe. `owner` names the object in the message.
inline std::int64_t checked_buffer_numel(std::string_view owner, DType dtype,
                                         std::span<std::int64_t const> shape,
                                         std::size_t data_size) {
  if (dtype_size(dtype) == 0) {
    throw_error(sentence(owner, " has an invalid dtype value ", static_cast<int>(dtype), "."));
  }
  std::int64_t const numel = checked_numel(shape);
  auto const nbytes = checked_nbytes(shape, dtype_size(dtype));
  if (!nbytes || static_cast<std::uint64_t>(*nbytes) != data_size) {
    throw_error(sentence(owner, " holds ", data_size, " bytes of data, but shape ",
                         tessel::detail::shape_text(shape), " of ", dtype_name(dtype), " needs ",
                         nbytes ? std::to_string(*nbytes) : std::string("more than 2^63"), "."));
  }
  return numel;
}

}  // namespace tessel::detail::io
