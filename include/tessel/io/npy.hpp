// NumPy .npy files. Reading accepts format versions 1.0, 2.0 and 3.0, either byte order and C or
// Fortran order, and returns C-order little-endian bytes; writing produces what np.save writes,
// byte for byte (version 1.0, or 2.0 when the header needs it), atomically.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "detail/elements.hpp"
#include "detail/files.hpp"

namespace tessel {

// An n-dimensional array as stored in a .npy file, already in C order and host byte order.
struct NpyArray {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;  // numel() * dtype_size(dtype) bytes, C order, little-endian

  // Product of the extents (1 for shape ()). Throws on a negative extent or int64 overflow.
  std::int64_t numel() const { return detail::io::checked_numel(shape); }

  // The elements converted to T: exact between equal types, rounding to nearest into
  // floating-point types, truncating toward zero from floating-point into integers. Throws
  // tessel::Error when an element does not fit an integer T (rather than wrap or be undefined)
  // and when data does not hold numel() elements.
  template <HasDType T>
  std::vector<T> as() const {
    std::int64_t const n =
        detail::io::checked_buffer_numel("the NpyArray", dtype, shape, data.size());
    return detail::io::convert_elements<T>(dtype, data, n);
  }
};

namespace detail::io {

inline constexpr unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct NpyHeader {
  DType dtype = DType::f32;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// NumPy's type codes (the descr without its byte-order character) of the dtypes .npy can hold.
inline constexpr std::array<std::pair<std::string_view, DType>, 12> npy_type_codes = {{
    {"b1", DType::bool_},
    {"i1", DType::i8},
    {"i2", DType::i16},
    {"i4", DType::i32},
    {"i8", DType::i64},
    {"u1", DType::u8},
    {"u2", DType::u16},
    {"u4", DType::u32},
    {"u8", DType::u64},
    {"f2", DType::f16},
    {"f4", DType::f32},
    {"f8", DType::f64},
}};

// The DType of a descr such as '<f4', '>i8' or '|b1' and whether its bytes are big-endian;
// nothing when tessel does not read that descr.
inline std::optional<std::pair<DType, bool>> npy_descr_dtype(std::string_view descr) {
  if (descr.size() != 3) return std::nullopt;
  auto const found = std::ranges::find(npy_type_codes, descr.substr(1),
                                       &std::pair<std::string_view, DType>::first);
  if (found == npy_type_codes.end()) return std::nullopt;
  bool const one_byte = dtype_size(found->second) == 1;
  // '|' means "byte order does not apply", which NumPy writes for 1-byte types only.
  if (descr[0] != '<' && descr[0] != '>' && !(descr[0] == '|' && one_byte)) return std::nullopt;
  return std::pair{found->second, descr[0] == '>' && !one_byte};
}

// The descr np.save writes for d; empty for bf16, which NumPy does not have.
inline std::string npy_descr(DType d) {
  for (auto const& [code, dtype] : npy_type_codes) {
    if (dtype == d) {
      // Appended rather than "x" + string: GCC 12 warns falsely (-Wrestrict) on the latter at -O3.
      std::string descr(1, dtype_size(d) == 1 ? '|' : '<');
      descr.append(code);
      return descr;
    }
  }
  return {};
}

inline constexpr std::string_view npy_readable_descrs =
    "tessel reads b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 and f8, little-endian ('<') or "
    "big-endian ('>'), and '|' for the 1-byte ones";

// Text from a file, made printable for an error message: control and non-ASCII bytes as \xNN,
// and cut short after `limit` bytes.
inline std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    auto const c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > limit) out += "...";
  return out;
}

// The header for an error message, without its padding.
inline std::string quoted_header(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  std::string out(1, '"');
  out.append(printable(text, 200));
  out.push_back('"');
  return out;
}

// The header dict is a Python literal, not JSON. This parses the subset NumPy writes —
// {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple of ints>} — with any whitespace,
// key order, either quote character and an optional trailing comma, as ast.literal_eval would.
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false;
    bool have_fortran_order = false;
    bool have_shape = false;
    std::string_view descr;
    skip_space();
    if (peek() != '{') fail_at(pos_, "expected '{' at the start of the header dict");
    ++pos_;
    skip_space();
    while (peek() != '}') {
      std::size_t const key_at = pos_;
      std::string_view const key = parse_string("a quoted key or '}'");
      skip_space();
      if (peek() != ':')
        fail_at(pos_, sentence("expected ':' after the key '", printable(key, 40), "'"));
      ++pos_;
      skip_space();
      if (key == "descr") {
        note_key(have_descr, key, key_at);
        if (peek() == '[') {
          throw_error(sentence(what_,
                               " has a structured dtype (its descr is a list), which "
                               "tessel cannot read; ",
                               npy_readable_descrs, "."));
        }
        descr = parse_string("a quoted dtype descr such as '<f4'");
      } else if (key == "fortran_order") {
        note_key(have_fortran_order, key, key_at);
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        note_key(have_shape, key, key_at);
        h.shape = parse_shape();
      } else {
        fail_at(key_at, sentence("unexpected key '", printable(key, 40),
                                 "' (a .npy header has exactly the keys 'descr', "
                                 "'fortran_order' and 'shape')"));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        fail_at(pos_, sentence("expected ',' or '}' after the value of '", key, "'"));
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail_at(pos_, "unexpected text after the closing '}'");
    for (auto [have, key] :
         {std::pair{have_descr, "descr"}, std::pair{have_fortran_order, "fortran_order"},
          std::pair{have_shape, "shape"}}) {
      if (!have) fail(sentence("it has no '", key, "' key"));
    }
    auto const dtype = npy_descr_dtype(descr);
    if (!dtype) {
      throw_error(sentence(what_, " has unsupported dtype descr '", printable(descr, 40), "'; ",
                           npy_readable_descrs, "."));
    }
    h.dtype = dtype->first;
    h.big_endian = dtype->second;
    return h;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  // Python's whitespace between tokens.
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r' || text_[pos_] == '\f')) {
      ++pos_;
    }
  }

