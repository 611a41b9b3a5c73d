// DType: sizes, names, parsing from text, the DType of C++ element types and visit_dtype back.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>

#include <tessel/core/dtype.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;

static_assert(dtype_size(DType::bool_) == 1);
static_assert(dtype_size(DType::i8) == 1 && dtype_size(DType::u8) == 1);
static_assert(dtype_size(DType::i16) == 2 && dtype_size(DType::u16) == 2);
static_assert(dtype_size(DType::f16) == 2 && dtype_size(DType::bf16) == 2);
static_assert(dtype_size(DType::i32) == 4 && dtype_size(DType::u32) == 4);
static_assert(dtype_size(DType::f32) == 4);
static_assert(dtype_size(DType::i64) == 8 && dtype_size(DType::u64) == 8);
static_assert(dtype_size(DType::f64) == 8);
static_assert(dtype_size(static_cast<DType>(200)) == 0);

static_assert(dtype_name(DType::bool_) == "bool");
static_assert(dtype_name(DType::bf16) == "bf16");
static_assert(dtype_name(DType::f32) == "f32");
static_assert(dtype_name(DType::u64) == "u64");

static_assert(dtype_of_v<bool> == DType::bool_);
static_assert(dtype_of_v<std::int8_t> == DType::i8);
static_assert(dtype_of_v<std::int16_t> == DType::i16);
static_assert(dtype_of_v<std::int32_t> == DType::i32);
static_assert(dtype_of_v<std::int64_t> == DType::i64);
static_assert(dtype_of_v<long long> == DType::i64 && dtype_of_v<long> == DType::i64);
static_assert(dtype_of_v<std::uint8_t> == DType::u8);
static_assert(dtype_of_v<std::uint16_t> == DType::u16);
static_assert(dtype_of_v<std::uint32_t> == DType::u32);
static_assert(dtype_of_v<std::uint64_t> == DType::u64);
static_assert(dtype_of_v<unsigned long long> == DType::u64);
static_assert(dtype_of_v<half> == DType::f16);
static_assert(dtype_of_v<bfloat16> == DType::bf16);
static_assert(dtype_of_v<float> == DType::f32);
static_assert(dtype_of_v<double> == DType::f64);
static_assert(dtype_of_v<float const> == DType::f32);
// Types whose element meaning is unclear have no DType.
static_assert(!HasDType<char> && !HasDType<char8_t> && !HasDType<wchar_t>);
static_assert(!HasDType<long double> && !HasDType<std::string> && !HasDType<float*>);

// dtype_size(dtype_of_v<T>) == sizeof(T) for every element type.
template <class... Ts>
constexpr bool sizes_agree = ((dtype_size(dtype_of_v<Ts>) == sizeof(Ts)) && ...);
static_assert(
    sizes_agree<bool, std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                std::uint16_t, std::uint32_t, std::uint64_t, half, bfloat16, float, double>);

TEST(DType, EveryNameParsesBackToItsDType) {
  for (DType d : all_dtypes) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
  }
}

TEST(DType, ParsesCommonAliasesIgnoringCase) {
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("float"), DType::f32);
  EXPECT_EQ(parse_dtype("F32"), DType::f32);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("BF16"), DType::bf16);
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("float64"), DType::f64);
  EXPECT_EQ(parse_dtype("double"), DType::f64);
  EXPECT_EQ(parse_dtype("int64"), DType::i64);
  EXPECT_EQ(parse_dtype("Int8"), DType::i8);
  EXPECT_EQ(parse_dtype("uint16"), DType::u16);
  EXPECT_EQ(parse_dtype("BOOL"), DType::bool_);
}

TEST(DType, UnknownNameThrowsListingTheValidNames) {
  try {
    (void)parse_dtype("f8");
    FAIL() << "expected tessel::Error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "unknown dtype \"f8\"; valid names are bool, i8, i16, i32, i64, u8, u16, u32, "
                 "u64, f16, bf16, f32, f64 (or int8, int16, int32, int64, uint8, uint16, uint32, "
                 "uint64, float16, half, bfloat16, float32, float, float64, double).");
  }
  EXPECT_THROW((void)parse_dtype(""), Error);
  EXPECT_THROW((void)parse_dtype("f32 "), Error);
}

TEST(DType, PrintsItsName) {
  std::ostringstream os;
  os << DType::bf16 << ' ' << DType::bool_;
  EXPECT_EQ(os.str(), "bf16 bool");
}


// visit_dtype hands every DType to its C++ type: a round trip through dtype_of_v, usable in
// constant expressions.
template <class T>
constexpr DType dtype_from(std::type_identity<T>) {
  return dtype_of_v<T>;
}
constexpr bool visit_round_trips() {
  for (DType d : all_dtypes)
    if (visit_dtype(d, [](auto t) { return dtype_from(t); }) != d) return false;
  return true;
}
static_assert(visit_round_trips());
static_assert(visit_dtype(DType::bf16, [](auto t) { return sizeof(typename decltype(t)::type); }) ==
              2);

TEST(DType, VisitRefusesAValueOutsideTheEnumeration) {
  auto const size_of = [](auto t) { return sizeof(typename decltype(t)::type); };
  EXPECT_EQ(visit_dtype(DType::f64, size_of), 8u);
  EXPECT_EQ(test::error_of([&] { (void)visit_dtype(static_cast<DType>(200), size_of); }),
            "the value 200 is not a tessel::DType.");
}

}  // namespace
