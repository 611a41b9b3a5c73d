// .npy reading and writing: NumPy's exact header bytes, round trips of every dtype, hand-built
// fixtures for every header version, byte order and Fortran order, and every error path.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <tessel/io/npy.hpp>

#include "io_test_support.hpp"

namespace {

using namespace tessel;
using namespace tessel::test_support;
using Shape = std::vector<std::int64_t>;

// A .npy file from its parts, with the header length computed but no padding added (NumPy
// pads; readers must not require it).
std::string npy_file(int major, std::string_view dict, std::string_view data) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  int const length_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < length_bytes; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  out += dict;
  out += data;
  return out;
}

NpyArray parse(std::string_view file, std::string_view what = "T.npy") {
  auto const bytes = to_bytes(file);
  return parse_npy(bytes, what);
}

std::string parse_error(std::string_view file) {
  return error_of([&] { (void)parse(file); });
}

std::string const f4_3x4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";

// ---- the header np.save writes ----

TEST(NpyHeader, IsWhatNumPyWritesForA2dFloatArray) {
  std::string const h = npy_header(DType::f32, Shape{3, 4});
  // 10-byte preamble, then the dict, 20 spaces of room to grow the first axis (NumPy's
  // GROWTH_AXIS_MAX_DIGITS = 21 minus one digit), padding to 128 bytes and a newline.
  EXPECT_EQ(h, std::string("\x93NUMPY\x01\x00v\x00", 10) + f4_3x4 + std::string(58, ' ') + "\n");
}

