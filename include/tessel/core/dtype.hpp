// Element types as run-time values: DType, its size and name, parsing names from users and
// files, the DType of a C++ element type (dtype_of_v<float> == DType::f32), and visit_dtype, the
// one way from a DType back to its C++ type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

#include "error.hpp"
#include "float16.hpp"

namespace tessel {

enum class DType : std::uint8_t {
  bool_,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  f16,
  bf16,
  f32,
  f64
};

// Every DType, in declaration order.
inline constexpr std::array<DType, 13> all_dtypes = {
    DType::bool_, DType::i8,  DType::i16, DType::i32,  DType::i64, DType::u8, DType::u16,
    DType::u32,   DType::u64, DType::f16, DType::bf16, DType::f32, DType::f64};

// Bytes per element; 0 for a value outside the enumeration.
TESSEL_HOST_DEVICE constexpr std::size_t dtype_size(DType d) noexcept {
  switch (d) {
    case DType::bool_:
    case DType::i8:
    case DType::u8:
      return 1;
    case DType::i16:
    case DType::u16:
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::i32:
    case DType::u32:
    case DType::f32:
      return 4;
    case DType::i64:
    case DType::u64:
    case DType::f64:
      return 8;
  }
  return 0;
}

// The short name ("f32", "bf16", "bool"); empty for a value outside the enumeration.
constexpr std::string_view dtype_name(DType d) noexcept {
  switch (d) {
    case DType::bool_:
      return "bool";
    case DType::i8:
      return "i8";
    case DType::i16:
      return "i16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::u16:
      return "u16";
    case DType::u32:
      return "u32";
    case DType::u64:
      return "u64";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
  }
  return {};
}

inline std::ostream& operator<<(std::ostream& os, DType d) {
  return os << dtype_name(d);
}

namespace detail {

struct DTypeAlias {
  std::string_view name;
  DType dtype;
};

// The long names people type (NumPy's and PyTorch's spellings, plus C's float/double/half).
inline constexpr std::array<DTypeAlias, 15> dtype_aliases = {{{"int8", DType::i8},
                                                              {"int16", DType::i16},
                                                              {"int32", DType::i32},
                                                              {"int64", DType::i64},
                                                              {"uint8", DType::u8},
                                                              {"uint16", DType::u16},
                                                              {"uint32", DType::u32},
                                                              {"uint64", DType::u64},
                                                              {"float16", DType::f16},
                                                              {"half", DType::f16},
                                                              {"bfloat16", DType::bf16},
                                                              {"float32", DType::f32},
                                                              {"float", DType::f32},
                                                              {"float64", DType::f64},
                                                              {"double", DType::f64}}};

constexpr bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace detail

// The DType named `name`: a short name ("f32", "bf16", "bool") or an alias ("float32",
// "bfloat16", "half", "int64", ...), ignoring case so safetensors' "F32" and "BF16" work too.
// Throws tessel::Error naming the bad value and listing the valid names.
inline DType parse_dtype(std::string_view name) {
  for (DType d : all_dtypes) {
    if (detail::equals_ignoring_case(name, dtype_name(d))) return d;
  }
  for (auto const& alias : detail::dtype_aliases) {
    if (detail::equals_ignoring_case(name, alias.name)) return alias.dtype;
  }
  std::string names;
  for (DType d : all_dtypes) {
    names.append(names.empty() ? "" : ", ").append(dtype_name(d));
  }
  std::string aliases;
  for (auto const& alias : detail::dtype_aliases) {
    aliases.append(aliases.empty() ? "" : ", ").append(alias.name);
  }
  detail::throw_error(detail::sentence("unknown dtype \"", name, "\"; valid names are ", names,
                                       " (or ", aliases, ")."));
}

namespace detail {

template <class T>
inline constexpr bool is_character_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

}  // namespace detail

// A C++ type that tessel stores as one of the DTypes: bool, the 8- to 64-bit integers (any
// spelling: long and long long both give i64), half, bfloat16, float and double. Plain char is
// excluded because its signedness depends on the platform.
template <class T>
concept HasDType = std::is_same_v < std::remove_cv_t<T>,
bool > || std::is_same_v<std::remove_cv_t<T>, half> ||
    std::is_same_v<std::remove_cv_t<T>, bfloat16> || std::is_same_v<std::remove_cv_t<T>, float> ||
    std::is_same_v<std::remove_cv_t<T>, double> ||
    (std::is_integral_v<T> && !detail::is_character_v<std::remove_cv_t<T>> &&
     (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8));

namespace detail {

template <class T>
consteval DType dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>)
    return DType::bool_;
  else if constexpr (std::is_same_v<U, half>)
    return DType::f16;
  else if constexpr (std::is_same_v<U, bfloat16>)
    return DType::bf16;
  else if constexpr (std::is_same_v<U, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<U, double>)
    return DType::f64;
  else if constexpr (std::is_signed_v<U>) {
    return sizeof(U) == 1   ? DType::i8
           : sizeof(U) == 2 ? DType::i16
           : sizeof(U) == 4 ? DType::i32
                            : DType::i64;
  } else {
    return sizeof(U) == 1   ? DType::u8
           : sizeof(U) == 2 ? DType::u16
           : sizeof(U) == 4 ? DType::u32
                            : DType::u64;
  }
}

}  // namespace detail

// The DType of an element type: dtype_of_v<float> == DType::f32.
// @post dtype_size(dtype_of_v<T>) == sizeof(T)
template <HasDType T>
inline constexpr DType dtype_of_v = detail::dtype_of<T>();

// f(std::type_identity<T>{}) for the C++ element type T of d (bool, std::int8_t ... std::uint64_t,
// half, bfloat16, float, double): the one dispatch from a run-time dtype to code templated on the
// type. Every branch must return the same type. A value outside the enumeration (a corrupted
// byte) throws tessel::Error; there is no fallback type.
// @post dtype_of_v<T> == d for the T that f receives
template <class F>
constexpr decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_:
      return f(std::type_identity<bool>{});
    case DType::i8:
      return f(std::type_identity<std::int8_t>{});
    case DType::i16:
      return f(std::type_identity<std::int16_t>{});
    case DType::i32:
      return f(std::type_identity<std::int32_t>{});
    case DType::i64:
      return f(std::type_identity<std::int64_t>{});
    case DType::u8:
      return f(std::type_identity<std::uint8_t>{});
    case DType::u16:
      return f(std::type_identity<std::uint16_t>{});
    case DType::u32:
      return f(std::type_identity<std::uint32_t>{});
    case DType::u64:
      return f(std::type_identity<std::uint64_t>{});
    case DType::f16:
      return f(std::type_identity<half>{});
    case DType::bf16:
      return f(std::type_identity<bfloat16>{});
    case DType::f32:
      return f(std::type_identity<float>{});
    case DType::f64:
      return f(std::type_identity<double>{});
  }
  detail::throw_error(
      detail::sentence("the value ", static_cast<int>(d), " is not a tessel::DType."));
}

}  // namespace tessel
