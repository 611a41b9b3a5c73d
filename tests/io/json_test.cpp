// io/json.hpp: valid documents and their values, every kind of rejection with its byte, nesting,
// escapes (surrogate pairs included), numbers, UTF-8, and the writer's exact bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tessel/io/json.hpp>

namespace {

using namespace tessel::detail;
using json::Kind;
using json::Value;
using Reason = json::ParseError::Reason;

Value parsed(std::string_view text, std::size_t max_nesting = 64) {
  json::Parsed p = json::parse(text, max_nesting);
  EXPECT_TRUE(p.value.has_value()) << text << ": rejected at byte " << p.error.offset;
  return p.value ? std::move(*p.value) : Value();
}

// The text parsed and written again.
std::string round_trip(std::string_view text) {
  return json::dump(parsed(text));
}

json::ParseError rejected(std::string_view text, std::size_t max_nesting = 64) {
  json::Parsed p = json::parse(text, max_nesting);
  EXPECT_FALSE(p.value.has_value()) << text;
  return p.error;
}

// Small, because a header of 100 MB of numbers is that many values (see Value).
static_assert(sizeof(void*) != 8 || sizeof(Value) == 24);

struct Rejection {
  std::string_view text;
  Reason reason;
  std::size_t offset;
};

// ---- valid documents ----

TEST(JsonParse, ReadsEveryKindOfValue) {
  EXPECT_TRUE(parsed("null").is_null());
  EXPECT_EQ(parsed("true").kind(), Kind::boolean);
  EXPECT_TRUE(parsed("true").boolean());
  EXPECT_FALSE(parsed("false").boolean());
  EXPECT_EQ(parsed("\"a\"").string(), "a");
  EXPECT_EQ(parsed("7").kind(), Kind::number);
  EXPECT_TRUE(parsed("[]").is_array());
  EXPECT_TRUE(parsed("{}").is_object());

  Value const v = parsed(R"({"z": [1, "two", null, {"x": false}], "a": {}})");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.members().size(), 2u);
  EXPECT_EQ(v.members()[0].first, "z");  // document order, not sorted
  EXPECT_EQ(v.members()[1].first, "a");
  Value const& z = *v.find("z");
  ASSERT_EQ(z.items().size(), 4u);
  EXPECT_EQ(z.items()[0].to_uint64(), 1u);
  EXPECT_EQ(z.items()[1].string(), "two");
  EXPECT_TRUE(z.items()[2].is_null());
  EXPECT_FALSE(z.items()[3].find("x")->boolean());
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(z.find("x"), nullptr);  // not an object
}

TEST(JsonParse, NamesKindsAsErrorSentencesDo) {
  EXPECT_STREQ(parsed("null").type_name(), "null");
  EXPECT_STREQ(parsed("true").type_name(), "boolean");
  EXPECT_STREQ(parsed("1.5").type_name(), "number");
  EXPECT_STREQ(parsed("\"\"").type_name(), "string");
  EXPECT_STREQ(parsed("[]").type_name(), "array");
  EXPECT_STREQ(parsed("{}").type_name(), "object");
}

TEST(JsonParse, AllowsWhitespaceAroundTokens) {
  EXPECT_EQ(round_trip(" \t\r\n{ \"a\" :\n[ 1 ,\t2 ] , \"b\" : { } }\r\n "),
            R"({"a":[1,2],"b":{}})");
  EXPECT_EQ(round_trip("  7  "), "7");
}