  [[noreturn]] void fail_at(std::size_t at, std::string const& problem) const {
    throw_error(sentence(what_, " has a malformed .npy header: ", problem, " at character ", at,
                         " of ", quoted_header(text_), "."));
  }
  [[noreturn]] void fail(std::string const& problem) const {
    throw_error(sentence(what_, " has a malformed .npy header: ", problem, " in ",
                         quoted_header(text_), "."));
  }

  void note_key(bool& seen, std::string_view key, std::size_t at) const {
    if (seen) fail_at(at, sentence("the key '", key, "' appears twice"));
    seen = true;
  }

  std::string_view parse_string(char const* expected) {
    char const quote = peek();
    if (quote != '\'' && quote != '"') fail_at(pos_, sentence("expected ", expected));
    std::size_t const begin = pos_ + 1;
    std::size_t const end = text_.find(quote, begin);
    if (end == std::string_view::npos) fail_at(pos_, "unterminated string");
    std::string_view const s = text_.substr(begin, end - begin);
    // NumPy's keys and descrs never need escapes; rejecting them keeps the parser exact.
    if (s.find('\\') != std::string_view::npos) {
      fail_at(begin + s.find('\\'), "unsupported escape sequence in a string");
    }
    pos_ = end + 1;
    return s;
  }

