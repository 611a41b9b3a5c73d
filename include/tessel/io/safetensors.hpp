// Hugging Face safetensors files: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}), then the tensors' bytes. Reading validates the file as the
// reference implementation does; writing is atomic and bit-exact on a round trip.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <ranges>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "detail/elements.hpp"
#include "detail/files.hpp"
#include "json.hpp"

namespace tessel {

// One tensor of a safetensors file: C order, little-endian, as the format stores it.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;  // numel() * dtype_size(dtype) bytes

  // Product of the extents (1 for shape ()). Throws on a negative extent or int64 overflow.
  std::int64_t numel() const { return detail::io::checked_numel(shape); }

  // The elements converted to T, with the rules of NpyArray::as.
  template <HasDType T>
  std::vector<T> as() const {
    std::int64_t const n = detail::io::checked_buffer_numel(
        detail::sentence("tensor \"", name, "\""), dtype, shape, data.size());
    return detail::io::convert_elements<T>(dtype, data, n);
  }
};

// A tensor of typed values (a std::vector, std::array, std::span, ...); its dtype is
// dtype_of_v of the element type.
template <std::ranges::contiguous_range R>
requires std::ranges::sized_range<R> && HasDType<std::ranges::range_value_t<R>> SafetensorsEntry
make_safetensors_entry(std::string name, std::vector<std::int64_t> shape, R const& values) {
  using T = std::ranges::range_value_t<R>;
  std::int64_t const numel = detail::io::checked_numel(shape);
  auto const count = static_cast<std::int64_t>(std::ranges::size(values));
  if (count != numel) {
    detail::throw_error(detail::sentence("tensor \"", name, "\" has shape ",
                                         tessel::detail::shape_text(shape), " of ", numel,
                                         " elements but ", count, " values were given."));
  }
  SafetensorsEntry e{std::move(name), dtype_of_v<T>, std::move(shape),
                     std::vector<std::byte>(static_cast<std::size_t>(count) * sizeof(T))};
  if (count > 0) std::memcpy(e.data.data(), std::ranges::data(values), e.data.size());
  return e;
}

// The contents of a safetensors file.
struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty when there is none
  std::vector<SafetensorsEntry> tensors;        // in data order, which is the file's order

  // The tensor named `name`; throws tessel::Error naming it (and the tensors there are).
  SafetensorsEntry const& at(std::string_view name) const {
    for (auto const& t : tensors) {
      if (t.name == name) return t;
    }
    std::string names;
    std::size_t const listed = std::min<std::size_t>(tensors.size(), 8);
    for (std::size_t i = 0; i < listed; ++i) {
      names += detail::sentence(i == 0 ? "" : ", ", "\"", tensors[i].name, "\"");
    }
    if (tensors.size() > listed) names += detail::sentence(", ... (", tensors.size(), " in all)");
    detail::throw_error(
        detail::sentence("the safetensors file has no tensor \"", name, "\"; ",
                         tensors.empty() ? "it has no tensors" : "its tensors are " + names, "."));
  }

  bool contains(std::string_view name) const {
    return std::ranges::any_of(tensors, [&](auto const& t) { return t.name == name; });
  }
};