TEST(JsonParse, DecodesEscapes) {
  EXPECT_EQ(parsed(R"("\" \\ \/ \b \f \n \r \t")").string(), "\" \\ / \b \f \n \r \t");
  EXPECT_EQ(parsed(R"("\u0041\u00e9\u20AC")").string(), "A\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(parsed(R"("\u0000")").string(), std::string(1, '\0'));
  // A surrogate pair is one code point, U+1F600, four bytes of UTF-8.
  EXPECT_EQ(parsed(R"("\ud83d\ude00")").string(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(parsed(R"("\uDBFF\uDFFF")").string(), "\xf4\x8f\xbf\xbf");  // U+10FFFF
  EXPECT_EQ(parsed(R"("\uD800\uDC00")").string(), "\xf0\x90\x80\x80");  // U+10000
}

TEST(JsonParse, AcceptsUtf8UpToU10FFFF) {
  for (std::string_view s : {"\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
                             "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\x7f"}) {
    std::string text = "\"";  // not "\"" + std::string(s): a GCC 12 -Wrestrict false positive
    text += s;
    text += '"';
    EXPECT_EQ(parsed(text).string(), s);
    EXPECT_TRUE(json::is_valid_utf8(s));
  }
}

TEST(JsonParse, TypesNumbersAsNlohmannDid) {
  // Integers without a sign are uint64, with one int64; anything else (a fraction, an exponent,
  // an integer too large) is a double, which never reads as an integer.
  EXPECT_EQ(parsed("0").to_uint64(), 0u);
  EXPECT_EQ(parsed("-0").to_uint64(), 0u);
  EXPECT_EQ(parsed("18446744073709551615").to_uint64(), UINT64_MAX);
  EXPECT_EQ(parsed("18446744073709551615").to_int64(), std::nullopt);
  EXPECT_EQ(parsed("9223372036854775807").to_int64(), INT64_MAX);
  EXPECT_EQ(parsed("-9223372036854775808").to_int64(), INT64_MIN);
  EXPECT_EQ(parsed("-1").to_uint64(), std::nullopt);
  EXPECT_EQ(parsed("-1").to_int64(), -1);
  for (std::string_view d :
       {"2.0", "1e2", "1E+2", "-0.5e-1", "18446744073709551616", "-9223372036854775809"}) {
    Value const v = parsed(d);
    EXPECT_TRUE(v.is_floating()) << d;
    EXPECT_EQ(v.to_uint64(), std::nullopt) << d;
    EXPECT_EQ(v.to_int64(), std::nullopt) << d;
  }
  EXPECT_EQ(parsed("18446744073709551616").to_double(), 18446744073709551616.0);
  EXPECT_EQ(parsed("2.5e-3").to_double(), 0.0025);
  // Too small for a double is zero, as strtod made it; too large is refused (below).
  EXPECT_EQ(round_trip("[1e-400,-1e-400,5e-324]"), "[0.0,-0.0,5e-324]");
}

TEST(JsonParse, NestsAsDeepAsAllowedWithoutRecursion) {
  EXPECT_EQ(round_trip("[[[]]]"), "[[[]]]");
  EXPECT_TRUE(json::parse(R"({"a":{"b":[1]}})", 3).value);
  std::size_t const deep = 10'000;
  std::string const text = std::string(deep, '[') + std::string(deep, ']');
  json::Parsed const p = json::parse(text, deep);
  ASSERT_TRUE(p.value);
  std::size_t depth = 0;
  for (Value const* v = &*p.value; !v->items().empty(); v = &v->items()[0]) ++depth;
  EXPECT_EQ(depth, deep - 1);
}

// ---- rejections ----

TEST(JsonParse, RejectsSyntaxErrorsAtTheirByte) {
  // The byte is nlohmann's parse_error::byte - 1: for a token that cannot come where it is, its
  // last byte; for an invalid token, the byte that makes it so.
  for (Rejection const& r : std::vector<Rejection>{
           {"{} {}", Reason::syntax, 3},
           {"[1 2]", Reason::syntax, 3},
           {"[01]", Reason::syntax, 2},  // "0" then "1"
           {"[1,]", Reason::syntax, 3},
           {R"({"a":1,})", Reason::syntax, 7},
           {"{1:2}", Reason::syntax, 1},
           {R"({"a" 1})", Reason::syntax, 5},
           {R"({"a":1 "b":2})", Reason::syntax, 9},  // the last byte of the string token
           {R"([1] "tail")", Reason::syntax, 9},
           {"[,1]", Reason::syntax, 1},
           {"]", Reason::syntax, 0},
           {"trux", Reason::syntax, 3},
           {"nulL", Reason::syntax, 3},
           {"True", Reason::syntax, 0},
           {"-a", Reason::syntax, 1},
           {"+1", Reason::syntax, 0},
           {"[.5]", Reason::syntax, 1},
           {"1.a", Reason::syntax, 2},
           {"1e+a", Reason::syntax, 3},
           {"1ex", Reason::syntax, 2},
           {"1e5x", Reason::syntax, 3},
           {"'a'", Reason::syntax, 0},
           {"\"a\x01\"", Reason::syntax, 2},  // a raw control character
           {"\"a\tb\"", Reason::syntax, 2},
           {R"("\x")", Reason::syntax, 2},
           {R"("\U0041")", Reason::syntax, 2},
           {R"("\u12g4")", Reason::syntax, 5},
           {R"("\udc00")", Reason::syntax, 6},         // a low surrogate alone
           {R"("\ud800")", Reason::syntax, 7},         // a high surrogate alone
           {R"("\ud800\n")", Reason::syntax, 8},       // followed by another escape
           {R"("\ud800\u0041")", Reason::syntax, 12},  // followed by no low surrogate
           {R"("\ud800\ud800")", Reason::syntax, 12},
           {"\"\xff\"", Reason::syntax, 1},              // no UTF-8 sequence starts with 0xFF
           {"\"\xc0\xaf\"", Reason::syntax, 1},          // overlong
           {"\"\xc3(\"", Reason::syntax, 2},             // a broken sequence: at its bad byte
           {"\"\xe0\x80\x80\"", Reason::syntax, 2},      // overlong
           {"\"\xed\xa0\x80\"", Reason::syntax, 2},      // a surrogate
           {"\"\xf4\x90\x80\x80\"", Reason::syntax, 2},  // above U+10FFFF
           {"\"\xf0\x9f\x98(\"", Reason::syntax, 4},
           {"\"\xf5\x80\x80\x80\"", Reason::syntax, 1},
           {"\"\x80\"", Reason::syntax, 1},
           // Refused where nlohmann accepted: a byte-order mark, a NUL after the document.
           {"\xef\xbb\xbf{}", Reason::syntax, 0},
           {std::string_view("{}\0", 3), Reason::syntax, 2},
       }) {
    json::ParseError const e = rejected(r.text);
    EXPECT_EQ(e.reason, r.reason) << r.text;
    EXPECT_EQ(e.offset, r.offset) << r.text;
  }
}

TEST(JsonParse, RejectsTextsThatEndInTheMiddleOfAValue) {
  for (std::string_view text :
       {"",    "   ", "[",     "[1,",   "{",        R"({"a")",       R"({"a":)",    R"({"a":1,)",
        "tru", "nul", "\"abc", R"("\)", R"("\u12)", R"("\ud800)",    R"("\ud800\)", R"("\ud800\u)",
        "-",   "1.",  "1e",    "1e+",   "\"\xc3",   "\"\xf0\x9f\x98"}) {
    json::ParseError const e = rejected(text);
    EXPECT_EQ(e.reason, Reason::truncated) << text;
    EXPECT_EQ(e.offset, text.size()) << text;
  }
}

TEST(JsonParse, RejectsNumbersBeyondDouble) {
  for (std::string_view text :
       {"1e400", "[-1e400]", "7e77777", "1.7976931348623159e308", "1e99999999999999999999"}) {
    EXPECT_EQ(rejected(text).reason, Reason::number_too_large) << text;
  }
  EXPECT_EQ(rejected(std::string(400, '9')).reason, Reason::number_too_large);
  // Found where a value can be: a number where none can be is a syntax error first.
  EXPECT_EQ(rejected(R"({"a":1 1e400})").reason, Reason::syntax);
}

TEST(JsonParse, RejectsContainersNestedTooDeep) {
  // Three levels: the document, what it holds, and what that holds.
  json::ParseError e = rejected(R"({"a":{"b":[[1]]}})", 3);
  EXPECT_EQ(e.reason, Reason::too_deep);
  EXPECT_EQ(e.offset, 11u);                      // the fourth '['
  e = rejected(std::string(1'000'000, '['), 3);  // found before the text ends
  EXPECT_EQ(e.reason, Reason::too_deep);
  EXPECT_EQ(e.offset, 3u);
  EXPECT_EQ(rejected("[]", 0).reason, Reason::too_deep);
  EXPECT_TRUE(json::parse("1", 0).value);
}

TEST(JsonParse, RejectsARepeatedKeyNamingItAndItsPlace) {
  json::ParseError e = rejected(R"({"a":1,"a":2})");
  EXPECT_EQ(e.reason, Reason::repeated_key);
  EXPECT_EQ(e.offset, 9u);  // the second key's closing quote
  EXPECT_EQ(e.key, "a");
  EXPECT_EQ(e.path, std::vector<std::string>{""});

  // Keys compare decoded; the path gives each container's key in its parent, "" in an array.
  e = rejected(R"({"w":{"x":[{"k":1,"\u006b":2}]}})");
  EXPECT_EQ(e.reason, Reason::repeated_key);
  EXPECT_EQ(e.key, "k");
  EXPECT_EQ(e.path, (std::vector<std::string>{"", "w", "x", ""}));

  // Found where it occurs, before a later syntax error.
  EXPECT_EQ(rejected(R"({"a":1,"a":2,})").reason, Reason::repeated_key);
  // The same key in different objects is fine.
  EXPECT_EQ(round_trip(R"({"a":{"a":1},"b":{"a":2}})"), R"({"a":{"a":1},"b":{"a":2}})");
}

// ---- writing ----

TEST(JsonWrite, EscapesStringsAsNlohmannDid) {
  std::string control;
  for (int c = 0; c < 0x20; ++c) control += static_cast<char>(c);
  EXPECT_EQ(json::dump(Value(control + "\x7f/\"\\")),
            R"("\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f)"
            R"(\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c)"
            R"(\u001d\u001e\u001f)"
            "\x7f"
            R"(/\"\\")");
  // Non-ASCII text is written as it is, not as \u escapes.
  EXPECT_EQ(json::dump(Value("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")),
            "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

TEST(JsonWrite, ReplacesInvalidUtf8OnlyWhenAsked) {
  // One U+FFFD per maximal ill-formed part; the byte that broke a sequence starts the next.
  std::string out;
  json::write_string(out, "bad\xff|\xe0\x80|\xed\xa0\x80|v\xc3", json::InvalidUtf8::replace);
  std::string const r = "\xef\xbf\xbd";
  EXPECT_EQ(out, "\"bad" + r + "|" + r + r + "|" + r + r + r + "|v" + r + "\"");
  out.clear();
  json::write_string(out, "\xc3\n", json::InvalidUtf8::replace);
  EXPECT_EQ(out, "\"" + r + "\\n\"");
  // Kept by default: the caller checks is_valid_utf8 and says which string is wrong.
  EXPECT_EQ(json::dump(Value("a\xff")), "\"a\xff\"");
  for (std::string_view s : {"a\xff", "\xc3", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                             "\xc0\xaf", "\xf0\x9f\x98"})
    EXPECT_FALSE(json::is_valid_utf8(s)) << s;
  EXPECT_TRUE(json::is_valid_utf8(""));
}

TEST(JsonWrite, WritesNumbersAsNlohmannDid) {
  EXPECT_EQ(json::dump(Value::array({0, -7, std::int64_t{INT64_MIN}, std::uint64_t{UINT64_MAX}})),
            "[0,-7,-9223372036854775808,18446744073709551615]");
  std::vector<std::pair<double, std::string_view>> const doubles = {
      {100.0, "100.0"},
      {2.0, "2.0"},
      {1.5, "1.5"},
      {0.1, "0.1"},
      {1e300, "1e+300"},
      {1e-5, "1e-05"},
      {0.0001, "0.0001"},
      {0.001, "0.001"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {1e15, "1e+15"},
      {1e14, "100000000000000.0"},
      {5e-324, "5e-324"},
      {-2.5e-7, "-2.5e-07"},
      {123456789012345.6, "123456789012345.6"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}};
  for (auto const& [d, text] : doubles) EXPECT_EQ(json::dump(Value(d)), text);
  std::string out;
  json::write_double(out, std::numeric_limits<double>::infinity());
  EXPECT_EQ(out, "null");
}

TEST(JsonWrite, WritesCompactlyInMemberOrder) {
  Value const v = Value::object({{"z", Value::array({1, "a", nullptr, true, false})},
                                 {"a", Value::object()},
                                 {"m", Value::array()}});
  EXPECT_EQ(json::dump(v), R"({"z":[1,"a",null,true,false],"a":{},"m":[]})");
  EXPECT_EQ(round_trip(json::dump(v)), json::dump(v));
  // Copies are deep.
  Value copy = v;
  copy.find("z")->items()[0] = 2;
  EXPECT_EQ(json::dump(v.find("z")->items()[0]), "1");
  EXPECT_EQ(json::dump(copy.find("z")->items()[0]), "2");
}

}  // namespace