  bool parse_bool() {
    for (auto [word, value] :
         {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail_at(pos_, "'fortran_order' must be True or False");
  }

  std::vector<std::int64_t> parse_shape() {
    std::size_t const start = pos_;
    if (peek() != '(') fail_at(pos_, "'shape' must be a tuple of non-negative integers");
    ++pos_;
    skip_space();
    std::vector<std::int64_t> shape;
    bool comma_after_last = false;
    while (peek() != ')') {
      shape.push_back(parse_extent());
      comma_after_last = false;
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        comma_after_last = true;
      } else if (peek() != ')') {
        fail_at(pos_, "expected ',' or ')' in the shape tuple");
      }
    }
    ++pos_;
    if (shape.size() == 1 && !comma_after_last) {
      fail_at(start,
              "'shape' is a parenthesized integer, not a tuple (a 1-d shape is written (n,))");
    }
    return shape;
  }

  std::int64_t parse_extent() {
    std::size_t const start = pos_;
    if (peek() < '0' || peek() > '9') {
      fail_at(pos_, "expected a non-negative integer in the shape tuple");
    }
    std::int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (mul_overflow(value, 10, value) || add_overflow(value, peek() - '0', value)) {
        fail_at(start, "a shape extent does not fit in int64");
      }
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 long literal, as NumPy on Python 2 wrote them
    return value;
  }

  std::string_view text_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

// Transposes Fortran-order (first index fastest) elements to C order (last index fastest).
inline std::vector<std::byte> fortran_to_c_order(std::vector<std::byte> const& src,
                                                 std::span<std::int64_t const> shape,
                                                 std::size_t itemsize) {
  std::size_t const rank = shape.size();
  if (rank <= 1) return src;  // one order for 0-D and 1-D arrays
  std::int64_t const numel = static_cast<std::int64_t>(src.size() / itemsize);
  std::vector<std::byte> dst(src.size());
  std::vector<std::int64_t> fortran_stride(rank, 1);
  for (std::size_t k = 1; k < rank; ++k) fortran_stride[k] = fortran_stride[k - 1] * shape[k - 1];
  std::vector<std::int64_t> coord(rank, 0);
  std::int64_t from = 0;  // element offset in src of the C-order element i
  for (std::int64_t i = 0; i < numel; ++i) {
    std::memcpy(dst.data() + i * static_cast<std::int64_t>(itemsize),
                src.data() + from * static_cast<std::int64_t>(itemsize), itemsize);
    for (std::size_t k = rank; k-- > 0;) {
      from += fortran_stride[k];
      if (++coord[k] < shape[k]) break;
      from -= fortran_stride[k] * shape[k];
      coord[k] = 0;
    }
  }
  return dst;
}

[[noreturn]] inline void fail_truncated_preamble(std::string_view what, std::size_t have) {
  throw_error(sentence(what, " is truncated: it ends after ", have,
                       " bytes, inside the .npy preamble (magic, version, header length)."));
}

template <class Source>
NpyArray read_npy_from(Source& source, std::string_view what) {
  std::uint64_t const size = source.size();
  unsigned char pre[12] = {};
  std::size_t const have = static_cast<std::size_t>(std::min<std::uint64_t>(size, sizeof pre));
  source.read(0, pre, have);
  if (size == 0) throw_error(sentence(what, " is empty, not a .npy file."));
  if (have >= 4 && std::memcmp(pre, "PK\x03\x04", 4) == 0) {
    throw_error(sentence(what,
                         " is not a .npy file: it is a zip archive (a .npz file?); "
                         "extract the .npy files from it first."));
  }
  if (std::memcmp(pre, npy_magic, std::min<std::size_t>(have, sizeof npy_magic)) != 0) {
    throw_error(sentence(what, " is not a .npy file: its first bytes are not \\x93NUMPY."));
  }
  if (have < 8) fail_truncated_preamble(what, have);
  int const major = pre[6];
  int const minor = pre[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw_error(sentence(what, " has .npy format version ", major, ".", minor,
                         ", which tessel cannot read; it reads versions 1.0, 2.0 and 3.0."));
  }
  std::size_t const prefix = major == 1 ? 10 : 12;
  if (have < prefix) fail_truncated_preamble(what, have);
  std::uint64_t header_length = pre[8] | (pre[9] << 8);
  if (major > 1) header_length |= (std::uint64_t{pre[10]} << 16) | (std::uint64_t{pre[11]} << 24);
  if (header_length > size - prefix) {
    throw_error(sentence(what, " is truncated: its header is ", header_length,
                         " bytes long but only ", size - prefix, " bytes follow the preamble."));
  }
  std::string text(static_cast<std::size_t>(header_length), '\0');
  source.read(prefix, text.data(), text.size());
  NpyHeader h = NpyHeaderParser(text, what).parse();

  std::size_t const itemsize = dtype_size(h.dtype);
  auto const nbytes = checked_nbytes(h.shape, itemsize);
  if (!nbytes) {
    throw_error(sentence(what, " has shape ", tessel::detail::shape_text(h.shape), " of ",
                         dtype_name(h.dtype), ", whose size in bytes overflows int64."));
  }
  std::uint64_t const data_offset = prefix + header_length;
  std::uint64_t const available = size - data_offset;
  std::uint64_t const needed = static_cast<std::uint64_t>(*nbytes);
  if (available < needed) {
    throw_error(sentence(what, " is truncated: its header promises ", needed,
                         " bytes of data but only ", available, " follow."));
  }
  if (available > needed) {
    throw_error(sentence(what, " has ", available - needed, " unexpected bytes after the ", needed,
                         " bytes of data its header promises."));
  }
  // Only now, with the size checked against the bytes that exist, allocate.
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = std::move(h.shape);
  a.data.resize(static_cast<std::size_t>(needed));
  source.read(data_offset, a.data.data(), a.data.size());
  if (h.big_endian) {
    for (std::size_t i = 0; i < a.data.size(); i += itemsize) {
      std::reverse(a.data.begin() + i, a.data.begin() + i + itemsize);
    }
  }
  if (h.fortran_order && a.shape.size() > 1) a.data = fortran_to_c_order(a.data, a.shape, itemsize);
  return a;
}

// The complete header (preamble, dict, padding) for a C-order little-endian array, as np.save
// writes it. Throws "cannot write <what>: ..." for bf16, an invalid dtype or a bad shape.
inline std::string npy_header_for(DType dtype, std::span<std::int64_t const> shape,
                                  std::string_view what) {
  if (dtype_size(dtype) == 0) {
    throw_error(
        sentence("cannot write ", what, ": invalid dtype value ", static_cast<int>(dtype), "."));
  }
  if (dtype == DType::bf16) {
    throw_error(sentence("cannot write ", what,
                         ": NumPy has no bfloat16 dtype; convert the data to f32 first (for "
                         "example with as<float>()), or write a safetensors file, which "
                         "stores BF16."));
  }
  for (std::int64_t e : shape) {
    if (e < 0) {
      throw_error(sentence("cannot write ", what, ": shape ", tessel::detail::shape_text(shape),
                           " has a negative extent."));
    }
  }
  if (!checked_nbytes(shape, dtype_size(dtype))) {
    throw_error(sentence("cannot write ", what, ": the size in bytes of shape ",
                         tessel::detail::shape_text(shape), " of ", dtype_name(dtype),
                         " overflows int64."));
  }
  std::string dict = sentence("{'descr': '", npy_descr(dtype),
                              "', 'fortran_order': False, 'shape': ", python_tuple(shape), ", }");
  // NumPy leaves room to grow the first axis in place (GROWTH_AXIS_MAX_DIGITS = 21).
  if (!shape.empty()) {
    std::size_t const digits = std::to_string(shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  // The data starts at a multiple of 64 bytes; NumPy pads with spaces and ends with '\n'.
  std::size_t const with_newline = dict.size() + 1;
  auto padded_length = [&](std::size_t prefix) {
    return with_newline + (64 - (prefix + with_newline) % 64);
  };
  int major = 1;
  std::size_t length = padded_length(10);
  if (length > 0xffff) {
    major = 2;
    length = padded_length(12);
  }
  std::string out(reinterpret_cast<char const*>(npy_magic), sizeof npy_magic);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out += static_cast<char>((length >> (8 * i)) & 0xff);
  out += dict;
  out.append(length - with_newline, ' ');
  out += '\n';
  return out;
}

}  // namespace detail::io

// Parses the bytes of a .npy file. `what` names the input in error messages. Pure: suitable for
// fuzzing. Throws tessel::Error for any malformed input; never reads out of bounds, and never
// allocates for data before checking that the data is there.
inline NpyArray parse_npy(std::span<std::byte const> bytes, std::string_view what = "input") {
  detail::io::SpanSource source(bytes);
  return detail::io::read_npy_from(source, what);
}

// Reads a .npy file; errors name the path. The data is read once, straight into the result.
inline NpyArray read_npy(std::filesystem::path const& path) {
  detail::io::FileSource source(path);
  return detail::io::read_npy_from(source, path.string());
}

// The bytes np.save writes before the data of a C-order array of `dtype` and `shape`: magic,
// version (1.0, or 2.0 for a header over 64 KiB), header length, and the header dict padded
// with spaces so that the data starts at a multiple of 64 bytes.
inline std::string npy_header(DType dtype, std::span<std::int64_t const> shape) {
  return detail::io::npy_header_for(dtype, shape, "a .npy file");
}

// Writes a C-order array of `dtype` and `shape` from `data` (numel * dtype_size bytes), as
// np.save would. Atomic: the bytes go to a temporary file in the same directory, renamed over
// `path` once complete; on failure the temporary file is removed and `path` is untouched.
// bf16 is an error: NumPy has no bfloat16 (convert to f32, or use write_safetensors).
inline void write_npy(std::filesystem::path const& path, DType dtype,
                      std::span<std::int64_t const> shape, void const* data) {
  std::string const what = path.string();
  std::string const header = detail::io::npy_header_for(dtype, shape, what);
  std::int64_t const nbytes = *detail::io::checked_nbytes(shape, dtype_size(dtype));
  if (nbytes > 0 && data == nullptr) {
    detail::throw_error(detail::sentence(
        "cannot write ", what, ": data is null but shape ", tessel::detail::shape_text(shape),
        " has ", nbytes / static_cast<std::int64_t>(dtype_size(dtype)), " elements."));
  }
  detail::io::AtomicFileWriter out(path);
  out.write(header.data(), header.size());
  out.write(data, static_cast<std::size_t>(nbytes));
  out.commit();
}

// Writes typed values (a std::vector, std::array, std::span, ...) of shape `shape`; the dtype
// is dtype_of_v of the element type.
template <std::ranges::contiguous_range R>
requires std::ranges::sized_range<R> && HasDType<std::ranges::range_value_t<R>>
void write_npy(std::filesystem::path const& path, std::span<std::int64_t const> shape,
               R const& values) {
  using T = std::ranges::range_value_t<R>;
  (void)detail::io::npy_header_for(dtype_of_v<T>, shape, path.string());  // shape and dtype
  std::int64_t const numel = detail::io::checked_numel(shape);
  auto const count = static_cast<std::int64_t>(std::ranges::size(values));
  if (count != numel) {
    detail::throw_error(detail::sentence("cannot write ", path.string(), ": shape ",
                                         tessel::detail::shape_text(shape), " has ", numel,
                                         " elements but ", count, " values were given."));
  }
  write_npy(path, dtype_of_v<T>, shape, static_cast<void const*>(std::ranges::data(values)));
}

// The same, with the shape written in place: write_npy("x.npy", {2, 3}, values).
inline void write_npy(std::filesystem::path const& path, DType dtype,
                      std::initializer_list<std::int64_t> shape, void const* data) {
  write_npy(path, dtype, std::span<std::int64_t const>(shape.begin(), shape.size()), data);
}
template <std::ranges::contiguous_range R>
requires std::ranges::sized_range<R> && HasDType<std::ranges::range_value_t<R>>
void write_npy(std::filesystem::path const& path, std::initializer_list<std::int64_t> shape,
               R const& values) {
  write_npy(path, std::span<std::int64_t const>(shape.begin(), shape.size()), values);
}

// Writes an NpyArray (for example one read with read_npy).
inline void write_npy(std::filesystem::path const& path, NpyArray const& array) {
  (void)detail::io::checked_buffer_numel("the NpyArray", array.dtype, array.shape,
                                         array.data.size());
  write_npy(path, array.dtype, array.shape, array.data.data());
}

}  // namespace tessel