TEST(NpyHeader, PrintsShapesAsPythonTuplesAndDescrsAsNumPyDoes) {
  auto dict = [](DType d, Shape const& s) {
    std::string const h = npy_header(d, s);
    return h.substr(10, h.find('}') - 9);
  };
  EXPECT_EQ(dict(DType::f64, {}), "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
  EXPECT_EQ(dict(DType::bool_, {5}), "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }");
  EXPECT_EQ(dict(DType::i8, {0}), "{'descr': '|i1', 'fortran_order': False, 'shape': (0,), }");
  EXPECT_EQ(dict(DType::u8, {2, 3, 4}),
            "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3, 4), }");
  EXPECT_EQ(dict(DType::i16, {1}).substr(0, 16), "{'descr': '<i2',");
  EXPECT_EQ(dict(DType::i32, {1}).substr(0, 16), "{'descr': '<i4',");
  EXPECT_EQ(dict(DType::i64, {1}).substr(0, 16), "{'descr': '<i8',");
  EXPECT_EQ(dict(DType::u16, {1}).substr(0, 16), "{'descr': '<u2',");
  EXPECT_EQ(dict(DType::u32, {1}).substr(0, 16), "{'descr': '<u4',");
  EXPECT_EQ(dict(DType::u64, {1}).substr(0, 16), "{'descr': '<u8',");
  EXPECT_EQ(dict(DType::f16, {1}).substr(0, 16), "{'descr': '<f2',");
  // No growth padding for a 0-d array.
  EXPECT_EQ(npy_header(DType::f64, Shape{}).substr(10 + 55, 5), "     ");
  EXPECT_EQ(npy_header(DType::f64, Shape{}).size(), 128u);
}

TEST(NpyHeader, AlignsTheDataTo64BytesForAnyShape) {
  for (std::int64_t first :
       {std::int64_t{0}, std::int64_t{7}, std::int64_t{123456789}, std::int64_t{1} << 60}) {
    for (std::size_t rank = 1; rank < 40; ++rank) {
      Shape shape(rank, 1);
      shape[0] = first;
      std::string const h = npy_header(DType::f32, shape);
      EXPECT_EQ(h.size() % 64, 0u);
      EXPECT_EQ(h.back(), '\n');
      EXPECT_EQ(static_cast<std::size_t>(static_cast<unsigned char>(h[8]) |
                                         (static_cast<unsigned char>(h[9]) << 8)),
                h.size() - 10);
    }
  }
}

TEST(NpyHeader, SwitchesToVersion2WhenTheHeaderOutgrows64KiB) {
  TempDir dir;
  Shape const shape(25000, 1);  // "1, " per axis: about 75 000 bytes of header
  std::string const h = npy_header(DType::i16, shape);
  EXPECT_EQ(h[6], '\x02');
  EXPECT_EQ(h.size() % 64, 0u);
  std::uint32_t length = 0;
  std::memcpy(&length, h.data() + 8, 4);
  EXPECT_EQ(length, h.size() - 12);

  std::array<std::int16_t, 1> const value{-7};
  write_npy(dir / "deep.npy", shape, value);
  NpyArray const a = read_npy(dir / "deep.npy");
  EXPECT_EQ(a.shape, shape);
  EXPECT_EQ(a.as<std::int16_t>(), std::vector<std::int16_t>{-7});
}

// ---- round trips ----

TEST(Npy, RoundTripsEveryDTypeAndShapeBitExactly) {
  TempDir dir;
  std::mt19937 random(1);
  for (DType dtype : all_dtypes) {
    if (dtype == DType::bf16) continue;
    for (Shape const& shape : {Shape{}, Shape{0}, Shape{5}, Shape{2, 3, 4}}) {
      std::int64_t numel = 1;
      for (auto e : shape) numel *= e;
      std::vector<std::byte> data(static_cast<std::size_t>(numel) * dtype_size(dtype));
      // Any bytes at all, NaN payloads included, must survive; bools are 0 or 1.
      for (auto& b : data) b = std::byte(dtype == DType::bool_ ? random() % 2 : random() % 256);
      auto const path = dir / (std::string(dtype_name(dtype)) + ".npy");
      write_npy(path, dtype, shape, data.data());

      std::string const file = read_file(path);
      EXPECT_EQ(file, npy_header(dtype, shape) + to_string(data));
      NpyArray const a = read_npy(path);
      EXPECT_EQ(a.dtype, dtype);
      EXPECT_EQ(a.shape, shape);
      EXPECT_EQ(a.data, data);
      EXPECT_EQ(a.numel(), numel);
      // Reading back what was written, then writing it again, gives the same file.
      write_npy(path, a);
      EXPECT_EQ(read_file(path), file);
    }
  }
  EXPECT_EQ(dir.entries().size(), 12u);  // one file per dtype, no temporaries left behind
}

TEST(Npy, TypedWriteTakesTheDTypeFromTheElementType) {
  TempDir dir;
  std::vector<float> const f{1.5f, -2.0f, 0.25f, 8.0f, 0.0f, -0.0f};
  write_npy(dir / "f.npy", Shape{2, 3}, f);
  NpyArray const a = read_npy(dir / "f.npy");
  EXPECT_EQ(a.dtype, DType::f32);
  EXPECT_EQ(a.as<float>(), f);

  std::array<half, 2> const h{half(1.0f), half(-0.5f)};
  write_npy(dir / "h.npy", Shape{2}, std::span<half const>(h));
  EXPECT_EQ(read_npy(dir / "h.npy").dtype, DType::f16);
  EXPECT_EQ(read_npy(dir / "h.npy").as<float>(), (std::vector<float>{1.0f, -0.5f}));

  // The shape can be written in place; {} is a 0-d array.
  write_npy(dir / "i.npy", {2, 2}, std::vector<int>{1, 2, 3, 4});
  EXPECT_EQ(read_npy(dir / "i.npy").shape, (Shape{2, 2}));
  write_npy(dir / "s.npy", {}, std::vector<double>{2.5});
  EXPECT_EQ(read_npy(dir / "s.npy").shape, Shape{});
  std::uint8_t const bytes[3] = {1, 2, 3};
  write_npy(dir / "u.npy", DType::u8, {3}, bytes);
  EXPECT_EQ(read_npy(dir / "u.npy").as<int>(), (std::vector<int>{1, 2, 3}));

  std::array<bool, 3> const b{true, false, true};
  write_npy(dir / "b.npy", Shape{3}, b);
  EXPECT_EQ(read_file(dir / "b.npy").substr(128), std::string("\x01\x00\x01", 3));
  EXPECT_EQ(read_npy(dir / "b.npy").as<bool>(), (std::vector<bool>{true, false, true}));
}

// ---- hand-built fixtures ----

TEST(Npy, ReadsVersion1Version2AndVersion3Headers) {
  std::string const data = le<float>({1, 2, 3, 4, 5, 6});
  std::string const dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  for (int major : {1, 2, 3}) {
    NpyArray const a = parse(npy_file(major, dict, data));
    EXPECT_EQ(a.dtype, DType::f32);
    EXPECT_EQ(a.shape, (Shape{2, 3}));
    EXPECT_EQ(a.as<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
}

TEST(Npy, ReadsHeadersInAnyKeyOrderQuotingAndSpacing) {
  std::string const data = le<std::int16_t>({1, -2, 3, -4, 5, -6});
  for (std::string_view dict : {
           "{'shape': (3, 2), 'descr': '<i2', 'fortran_order': False}",
           "{\"fortran_order\":False,\"shape\":(3,2,),\"descr\":\"<i2\"}",
           " {\n  'descr' : '<i2' ,\t'fortran_order' : False ,\r\n 'shape' : ( 3 , 2 ) ,\n}\n  ",
           "{'descr': '<i2', 'fortran_order': False, 'shape': (3L, 2L), }",  // Python 2
       }) {
    NpyArray const a = parse(npy_file(1, dict, data));
    EXPECT_EQ(a.dtype, DType::i16) << dict;
    EXPECT_EQ(a.shape, (Shape{3, 2})) << dict;
    EXPECT_EQ(a.as<std::int16_t>(), (std::vector<std::int16_t>{1, -2, 3, -4, 5, -6})) << dict;
  }
}

TEST(Npy, ReadsScalarsAndEmptyArrays) {
  NpyArray const scalar =
      parse(npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", le({2.5})));
  EXPECT_EQ(scalar.shape, Shape{});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.as<double>(), std::vector<double>{2.5});

  NpyArray const empty =
      parse(npy_file(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 0, 3), }", ""));
  EXPECT_EQ(empty.shape, (Shape{2, 0, 3}));
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.data.empty());

  // A zero extent makes the size 0 however large the other extents are: not an overflow.
  NpyArray const huge_empty = parse(npy_file(
      1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }", ""));
  EXPECT_EQ(huge_empty.numel(), 0);
}

TEST(Npy, ByteSwapsBigEndianData) {
  auto read = [](std::string_view descr, std::string_view data) {
    return parse(npy_file(
        1, detail::sentence("{'descr': '", descr, "', 'fortran_order': False, 'shape': (3,), }"),
        data));
  };
  EXPECT_EQ(read(">i2", be<std::int16_t>({1, -300, 32767})).as<std::int16_t>(),
            (std::vector<std::int16_t>{1, -300, 32767}));
  EXPECT_EQ(read(">u2", be<std::uint16_t>({1, 300, 65535})).as<std::uint16_t>(),
            (std::vector<std::uint16_t>{1, 300, 65535}));
  EXPECT_EQ(read(">i4", be<std::int32_t>({-1, 1 << 20, 5})).as<std::int32_t>(),
            (std::vector<std::int32_t>{-1, 1 << 20, 5}));
  EXPECT_EQ(read(">u4", be<std::uint32_t>({7, 0xdeadbeef, 0})).as<std::uint32_t>(),
            (std::vector<std::uint32_t>{7, 0xdeadbeef, 0}));
  EXPECT_EQ(read(">i8", be<std::int64_t>({-5, std::int64_t{1} << 40, 3})).as<std::int64_t>(),
            (std::vector<std::int64_t>{-5, std::int64_t{1} << 40, 3}));
  EXPECT_EQ(read(">u8", be<std::uint64_t>({~0ull, 2, 3})).as<std::uint64_t>(),
            (std::vector<std::uint64_t>{~0ull, 2, 3}));
  EXPECT_EQ(read(">f2", be<std::uint16_t>({0x3c00, 0xc000, 0x3555})).as<float>(),
            (std::vector<float>{1.0f, -2.0f, 0x1.554p-2f}));
  EXPECT_EQ(read(">f4", be<float>({1.5f, -0.0f, 1e30f})).as<float>(),
            (std::vector<float>{1.5f, -0.0f, 1e30f}));
  EXPECT_EQ(read(">f8", be<double>({3.25, -1e300, 0.1})).as<double>(),
            (std::vector<double>{3.25, -1e300, 0.1}));
  // Byte order does not apply to 1-byte types; NumPy writes '|', '<' and '>' also parse.
  for (std::string_view descr : {"|u1", "<u1", ">u1"}) {
    EXPECT_EQ(read(descr, "\x01\x02\xff").as<int>(), (std::vector<int>{1, 2, 255}));
  }
  for (std::string_view descr : {"|b1", "<b1", ">b1"}) {
    EXPECT_EQ(read(descr, std::string("\x01\x00\x01", 3)).dtype, DType::bool_);
  }
  EXPECT_EQ(read("|i1", "\x01\xfe\x80").as<int>(), (std::vector<int>{1, -2, -128}));
  // In memory the data is little-endian: what a reader of NpyArray::data expects.
  EXPECT_EQ(to_string(read(">i2", be<std::int16_t>({1, 2, 3})).data), le<std::int16_t>({1, 2, 3}));
}

TEST(Npy, TransposesFortranOrderToCOrder) {
  // [[0, 1, 2], [3, 4, 5]] stored column by column.
  NpyArray const a = parse(npy_file(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
                                    le<std::int32_t>({0, 3, 1, 4, 2, 5})));
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(a.as<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));

  // Rank 3: element (i, j, k) has value 100 i + 10 j + k, and sits at i + 2 j + 6 k in
  // Fortran order.
  std::vector<std::uint16_t> fortran(24);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) fortran[i + 2 * j + 6 * k] = 100 * i + 10 * j + k;
    }
  }
  std::string data(reinterpret_cast<char const*>(fortran.data()), 48);
  NpyArray const b =
      parse(npy_file(1, "{'descr': '<u2', 'fortran_order': True, 'shape': (2, 3, 4), }", data));
  std::vector<std::uint16_t> c_order;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) c_order.push_back(100 * i + 10 * j + k);
    }
  }
  EXPECT_EQ(b.as<std::uint16_t>(), c_order);

  // Big-endian and Fortran order together.
  NpyArray const c = parse(npy_file(1, "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 2), }",
                                    be<double>({1.0, 3.0, 2.0, 4.0})));
  EXPECT_EQ(c.as<double>(), (std::vector<double>{1.0, 2.0, 3.0, 4.0}));

  // Rank 0 and 1: Fortran order is C order.
  NpyArray const d = parse(npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }",
                                    le<float>({1, 2, 3})));
  EXPECT_EQ(d.as<float>(), (std::vector<float>{1, 2, 3}));
}

