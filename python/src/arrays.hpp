// What the extension's bindings share: tessel's dtype names for DLPack dtypes, the checks of
// what tessel's C++ types settle at compile time (host memory, rank, element type), made on
// Python objects with tessel's sentences, and options read from Python values. The helpers take
// any nanobind ndarray (read-only views for FLCE's inputs, writable ones for Shampoo's
// parameters).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <optional>
#include <string>

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>

namespace tessel_python {

namespace nb = nanobind;

using tessel::DType;
using tessel::detail::sentence;
using index_t = tessel::index_t;

// Arrays read in place: any strides (tessel says which it accepts), read-only arrays welcome.
using InArray = nb::ndarray<nb::ro>;

[[noreturn]] inline void refuse(std::string const& message) {
  throw nb::value_error(message.c_str());
}

// An option's Python value as V, or a TypeError naming the option and the value.
template <class V>
V cast_option(nb::handle value, char const* key) {
  try {
    return nb::cast<V>(value);
  } catch (nb::cast_error const&) {
    throw nb::type_error(
        sentence("the option ", key, " cannot be ", nb::repr(value).c_str(), ".").c_str());
  }
}

// The option `key` of a dict that tessel's Python side fills with every key, as V (cast_option).
template <class V>
V dict_option(nb::dict const& d, char const* key) {
  return cast_option<V>(d[key], key);
}

// The tessel DType of a DLPack dtype, so that refusals name dtypes the way the rest of tessel
// does; none for what tessel has no name for (complex, 8-bit floats, vectors).
template <class Array>
std::optional<DType> dtype_of(Array const& a) {
  auto const d = a.dtype();
  using Maybe = std::optional<DType>;
  auto const sized = [&](Maybe b8, Maybe b16, Maybe b32, Maybe b64) -> Maybe {
    switch (d.bits) {
      case 8:
        return b8;
      case 16:
        return b16;
      case 32:
        return b32;
      case 64:
        return b64;
      default:
        return std::nullopt;
    }
  };
  if (d.lanes != 1) return std::nullopt;
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Float:
      return sized(std::nullopt, DType::f16, DType::f32, DType::f64);
    case nb::dlpack::dtype_code::Bfloat:
      return sized(std::nullopt, DType::bf16, std::nullopt, std::nullopt);
    case nb::dlpack::dtype_code::Int:
      return sized(DType::i8, DType::i16, DType::i32, DType::i64);
    case nb::dlpack::dtype_code::UInt:
      return sized(DType::u8, DType::u16, DType::u32, DType::u64);
    case nb::dlpack::dtype_code::Bool:
      return DType::bool_;
    default:
      return std::nullopt;
  }
}

template <class Array>
std::string dtype_text(Array const& a) {
  if (auto const d = dtype_of(a)) return std::string(tessel::dtype_name(*d));
  return sentence("DLPack type code ", int(a.dtype().code), " of ", int(a.dtype().bits), " bits");
}

// Device arrays are refused rather than copied to the host (tessel.torch sends calls whose input
// is a CUDA tensor to the CUDA binding instead).
template <class Array>
void check_host(Array const& a, std::string const& name) {
  if (a.device_type() != nb::device::cpu::value)
    refuse(sentence(name, " lives on a device (DLPack device type ", a.device_type(),
                    ") but this call takes host memory: pass CPU arrays (.cpu()); nothing is "
                    "copied implicitly."));
}

template <class Array>
void check_rank(Array const& a, char const* name, std::size_t rank, char const* modes) {
  if (a.ndim() != rank)
    refuse(sentence(name, " must have ", rank, rank == 1 ? " dimension " : " dimensions ", modes,
                    ", got ", a.ndim(), "."));
}

// `dtype_reason` says where the wanted dtype comes from ("input's", "the class indices'").
template <class Array>
void check_rank_and_dtype(Array const& a, char const* name, std::size_t rank, char const* modes,
                          DType dtype, char const* dtype_reason) {
  check_rank(a, name, rank, modes);
  if (dtype_of(a) != dtype)
    refuse(sentence(name, " has dtype ", dtype_text(a), " but must have ", dtype_reason, " dtype ",
                    tessel::dtype_name(dtype), "."));
}

inline void check_array(InArray const& a, char const* name, std::size_t rank, char const* modes,
                        DType dtype, char const* dtype_reason) {
  check_host(a, name);
  check_rank_and_dtype(a, name, rank, modes, dtype, dtype_reason);
}

// Every array of a CUDA call lives on the input's device: nothing is copied between devices.
template <class Array>
void check_on_cuda_device(Array const& a, std::string const& name, int device) {
  if (a.device_type() != nb::device::cuda::value || a.device_id() != device)
    refuse(sentence(name, " lives on DLPack device type ", a.device_type(), " id ", a.device_id(),
                    " but the input on CUDA device ", device,
                    " (type 2); every array of the call must be on the input's device: nothing "
                    "is copied implicitly."));
}

}  // namespace tessel_python

namespace tessel_python {

// Bindings defined in their own translation units (the Shampoo step compiles apart from FLCE).
void bind_shampoo(nb::module_& m);

}  // namespace tessel_python