namespace detail::io {

// The reference implementation's limit: a longer header is rejected before being read.
inline constexpr std::uint64_t safetensors_max_header = 100'000'000;

inline constexpr std::array<std::pair<std::string_view, DType>, 13> safetensors_dtypes = {{
    {"BOOL", DType::bool_},
    {"U8", DType::u8},
    {"I8", DType::i8},
    {"I16", DType::i16},
    {"U16", DType::u16},
    {"I32", DType::i32},
    {"U32", DType::u32},
    {"I64", DType::i64},
    {"U64", DType::u64},
    {"F16", DType::f16},
    {"BF16", DType::bf16},
    {"F32", DType::f32},
    {"F64", DType::f64},
}};

inline std::string_view safetensors_dtype_name(DType d) {
  for (auto const& [name, dtype] : safetensors_dtypes) {
    if (dtype == d) return name;
  }
  return {};
}

// A string quoted and escaped as JSON (so control characters and quotes in tensor names stay
// readable), shortened when very long.
inline std::string json_quoted(std::string_view s) {
  constexpr std::size_t limit = 100;
  std::string out;
  json::write_string(out, s.substr(0, limit), json::InvalidUtf8::replace);
  if (s.size() > limit) out.insert(out.size() - 1, "...");
  return out;
}

// A JSON value for an error message, shortened when very long.
inline std::string json_brief(json::Value const& value) {
  std::string s = json::dump(value, json::InvalidUtf8::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

template <class... Pieces>
[[noreturn]] void fail_corrupted(std::string_view what, Pieces const&... pieces) {
  throw_error(sentence(what, " is corrupted: ", pieces..., "."));
}

template <class... Pieces>
[[noreturn]] void fail_tensor(std::string_view what, std::string const& name,
                              Pieces const&... pieces) {
  fail_corrupted(what, "tensor ", json_quoted(name), " ", pieces...);
}

struct SafetensorsInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsInfo> tensors;  // sorted by data offsets
};

// The header's JSON value; tessel::Error saying why the text is not one. Besides syntax, it
// refuses a key repeated in an object (readers that keep the first or the last would see
// different tensors) and nesting deeper than a safetensors header has: the header object holds
// entries, which hold shapes and offsets.
inline json::Value parse_header_json(std::string const& text, std::string_view what) {
  json::Parsed parsed = json::parse(text, 3);
  if (parsed.value) return std::move(*parsed.value);
  json::ParseError const& e = parsed.error;
  switch (e.reason) {
    case json::ParseError::Reason::syntax:
      break;
    case json::ParseError::Reason::truncated:
      fail_corrupted(what, "its header is not valid JSON (it ends in the middle of a value)");
    case json::ParseError::Reason::number_too_large:
      // Found by tests/fuzz/safetensors_fuzz.cpp (7e77777).
      fail_corrupted(what, "its header holds a number too large to represent");
    case json::ParseError::Reason::too_deep:
      fail_corrupted(what, "its header nests deeper than a safetensors header does");
    case json::ParseError::Reason::repeated_key:
      // e.path[1] is the key of the entry around the repeated key ("" when the header is an array).
      if (e.path.size() == 1) {
        fail_corrupted(what, "its header has two entries named ", json_quoted(e.key));
      }
      fail_corrupted(what, "the entry ", json_quoted(e.path[1]), " of its header has the key ",
                     json_quoted(e.key), " twice");
  }
  fail_corrupted(what, "its header is not valid JSON (syntax error at byte ", e.offset, ")");
}

inline SafetensorsInfo parse_safetensors_entry(std::string const& name, json::Value const& value,
                                               std::string_view what) {
  if (!value.is_object()) {
    fail_tensor(what, name, "is a JSON ", value.type_name(),
                ", not an object with dtype, shape and data_offsets");
  }
  for (auto const& [key, ignored] : value.members()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail_tensor(what, name, "has the unexpected key ", json_quoted(key),
                  " (an entry has exactly dtype, shape and data_offsets)");
    }
  }
  for (char const* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.find(key)) fail_tensor(what, name, "has no \"", key, "\"");
  }
  SafetensorsInfo info;
  info.name = name;

  json::Value const& dtype = *value.find("dtype");
  if (!dtype.is_string())
    fail_tensor(what, name, "has dtype ", json_brief(dtype), ", which is not a string");
  auto const found = std::ranges::find(safetensors_dtypes, dtype.string(),
                                       &std::pair<std::string_view, DType>::first);
  if (found == safetensors_dtypes.end()) {
    throw_error(sentence(what, " has tensor ", json_quoted(name), " of dtype ", json_brief(dtype),
                         ", which tessel cannot read; it reads BOOL, U8, I8, I16, U16, I32, U32, "
                         "I64, U64, F16, BF16, F32 and F64."));
  }
  info.dtype = found->second;

  json::Value const& shape = *value.find("shape");
  if (!shape.is_array()) {
    fail_tensor(what, name, "has shape ", json_brief(shape),
                ", which is not a list of non-negative integers");
  }
  for (json::Value const& e : shape.items()) {
    auto const extent = e.to_uint64();
    if (!extent) {
      fail_tensor(what, name, "has shape ", json_brief(shape),
                  ", which is not a list of non-negative integers");
    }
    if (*extent > static_cast<std::uint64_t>(index_max)) {
      fail_tensor(what, name, "has shape ", json_brief(shape), ", whose extent ", *extent,
                  " does not fit in int64");
    }
    info.shape.push_back(static_cast<std::int64_t>(*extent));
  }

  json::Value const& offsets = *value.find("data_offsets");
  std::optional<std::uint64_t> begin, end;
  if (offsets.is_array() && offsets.items().size() == 2) {
    begin = offsets.items()[0].to_uint64();
    end = offsets.items()[1].to_uint64();
  }
  if (!begin || !end) {
    fail_tensor(what, name, "has data_offsets ", json_brief(offsets),
                ", which is not a pair of non-negative integers");
  }
  info.begin = *begin;
  info.end = *end;
  if (info.end < info.begin) {
    fail_tensor(what, name, "has data_offsets [", info.begin, ", ", info.end,
                "], which end before they begin");
  }