// ---- errors ----

TEST(NpyErrors, NotANpyFile) {
  EXPECT_EQ(parse_error(""), "T.npy is empty, not a .npy file.");
  EXPECT_EQ(error_of([] { (void)parse("PNG\r\n\x1a\n....", "model.npy"); }),
            "model.npy is not a .npy file: its first bytes are not \\x93NUMPY.");
  EXPECT_EQ(parse_error("\x93NUMPx"),
            "T.npy is not a .npy file: its first bytes are not \\x93NUMPY.");
  EXPECT_EQ(parse_error(std::string("PK\x03\x04\x14\x00\x00\x00", 8)),
            "T.npy is not a .npy file: it is a zip archive (a .npz file?); extract the .npy files "
            "from it first.");
}

TEST(NpyErrors, TruncatedPreamble) {
  EXPECT_EQ(parse_error("\x93NUM"),
            "T.npy is truncated: it ends after 4 bytes, inside the .npy preamble (magic, version, "
            "header length).");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x01\x00\x10", 9)),
            "T.npy is truncated: it ends after 9 bytes, inside the .npy preamble (magic, version, "
            "header length).");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11)),
            "T.npy is truncated: it ends after 11 bytes, inside the .npy preamble (magic, "
            "version, header length).");
}

TEST(NpyErrors, UnknownFormatVersion) {
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x04\x00\x00\x00\x00\x00", 12)),
            "T.npy has .npy format version 4.0, which tessel cannot read; it reads versions 1.0, "
            "2.0 and 3.0.");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x01\x01\x00\x00", 10)),
            "T.npy has .npy format version 1.1, which tessel cannot read; it reads versions 1.0, "
            "2.0 and 3.0.");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x00\x00\x00\x00", 10)),
            "T.npy has .npy format version 0.0, which tessel cannot read; it reads versions 1.0, "
            "2.0 and 3.0.");
}

TEST(NpyErrors, HeaderLengthPastTheEnd) {
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x01\x00\xc8\x00", 10) + "0123456789"),
            "T.npy is truncated: its header is 200 bytes long but only 10 bytes follow the "
            "preamble.");
  // A 4 GiB header length is refused before anything is allocated for it.
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14)),
            "T.npy is truncated: its header is 4294967295 bytes long but only 2 bytes follow the "
            "preamble.");
}

TEST(NpyErrors, MalformedHeaders) {
  auto error = [](std::string_view dict) { return parse_error(npy_file(1, dict, "")); };
  EXPECT_EQ(error(""),
            "T.npy has a malformed .npy header: expected '{' at the start of the header dict at "
            "character 0 of \"\".");
  EXPECT_EQ(error("{'descr' '<f4', 'fortran_order': False, 'shape': (3,), }"),
            "T.npy has a malformed .npy header: expected ':' after the key 'descr' at character 9 "
            "of \"{'descr' '<f4', 'fortran_order': False, 'shape': (3,), }\".");
  EXPECT_EQ(error("{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}"),
            "T.npy has a malformed .npy header: expected ',' or '}' after the value of 'descr' at "
            "character 16 of \"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}"),
            "T.npy has a malformed .npy header: unexpected key 'extra' (a .npy header has exactly "
            "the keys 'descr', 'fortran_order' and 'shape') at character 56 of \"{'descr': '<f4', "
            "'fortran_order': False, 'shape': (3,), 'extra': 1}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}"),
            "T.npy has a malformed .npy header: the key 'descr' appears twice at character 17 of "
            "\"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False}"),
            "T.npy has a malformed .npy header: it has no 'shape' key in \"{'descr': '<f4', "
            "'fortran_order': False}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}"),
            "T.npy has a malformed .npy header: 'fortran_order' must be True or False at "
            "character 34 of \"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}\".");
  EXPECT_EQ(
      error("{'descr': '<f4', 'fortran_order': False, 'shape': [3]}"),
      "T.npy has a malformed .npy header: 'shape' must be a tuple of non-negative integers at "
      "character 50 of \"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}"),
            "T.npy has a malformed .npy header: 'shape' is a parenthesized integer, not a tuple (a "
            "1-d shape is written (n,)) at character 50 of \"{'descr': '<f4', 'fortran_order': "
            "False, 'shape': (3)}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}"),
            "T.npy has a malformed .npy header: expected a non-negative integer in the shape tuple "
            "at character 54 of \"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}"),
            "T.npy has a malformed .npy header: expected ',' or ')' in the shape tuple at "
            "character 53 of \"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}"),
            "T.npy has a malformed .npy header: a shape extent does not fit in int64 at character "
            "51 of \"{'descr': '<f4', 'fortran_order': False, 'shape': "
            "(9223372036854775808,)}\".");
  EXPECT_EQ(error("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} ()"),
            "T.npy has a malformed .npy header: unexpected text after the closing '}' at character "
            "56 of \"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} ()\".");
  EXPECT_EQ(error("{'descr: '<f4'}"),
            "T.npy has a malformed .npy header: expected ':' after the key 'descr: ' at character "
            "10 of \"{'descr: '<f4'}\".");
  EXPECT_EQ(error("{'descr"),
            "T.npy has a malformed .npy header: unterminated string at character 1 of "
            "\"{'descr\".");
  EXPECT_EQ(error("{'de\\x73cr': '<f4'}"),
            "T.npy has a malformed .npy header: unsupported escape sequence in a string at "
            "character 4 of \"{'de\\x73cr': '<f4'}\".");
  // Unprintable bytes are shown escaped, and a long header is cut short.
  EXPECT_EQ(error(std::string("{\x01}", 3)),
            "T.npy has a malformed .npy header: expected a quoted key or '}' at character 1 of "
            "\"{\\x01}\".");
  std::string const long_dict = "{'shape': (" + std::string(300, '1') + ",)}";
  std::string const message = error(long_dict);
  EXPECT_EQ(message.substr(message.size() - 9), "1111...\".");
  EXPECT_LT(message.size(), 330u);
}