  auto const nbytes = checked_nbytes(info.shape, dtype_size(info.dtype));
  if (!nbytes) {
    fail_tensor(what, name, "has shape ", tessel::detail::shape_text(info.shape), " of ",
                found->first, ", whose size in bytes overflows int64");
  }
  if (info.end - info.begin != static_cast<std::uint64_t>(*nbytes)) {
    fail_tensor(what, name, "has data_offsets [", info.begin, ", ", info.end, "] but shape ",
                tessel::detail::shape_text(info.shape), " of ", found->first, " needs ", *nbytes,
                " bytes");
  }
  return info;
}

// Validates the header JSON; `data_size` is the number of bytes after the header.
inline SafetensorsHeader parse_safetensors_header(std::string const& text, std::uint64_t data_size,
                                                  std::string_view what) {
  json::Value const root = parse_header_json(text, what);
  if (!root.is_object()) {
    throw_error(sentence(what, " is corrupted: its header is a JSON ", root.type_name(),
                         ", not an object."));
  }
  SafetensorsHeader h;
  for (auto const& [key, value] : root.members()) {
    if (key != "__metadata__") {
      h.tensors.push_back(parse_safetensors_entry(key, value, what));
      continue;
    }
    if (value.is_null()) continue;
    if (!value.is_object()) {
      throw_error(sentence(what, " is corrupted: its __metadata__ is a JSON ", value.type_name(),
                           ", not an object of strings."));
    }
    for (auto const& [k, v] : value.members()) {
      if (!v.is_string()) {
        throw_error(sentence(what, " is corrupted: its __metadata__ entry ", json_quoted(k),
                             " is a JSON ", v.type_name(), ", not a string."));
      }
      h.metadata.emplace(k, v.string());
    }
  }
  // Data order is the file's order. Stable, so zero-size tensors that share an offset keep
  // their header order and a file we wrote reads back exactly as it was given.
  std::ranges::stable_sort(h.tensors, [](auto const& a, auto const& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  std::uint64_t covered = 0;  // the tensors before t cover [0, covered)
  for (std::size_t i = 0; i < h.tensors.size(); ++i) {
    SafetensorsInfo const& t = h.tensors[i];
    if (t.begin < covered) {
      SafetensorsInfo const& previous = h.tensors[i - 1];
      throw_error(sentence(what, " is corrupted: tensors ", json_quoted(previous.name),
                           " (data_offsets [", previous.begin, ", ", previous.end, "]) and ",
                           json_quoted(t.name), " (data_offsets [", t.begin, ", ", t.end,
                           "]) overlap."));
    }
    if (t.begin > covered) {
      throw_error(sentence(what, " is corrupted: bytes [", covered, ", ", t.begin,
                           ") of the data buffer, ",
                           i == 0 ? "before tensor " + json_quoted(t.name)
                                  : "between tensors " + json_quoted(h.tensors[i - 1].name) +
                                        " and " + json_quoted(t.name),
                           ", belong to no tensor."));
    }
    covered = t.end;
  }
  if (covered > data_size) {
    throw_error(sentence(what, " is truncated: its tensors need ", covered,
                         " bytes of data but only ", data_size, " follow the header."));
  }
  if (covered < data_size) {
    throw_error(sentence(what, " has ", data_size - covered, " unexpected bytes after the ",
                         covered, " bytes of data its header describes."));
  }
  return h;
}

template <class Source>
SafetensorsFile read_safetensors_from(Source& source, std::string_view what) {
  std::uint64_t const size = source.size();
  if (size < 8) {
    throw_error(sentence(what,
                         " is truncated: a safetensors file starts with an 8-byte header "
                         "length, but it has only ",
                         size, " bytes."));
  }
  unsigned char length[8];
  source.read(0, length, sizeof length);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];
  if (n > safetensors_max_header) {
    throw_error(sentence(what, " is not a safetensors file or is corrupted: its header length ", n,
                         " is over the limit of ", safetensors_max_header, " bytes."));
  }
  if (n > size - 8) {
    throw_error(sentence(what, " is truncated: its header length is ", n, " bytes but only ",
                         size - 8, " bytes follow."));
  }
  std::string text(static_cast<std::size_t>(n), '\0');
  source.read(8, text.data(), text.size());
  SafetensorsHeader h = parse_safetensors_header(text, size - 8 - n, what);

  // Every size below was checked against the bytes that exist before this allocates.
  SafetensorsFile file;
  file.metadata = std::move(h.metadata);
  file.tensors.reserve(h.tensors.size());
  for (SafetensorsInfo& t : h.tensors) {
    SafetensorsEntry e{std::move(t.name), t.dtype, std::move(t.shape),
                       std::vector<std::byte>(static_cast<std::size_t>(t.end - t.begin))};
    source.read(8 + n + t.begin, e.data.data(), e.data.size());
    file.tensors.push_back(std::move(e));
  }
  return file;
}

template <class... Pieces>
[[noreturn]] void fail_write(std::string_view what, Pieces const&... pieces) {
  throw_error(sentence("cannot write ", what, ": ", pieces..., "."));
}

// The header as the reference implementation writes it: compact JSON with __metadata__ (when
// there is any) first, then the tensors in order, each {"dtype", "shape", "data_offsets"},
// padded with spaces to a multiple of 8 bytes. Validates the tensors.
inline std::string safetensors_header_for(SafetensorsFile const& file, std::string_view what) {
  // JSON text is UTF-8; checking each string lets the message say which one is not.
  auto const check_utf8 = [&](std::string const& s, char const* role) {
    if (!json::is_valid_utf8(s)) fail_write(what, role, " ", json_quoted(s), " is not valid UTF-8");
  };
  json::Value root = json::Value::object();
  if (!file.metadata.empty()) {
    json::Value metadata = json::Value::object();
    for (auto const& [k, v] : file.metadata) {
      check_utf8(k, "the metadata key");
      check_utf8(v, "the metadata value");
      metadata.members().emplace_back(k, v);
    }
    root.members().emplace_back("__metadata__", std::move(metadata));
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (SafetensorsEntry const& t : file.tensors) {
    if (t.name == "__metadata__") {
      fail_write(what, "\"__metadata__\" is reserved for the metadata and cannot name a tensor");
    }
    if (!names.insert(t.name).second) {
      fail_write(what, "two tensors are named ", json_quoted(t.name));
    }
    check_utf8(t.name, "the tensor name");
    if (dtype_size(t.dtype) == 0) {
      fail_write(what, "tensor ", json_quoted(t.name), " has the invalid dtype value ",
                 static_cast<int>(t.dtype));
    }
    for (std::int64_t e : t.shape) {
      if (e < 0) {
        fail_write(what, "tensor ", json_quoted(t.name), " has shape ",
                   tessel::detail::shape_text(t.shape), ", which has a negative extent");
      }
    }
    auto const nbytes = checked_nbytes(t.shape, dtype_size(t.dtype));
    if (!nbytes || static_cast<std::uint64_t>(*nbytes) != t.data.size()) {
      fail_write(what, "tensor ", json_quoted(t.name), " holds ", t.data.size(),
                 " bytes of data but shape ", tessel::detail::shape_text(t.shape), " of ",
                 safetensors_dtype_name(t.dtype), " needs ",
                 nbytes ? std::to_string(*nbytes) : std::string("more than 2^63"));
    }
    json::Value::Array shape(t.shape.begin(), t.shape.end());
    std::uint64_t const end = offset + t.data.size();
    root.members().emplace_back(
        t.name, json::Value::object({{"dtype", safetensors_dtype_name(t.dtype)},
                                     {"shape", json::Value::array(std::move(shape))},
                                     {"data_offsets", json::Value::array({offset, end})}}));
    offset = end;
  }
  std::string header = json::dump(root);
  header.append((8 - header.size() % 8) % 8, ' ');
  // Readers (the reference one included) refuse such a file, so do not write it.
  if (header.size() > safetensors_max_header) {
    fail_write(what, "its header would be ", header.size(), " bytes, over the limit of ",
               safetensors_max_header, " bytes that readers accept");
  }
  return header;
}

}  // namespace detail::io

// Parses the bytes of a safetensors file. `what` names the input in error messages. Pure:
// suitable for fuzzing. Throws tessel::Error for any malformed input; never reads out of bounds,
// and never allocates for tensor data before checking that the data is there.
inline SafetensorsFile parse_safetensors(std::span<std::byte const> bytes,
                                         std::string_view what = "input") {
  detail::io::SpanSource source(bytes);
  return detail::io::read_safetensors_from(source, what);
}

// Reads a safetensors file; errors name the path. Each tensor's bytes are read once, straight
// into its entry.
inline SafetensorsFile read_safetensors(std::filesystem::path const& path) {
  detail::io::FileSource source(path);
  return detail::io::read_safetensors_from(source, path.string());
}

// Writes `file`: the tensors' data back to back in the given order, after a header padded to a
// multiple of 8 bytes. Names must be unique and not "__metadata__"; each tensor's data must
// match its shape and dtype. Atomic: the bytes go to a temporary file in the same directory,
// renamed over `path` once complete; on failure the temporary file is removed and `path` is
// untouched.
inline void write_safetensors(std::filesystem::path const& path, SafetensorsFile const& file) {
  std::string const header = detail::io::safetensors_header_for(file, path.string());
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  detail::io::AtomicFileWriter out(path);
  out.write(length, sizeof length);
  out.write(header.data(), header.size());
  for (SafetensorsEntry const& t : file.tensors) out.write(t.data.data(), t.data.size());
  out.commit();
}

}  // namespace tessel