TEST(NpyErrors, UnsupportedDescr) {
  auto error = [](std::string_view descr) {
    return parse_error(npy_file(
        1, detail::sentence("{'descr': '", descr, "', 'fortran_order': False, 'shape': (1,)}"),
        ""));
  };
  EXPECT_EQ(error("<c8"),
            "T.npy has unsupported dtype descr '<c8'; tessel reads b1, i1, i2, i4, i8, u1, u2, u4, "
            "u8, f2, f4 and f8, little-endian ('<') or big-endian ('>'), and '|' for the 1-byte "
            "ones.");
  for (std::string_view descr :
       {"|f4", "=f4", "<f3", "<i3", "<b2", "<U10", "<f16", "O", "<M8", "<V2", "", "f4", "<f0"}) {
    EXPECT_EQ(error(descr).substr(0, 36 + descr.size()),
              detail::sentence("T.npy has unsupported dtype descr '", descr, "'"))
        << descr;
  }
  EXPECT_EQ(
      parse_error(npy_file(
          1, "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': ()}", "")),
      "T.npy has a structured dtype (its descr is a list), which tessel cannot read; tessel "
      "reads b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 and f8, little-endian ('<') or "
      "big-endian ('>'), and '|' for the 1-byte ones.");
}

TEST(NpyErrors, DataSizeOverflow) {
  EXPECT_EQ(
      parse_error(npy_file(
          1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "")),
      "T.npy has shape (4294967296,4294967296) of f64, whose size in bytes overflows "
      "int64.");
  // numel fits, numel * itemsize does not.
  EXPECT_EQ(
      parse_error(npy_file(
          1, "{'descr': '<i2', 'fortran_order': False, 'shape': (4611686018427387904,)}", "")),
      "T.npy has shape (4611686018427387904) of i16, whose size in bytes overflows int64.");
}

TEST(NpyErrors, TruncatedOrTrailingData) {
  std::string const data = le<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(parse_error(npy_file(1, f4_3x4, data.substr(0, 40))),
            "T.npy is truncated: its header promises 48 bytes of data but only 40 follow.");
  EXPECT_EQ(parse_error(npy_file(1, f4_3x4, data + "garbage!")),
            "T.npy has 8 unexpected bytes after the 48 bytes of data its header promises.");
}

TEST(NpyErrors, EveryPrefixOfAValidFileIsAnErrorNotACrash) {
  std::string const file = npy_header(DType::f32, Shape{3, 4}) + std::string(48, '\x01');
  ASSERT_NO_THROW((void)parse(file));
  for (std::size_t n = 0; n < file.size(); ++n) {
    EXPECT_THROW((void)parse(file.substr(0, n)), Error) << n;
  }
}

TEST(NpyErrors, RandomCorruptionIsAnErrorNotACrash) {
  std::string const valid =
      npy_file(2, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }",
               be<std::int32_t>({1, 2, 3, 4, 5, 6}));
  std::mt19937 random(7);
  int parsed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string file = valid;
    int const edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits; ++e) {
      std::size_t const at = random() % file.size();
      switch (random() % 3) {
        case 0:
          file[at] = static_cast<char>(random());
          break;
        case 1:
          file.erase(at, 1 + random() % 4);
          break;
        default:
          file.insert(at, 1, "0123456789(),:'{} <>|fiub\n"[random() % 26]);
          break;
      }
      if (file.empty()) file.push_back('x');
    }
    try {
      NpyArray const a = parse(file);
      // Whatever parses is self-consistent.
      EXPECT_EQ(a.data.size(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype));
      ++parsed;
    } catch (Error const&) {
    }
  }
  EXPECT_GT(parsed, 0);  // some edits (in the data) leave a valid file
}

// ---- files ----

TEST(NpyFiles, ReadErrorsNameThePath) {
  TempDir dir;
  auto const missing = dir / "missing.npy";
  EXPECT_EQ(error_of([&] { (void)read_npy(missing); }),
            "cannot read " + missing.string() + ": No such file or directory.");
  EXPECT_EQ(error_of([&] { (void)read_npy(dir.path()); }),
            "cannot read " + dir.path().string() + ": Is a directory.");
  write_file(dir / "short.npy", npy_file(1, f4_3x4, std::string(40, '\0')));
  EXPECT_EQ(error_of([&] { (void)read_npy(dir / "short.npy"); }),
            (dir / "short.npy").string() +
                " is truncated: its header promises 48 bytes of data but only 40 follow.");
}

TEST(NpyFiles, WriteErrorsLeaveNoFileBehind) {
  TempDir dir;
  auto const p = dir / "x.npy";
  std::string const name = p.string();
  std::vector<std::byte> const data(64);
  EXPECT_EQ(error_of([&] { write_npy(p, DType::bf16, Shape{2}, data.data()); }),
            "cannot write " + name +
                ": NumPy has no bfloat16 dtype; convert the data to f32 first (for example with "
                "as<float>()), or write a safetensors file, which stores BF16.");
  EXPECT_EQ(error_of([&] {
              write_npy(p, DType::f32, Shape{2, -3}, data.data());
            }),
            "cannot write " + name + ": shape (2,-3) has a negative extent.");
  EXPECT_EQ(
      error_of([&] {
        write_npy(p, DType::f32, Shape{std::int64_t{1} << 40, std::int64_t{1} << 40}, data.data());
      }),
      "cannot write " + name +
          ": the size in bytes of shape (1099511627776,1099511627776) of f32 overflows "
          "int64.");
  EXPECT_EQ(error_of([&] { write_npy(p, static_cast<DType>(99), Shape{2}, data.data()); }),
            "cannot write " + name + ": invalid dtype value 99.");
  EXPECT_EQ(error_of([&] {
              write_npy(p, DType::f32, Shape{2, 3}, nullptr);
            }),
            "cannot write " + name + ": data is null but shape (2,3) has 6 elements.");
  EXPECT_EQ(error_of([&] {
              write_npy(p, Shape{2, 3}, std::vector<float>(5));
            }),
            "cannot write " + name + ": shape (2,3) has 6 elements but 5 values were given.");
  NpyArray bad{DType::f32, {2}, std::vector<std::byte>(7)};
  EXPECT_EQ(error_of([&] { write_npy(p, bad); }),
            "the NpyArray holds 7 bytes of data, but shape (2) of f32 needs 8.");
  EXPECT_TRUE(dir.entries().empty());
  // An empty array needs no data pointer.
  write_npy(p, DType::f32, Shape{0, 3}, nullptr);
  EXPECT_EQ(read_npy(p).shape, (Shape{0, 3}));
}

TEST(NpyFiles, AFailedWriteLeavesTheOldFileUntouched) {
  TempDir dir;
  auto const p = dir / "x.npy";
  std::vector<float> const old{1, 2, 3};
  write_npy(p, Shape{3}, old);
  std::string const before = read_file(p);
  EXPECT_THROW(write_npy(p, DType::bf16, Shape{3}, old.data()), Error);
  EXPECT_EQ(read_file(p), before);
  // A successful write replaces it whole.
  write_npy(p, Shape{2}, std::vector<double>{4, 5});
  EXPECT_EQ(read_npy(p).as<double>(), (std::vector<double>{4, 5}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.npy"});
}

TEST(NpyFiles, AFailedRenameRemovesTheTemporaryFile) {
  TempDir dir;
  // The destination is a non-empty directory: the data is written, the rename fails.
  std::filesystem::create_directories(dir / "x.npy" / "inside");
  std::string const message = error_of([&] {
    write_npy(dir / "x.npy", Shape{2}, std::vector<float>{1, 2});
  });
  std::string const prefix = "cannot write " + (dir / "x.npy").string() + ": renaming ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.npy"});
}

TEST(NpyFiles, WritingIntoAMissingDirectoryFails) {
  TempDir dir;
  auto const p = dir / "no" / "such" / "x.npy";
  std::string const message = error_of([&] { write_npy(p, Shape{1}, std::vector<float>{1}); });
  std::string const prefix =
      "cannot write " + p.string() + ": cannot create the temporary file " + p.string() + ".tmp-";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  EXPECT_EQ(message.substr(message.size() - 28), ": No such file or directory.");
}

// ---- conversions ----

TEST(NpyArrayAs, ConvertsBetweenDTypes) {
  auto array = [](DType d, std::string data) {
    std::int64_t const n = static_cast<std::int64_t>(data.size() / dtype_size(d));
    return NpyArray{d, {n}, to_bytes(data)};
  };
  EXPECT_EQ(array(DType::f16, le<std::uint16_t>({0x3c00, 0xc100, 0x7c00})).as<float>(),
            (std::vector<float>{1.0f, -2.5f, INFINITY}));
  EXPECT_EQ(array(DType::bf16, le<std::uint16_t>({0x3f80, 0x4049})).as<double>(),
            (std::vector<double>{1.0, 3.140625}));
  EXPECT_EQ(array(DType::i64, le<std::int64_t>({-3, std::int64_t{1} << 40})).as<double>(),
            (std::vector<double>{-3.0, 1099511627776.0}));
  // Floating point to integer truncates toward zero.
  EXPECT_EQ(array(DType::f32, le<float>({2.7f, -2.7f, -0.5f})).as<std::int32_t>(),
            (std::vector<std::int32_t>{2, -2, 0}));
  // A stored bool byte other than 0 or 1 still reads as true.
  EXPECT_EQ(array(DType::bool_, std::string("\x00\x01\x02", 3)).as<int>(),
            (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(array(DType::bool_, std::string("\x00\x01\x02", 3)).as<bool>(),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ(array(DType::f64, le<double>({0.0, -0.0, NAN})).as<bool>(),
            (std::vector<bool>{false, false, true}));
  std::vector<half> const h = array(DType::u8, "\x01\xff").as<half>();
  EXPECT_EQ(h[0].bits, 0x3c00);
  EXPECT_EQ(h[1].bits, half(255.0f).bits);
  EXPECT_EQ(array(DType::f32, le<float>({1.0f})).as<bfloat16>()[0].bits, 0x3f80);
  EXPECT_EQ(array(DType::u64, le<std::uint64_t>({~0ull})).as<std::uint64_t>()[0], ~0ull);
  // The edges of the integer ranges are accepted.
  EXPECT_EQ(array(DType::f64, le<double>({-0x1p63})).as<std::int64_t>()[0],
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(array(DType::f32, le<float>({255.9f})).as<std::uint8_t>()[0], 255);
}

TEST(NpyArrayAs, ThrowsWhenAnIntegerTypeCannotHoldAValue) {
  auto array = [](DType d, std::string data) {
    std::int64_t const n = static_cast<std::int64_t>(data.size() / dtype_size(d));
    return NpyArray{d, {n}, to_bytes(data)};
  };
  EXPECT_EQ(
      error_of([&] {
        (void)array(DType::i64, le<std::int64_t>({1, std::int64_t{1} << 40})).as<std::int32_t>();
      }),
      "cannot convert i64 to i32: element 1 is 1099511627776, which i32 cannot hold.");
  EXPECT_EQ(error_of([&] { (void)array(DType::i8, "\xff").as<std::uint32_t>(); }),
            "cannot convert i8 to u32: element 0 is -1, which u32 cannot hold.");
  EXPECT_EQ(error_of([&] { (void)array(DType::f32, le<float>({NAN})).as<std::int32_t>(); }),
            "cannot convert f32 to i32: element 0 is nan, which i32 cannot hold.");
  EXPECT_EQ(error_of([&] { (void)array(DType::f64, le<double>({0x1p63})).as<std::int64_t>(); }),
            "cannot convert f64 to i64: element 0 is 9223372036854775808, which i64 cannot hold.");
  EXPECT_EQ(
      error_of([&] { (void)array(DType::f16, le<std::uint16_t>({0x7c00})).as<std::int16_t>(); }),
      "cannot convert f16 to i16: element 0 is inf, which i16 cannot hold.");
  EXPECT_EQ(error_of([&] { (void)array(DType::f32, le<float>({256.0f})).as<std::uint8_t>(); }),
            "cannot convert f32 to u8: element 0 is 256, which u8 cannot hold.");
}

TEST(NpyArrayAs, ChecksTheDataAgainstTheShape) {
  NpyArray const a{DType::f32, {2}, std::vector<std::byte>(7)};
  EXPECT_EQ(error_of([&] { (void)a.as<float>(); }),
            "the NpyArray holds 7 bytes of data, but shape (2) of f32 needs 8.");
  NpyArray const b{DType::f32, {2, -1}, {}};
  EXPECT_EQ(error_of([&] { (void)b.numel(); }), "shape (2,-1) has a negative extent.");
}

}  // namespace
