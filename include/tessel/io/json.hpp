// Strict JSON (RFC 8259) for the library's own files: the safetensors header, Shampoo state keys
// and the distributed checkpoint index. A value type, a parser and a compact writer, in place of
// nlohmann/json, whose header cost about 1.1 s of g++ -O2 in every translation unit including
// io.hpp or shampoo.hpp. The writer writes the bytes nlohmann's dump() wrote, so files stay
// byte-identical; the parser accepts what nlohmann accepted, classifies numbers as it did
// (uint64, int64, else double) and reports the same byte offsets, except that it refuses what a
// strict reader (and the Rust safetensors reader) refuses: a key repeated in an object, a
// byte-order mark, and a NUL byte outside a string (nlohmann took a NUL as the end of the text).
// Not a general JSON library: just what those files need.
#pragma once

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessel::detail::json {

enum class Kind : unsigned char { null, boolean, number, string, array, object };

// A JSON value. Objects keep their members in document (or insertion) order; numbers keep the
// type nlohmann gave them, which decides what reads as an integer ("2" does, "2.0" does not).
// 24 bytes, strings and containers on the heap: a hostile header of numbers ("[0,0,...") takes
// about 12 bytes per byte of text (nlohmann's values: 8), not the 60 of a value that held a string
// and two vectors; a safetensors header may be 100 MB.
class Value {
 public:
  using Array = std::vector<Value>;
  using Object = std::vector<std::pair<std::string, Value>>;

  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : kind_(Kind::boolean), boolean_(b) {}
  template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, char>) Value(I i)
      : kind_(Kind::number) {
    if constexpr (std::is_signed_v<I>) {
      number_ = Number::signed_integer;
      bits_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(i));
    } else {
      number_ = Number::unsigned_integer;
      bits_ = i;
    }
  }
  Value(double d)
      : kind_(Kind::number), number_(Number::floating), bits_(std::bit_cast<std::uint64_t>(d)) {}
  Value(std::string s) : kind_(Kind::string), payload_(std::make_unique<Payload>()) {
    payload_->string = std::move(s);
  }
  Value(std::string_view s) : Value(std::string(s)) {}
  Value(char const* s) : Value(std::string(s)) {}  // not bool, which a pointer converts to

  static Value array(Array items = {}) {
    Value v;
    v.kind_ = Kind::array;
    v.payload_ = std::make_unique<Payload>();
    v.payload_->items = std::move(items);
    return v;
  }
  static Value array(std::initializer_list<Value> items) { return array(Array(items)); }
  static Value object(Object members = {}) {
    Value v;
    v.kind_ = Kind::object;
    v.payload_ = std::make_unique<Payload>();
    v.payload_->members = std::move(members);
    return v;
  }

  Value(Value const& other)
      : kind_(other.kind_),
        number_(other.number_),
        boolean_(other.boolean_),
        bits_(other.bits_),
        payload_(other.payload_ ? std::make_unique<Payload>(*other.payload_) : nullptr) {}
  Value(Value&&) noexcept = default;
  Value& operator=(Value const& other) {
    if (this != &other) *this = Value(other);
    return *this;
  }
  Value& operator=(Value&&) noexcept = default;
  ~Value() = default;

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_boolean() const { return kind_ == Kind::boolean; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  // The kind as error sentences name it ("a JSON number"), the words nlohmann's type_name() used.
  char const* type_name() const {
    switch (kind_) {
      case Kind::null:
        return "null";
      case Kind::boolean:
        return "boolean";
      case Kind::number:
        return "number";
      case Kind::string:
        return "string";
      case Kind::array:
        return "array";
      case Kind::object:
        return "object";
    }
    return "null";  // unreachable: kind_ is always one of the above
  }

  // @pre the kind the name says (the const ones give an empty string, array or object otherwise)
  bool boolean() const { return boolean_; }
  std::string const& string() const { return payload_ ? payload_->string : empty().string; }
  Array const& items() const { return payload_ ? payload_->items : empty().items; }
  Array& items() { return payload_->items; }
  Object const& members() const { return payload_ ? payload_->members : empty().members; }
  Object& members() { return payload_->members; }

  // The member named `key` (the first, for an object built with repeats); nullptr when there is
  // none or this is not an object.
  Value const* find(std::string_view key) const {
    for (auto const& [k, v] : members()) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  Value* find(std::string_view key) {
    return const_cast<Value*>(static_cast<Value const&>(*this).find(key));
  }

  // The value of an integer number (written without fraction or exponent) that fits the type;
  // nullopt for anything else.
  std::optional<std::uint64_t> to_uint64() const {
    if (kind_ != Kind::number || number_ == Number::floating) return std::nullopt;
    if (number_ == Number::signed_integer && signed_bits() < 0) return std::nullopt;
    return bits_;
  }
  std::optional<std::int64_t> to_int64() const {
    if (kind_ != Kind::number || number_ == Number::floating) return std::nullopt;
    if (number_ == Number::unsigned_integer && signed_bits() < 0) return std::nullopt;
    return signed_bits();
  }
  // Any number as a double (what a floating-point number holds, an integer converted).
  double to_double() const {
    switch (number_) {
      case Number::unsigned_integer:
        return static_cast<double>(bits_);
      case Number::signed_integer:
        return static_cast<double>(signed_bits());
      case Number::floating:
        return std::bit_cast<double>(bits_);
    }
    return 0;  // unreachable
  }
  bool is_floating() const { return kind_ == Kind::number && number_ == Number::floating; }

 private:
  enum class Number : unsigned char { unsigned_integer, signed_integer, floating };

  struct Payload {
    std::string string;
    Array items;
    Object members;
  };
  std::int64_t signed_bits() const { return static_cast<std::int64_t>(bits_); }
  static Payload const& empty() {
    static Payload const none;
    return none;
  }

  Kind kind_ = Kind::null;
  Number number_ = Number::unsigned_integer;
  bool boolean_ = false;
  std::uint64_t bits_ = 0;  // the number, as number_ says: a uint64, an int64 or a double's bits
  std::unique_ptr<Payload> payload_;  // string, array, object
};

// ---- UTF-8 ----

// Where a UTF-8 sequence starting at s[i] ends: its length and whether it is well-formed
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). An ill-formed one is as
// long as its maximal well-formed prefix (at least one byte), so that the byte that broke it starts
// the next sequence; this is how nlohmann's writer replaced bytes, one U+FFFD per such prefix.
struct Utf8Sequence {
  std::size_t length;
  bool valid;
};

inline Utf8Sequence utf8_sequence(std::string_view s, std::size_t i) {
  auto const lead = static_cast<unsigned char>(s[i]);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead < 0x80) return {1, true};
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong below
    if (lead == 0xED) high = 0x9F;  // surrogates above
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong below
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return {1, false};
  }
  for (std::size_t k = 1; k < length; ++k) {
    if (i + k == s.size()) return {k, false};
    auto const c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return {k, false};
  }
  return {length, true};
}

inline bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    Utf8Sequence const seq = utf8_sequence(s, i);
    if (!seq.valid) return false;
    i += seq.length;
  }
  return true;
}

// ---- writing ----

// What the writer does with bytes that are not UTF-8: keep them (the text is then not JSON;
// callers that need JSON check is_valid_utf8 first and say which string is wrong), or write
// U+FFFD in their place (for error messages), as nlohmann's error_handler_t::replace did.
enum class InvalidUtf8 { keep, replace };

// `s` as a JSON string, escaped as nlohmann's dump() escaped it: \" \\ \b \f \n \r \t, other
// control characters as \u00xx (lowercase hex), everything else (DEL, '/', non-ASCII) as is.
inline void write_string(std::string& out, std::string_view s,
                         InvalidUtf8 invalid = InvalidUtf8::keep) {
  constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    auto const c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      Utf8Sequence const seq = utf8_sequence(s, i);
      if (seq.valid || invalid == InvalidUtf8::keep) {
        out.append(s.substr(i, seq.length));
      } else {
        out += "\xEF\xBF\xBD";
      }
      i += seq.length;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

// A double in nlohmann's layout: "123.0" or "0.001" when the decimal point is within 15 digits
// (-4 < exponent + 1 <= 15), else "1.5e+300" with at least two exponent digits; "null" when not
// finite (JSON has no infinity). The digits are the shortest that read back to it (to_chars);
// nlohmann's Grisu2 sometimes wrote a digit more, or the other of two equally short forms. Only
// error messages show doubles: the library's files hold none.
inline void write_double(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  if (x == 0) {
    out += std::signbit(x) ? "-0.0" : "0.0";
    return;
  }
  char buffer[32];
  auto const result =
      std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::scientific);
  std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));  // [-]d[.ddd]e±x
  if (text.front() == '-') {
    out += '-';
    text.remove_prefix(1);
  }
  std::size_t const e = text.find('e');
  std::string digits(1, text[0]);
  if (e > 1) digits.append(text.substr(2, e - 2));
  int exponent = 0;
  std::from_chars(text.data() + e + 2, text.data() + text.size(), exponent);
  if (text[e + 1] == '-') exponent = -exponent;
  auto const k = static_cast<int>(digits.size());
  int const n = exponent + 1;  // the decimal point's place after the first digit
  if (k <= n && n <= 15) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
    out += ".0";
  } else if (0 < n && n <= 15) {
    out.append(digits, 0, static_cast<std::size_t>(n));
    out += '.';
    out.append(digits, static_cast<std::size_t>(n));
  } else if (-4 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += exponent < 0 ? "e-" : "e+";
    if (std::abs(exponent) < 10) out += '0';
    out += std::to_string(std::abs(exponent));
  }
}

// Compact JSON (no spaces), members in their order: the bytes of nlohmann's dump().
inline void write(std::string& out, Value const& v, InvalidUtf8 invalid = InvalidUtf8::keep) {
  switch (v.kind()) {
    case Kind::null:
      out += "null";
      return;
    case Kind::boolean:
      out += v.boolean() ? "true" : "false";
      return;
    case Kind::number:
      if (v.is_floating()) {
        write_double(out, v.to_double());
      } else if (auto const u = v.to_uint64()) {
        out += std::to_string(*u);
      } else {
        out += std::to_string(*v.to_int64());
      }
      return;
    case Kind::string:
      write_string(out, v.string(), invalid);
      return;
    case Kind::array:
      out += '[';
      for (std::size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ',';
        write(out, v.items()[i], invalid);
      }
      out += ']';
      return;
    case Kind::object:
      out += '{';
      for (std::size_t i = 0; i < v.members().size(); ++i) {
        if (i > 0) out += ',';
        write_string(out, v.members()[i].first, invalid);
        out += ':';
        write(out, v.members()[i].second, invalid);
      }
      out += '}';
      return;
  }
}

inline std::string dump(Value const& v, InvalidUtf8 invalid = InvalidUtf8::keep) {
  std::string out;
  write(out, v, invalid);
  return out;
}

// ---- parsing ----

// Why a text is not a JSON document, and where.
struct ParseError {
  enum class Reason {
    syntax,            // a byte that cannot be there
    truncated,         // the text ends in the middle of a value
    number_too_large,  // a number beyond the range of double
    too_deep,          // a container inside max_nesting others
    repeated_key,      // an object with the key `key` twice
  };
  Reason reason = Reason::syntax;
  // The byte at fault: the last byte of a token that cannot come where it is, the byte that makes
  // a token invalid, the '[' or '{' too deep, the closing quote of a repeated key. text.size() when
  // truncated. It is nlohmann's parse_error::byte minus one.
  std::size_t offset = 0;
  std::string key;  // repeated_key: the key
  // repeated_key: for each container around the key, outermost first, the key it has in the
  // object holding it ("" for the document itself and for array elements).
  std::vector<std::string> path;
};

struct Parsed {
  std::optional<Value> value;  // the document, when the text is one
  ParseError error;            // otherwise, the first reason it is not
};

namespace parsing {

// One pass over the text with an explicit stack (no recursion, so nesting costs no call stack),
// in the order nlohmann's parser went: errors are found at the same bytes, and a repeated key or
// a too-deep container is reported where it occurs, before anything after it is read.
class Parser {
 public:
  Parser(std::string_view text, std::size_t max_nesting) : text_(text), max_nesting_(max_nesting) {}

  Parsed run() {
    if (!scan()) return failed();
    while (true) {
      // token_ starts a value.
      Value value;
      switch (token_) {
        case Token::begin_object:
        case Token::begin_array: {
          if (stack_.size() >= max_nesting_) return failed(ParseError::Reason::too_deep, last_);
          bool const object = token_ == Token::begin_object;
          stack_.push_back({object ? Value::object() : Value::array(), object, {}, {}});
          if (!scan()) return failed();
          if (token_ == (object ? Token::end_object : Token::end_array)) {
            value = std::move(stack_.back().value);
            stack_.pop_back();
            break;
          }
          if (object && !member_key()) return failed();
          continue;
        }
        case Token::string:
          value = Value(std::move(string_));
          break;
        case Token::number:
          if (!number(value)) return failed();
          break;
        case Token::true_literal:
          value = Value(true);
          break;
        case Token::false_literal:
          value = Value(false);
          break;
        case Token::null_literal:
          break;  // value is null
        case Token::end_object:
        case Token::end_array:
        case Token::colon:
        case Token::comma:
        case Token::end:
          return unexpected();
      }
      // A complete value: into its container, closing every container it completes.
      while (true) {
        if (stack_.empty()) {
          if (!scan()) return failed();
          if (token_ != Token::end) return unexpected();
          return Parsed{std::move(value), {}};
        }
        Frame& top = stack_.back();
        if (top.object) {
          top.value.members().emplace_back(std::move(top.key), std::move(value));
        } else {
          top.value.items().push_back(std::move(value));
        }
        if (!scan()) return failed();
        if (token_ == Token::comma) {
          if (!scan() || (top.object && !member_key())) return failed();
          break;
        }
        if (token_ != (top.object ? Token::end_object : Token::end_array)) return unexpected();
        value = std::move(top.value);
        stack_.pop_back();
      }
    }
  }

 private:
  enum class Token {
    begin_object,
    end_object,
    begin_array,
    end_array,
    colon,
    comma,
    string,
    number,
    true_literal,
    false_literal,
    null_literal,
    end,
  };

  struct Frame {
    Value value;  // the array or object being read
    bool object;
    std::string key;             // object: the key of the member being read
    std::set<std::string> keys;  // object: the keys read so far
  };

  // ---- errors ----

  bool fail(ParseError::Reason reason, std::size_t offset) {
    if (reason == ParseError::Reason::syntax && offset >= text_.size()) {
      reason = ParseError::Reason::truncated;
      offset = text_.size();
    }
    error_.reason = reason;
    error_.offset = offset;
    return false;
  }
  bool fail_at(std::size_t offset) { return fail(ParseError::Reason::syntax, offset); }
  Parsed failed() { return Parsed{std::nullopt, std::move(error_)}; }
  Parsed failed(ParseError::Reason reason, std::size_t offset) {
    fail(reason, offset);
    return failed();
  }
  // A valid token where it cannot be: at its last byte.
  Parsed unexpected() { return failed(ParseError::Reason::syntax, last_); }

  // ---- the parts of an object ----

  // token_ should be a key; checks it is new, reads the colon, and scans the token after it.
  bool member_key() {
    if (token_ != Token::string) return fail_at(last_);
    Frame& top = stack_.back();
    if (!top.keys.insert(string_).second) {
      error_.key = std::move(string_);
      for (std::size_t i = 0; i < stack_.size(); ++i)
        error_.path.push_back(i > 0 && stack_[i - 1].object ? stack_[i - 1].key : std::string());
      return fail(ParseError::Reason::repeated_key, last_);
    }
    top.key = std::move(string_);
    if (!scan()) return false;
    if (token_ != Token::colon) return fail_at(last_);
    return scan();
  }

  // The number token as nlohmann typed it: uint64 when it has no sign, fraction or exponent and
  // fits, int64 likewise with a minus sign, else double. A double beyond the range is refused;
  // one too small for any double is zero (as strtod, which nlohmann used, gives).
  bool number(Value& value) {
    char const* first = number_.data();
    char const* last = first + number_.size();
    if (number_integer_) {
      if (number_.front() == '-') {
        std::int64_t i = 0;
        if (std::from_chars(first, last, i).ec == std::errc{}) {
          value = Value(i);
          return true;
        }
      } else {
        std::uint64_t u = 0;
        if (std::from_chars(first, last, u).ec == std::errc{}) {
          value = Value(u);
          return true;
        }
      }
    }
    double d = 0;
    if (std::from_chars(first, last, d).ec == std::errc::result_out_of_range) {
      if (magnitude_at_least_one()) return fail(ParseError::Reason::number_too_large, last_);
      d = number_.front() == '-' ? -0.0 : 0.0;
    }
    value = Value(d);
    return true;
  }

  // Whether the number token is >= 1 in magnitude: its first nonzero digit is before the point
  // once the exponent has moved it. Only asked of numbers out of double's range, which are not 0.
  bool magnitude_at_least_one() const {
    std::string_view s = number_;
    if (s.front() == '-') s.remove_prefix(1);
    std::size_t const e = s.find_first_of("eE");
    std::string_view const mantissa = s.substr(0, e);
    std::size_t const point = std::min(mantissa.find('.'), mantissa.size());
    std::size_t const first = mantissa.find_first_not_of("0.");
    if (first == std::string_view::npos) return false;
    // The first nonzero digit stands for 10^place.
    long long place = first < point ? static_cast<long long>(point - first - 1)
                                    : -static_cast<long long>(first - point);
    if (e != std::string_view::npos) {
      std::string_view exponent = s.substr(e + 1);
      bool const negative = exponent.front() == '-';
      if (exponent.front() == '-' || exponent.front() == '+') exponent.remove_prefix(1);
      long long x = 0;  // saturates: only its sign next to `place` matters
      for (char c : exponent) x = std::min(x * 10 + (c - '0'), 1'000'000'000'000LL);
      place += negative ? -x : x;
    }
    return place >= 0;
  }

  // ---- tokens ----

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  // Scans the next token into token_ (and string_ or number_), last_ its last byte; false with
  // error_ set at the byte that makes it invalid.
  bool scan() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
    if (pos_ == text_.size()) {
      token_ = Token::end;
      last_ = text_.size();
      return true;
    }
    switch (text_[pos_]) {
      case '{':
        return single(Token::begin_object);
      case '}':
        return single(Token::end_object);
      case '[':
        return single(Token::begin_array);
      case ']':
        return single(Token::end_array);
      case ':':
        return single(Token::colon);
      case ',':
        return single(Token::comma);
      case 't':
        return literal("true", Token::true_literal);
      case 'f':
        return literal("false", Token::false_literal);
      case 'n':
        return literal("null", Token::null_literal);
      case '"':
        return scan_string();
      case '-':
      case '0':
      case '1':
      case '2':
      case '3':
      case '4':
      case '5':
      case '6':
      case '7':
      case '8':
      case '9':
        return scan_number();
      default:
        return fail_at(pos_);  // including a NUL byte and a byte-order mark
    }
  }

  bool single(Token t) {
    token_ = t;
    last_ = pos_++;
    return true;
  }

  bool literal(std::string_view word, Token t) {
    for (char c : word) {
      if (pos_ == text_.size() || text_[pos_] != c) return fail_at(pos_);
      ++pos_;
    }
    token_ = t;
    last_ = pos_ - 1;
    return true;
  }

  bool scan_number() {
    std::size_t const start = pos_;
    auto digit_here = [&] { return pos_ < text_.size() && is_digit(text_[pos_]); };
    auto digits = [&] {
      if (!digit_here()) return fail_at(pos_);
      while (digit_here()) ++pos_;
      return true;
    };
    number_integer_ = true;
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;  // a leading zero is the whole integer part: "01" is two tokens
    } else if (!digits()) {
      return false;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      number_integer_ = false;
      ++pos_;
      if (!digits()) return false;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      number_integer_ = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digits()) return false;
    }
    number_ = text_.substr(start, pos_ - start);
    token_ = Token::number;
    last_ = pos_ - 1;
    return true;
  }

  bool scan_string() {
    string_.clear();
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ == text_.size()) return fail_at(pos_);
      auto const c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') break;
      if (c == '\\') {
        ++pos_;
        if (!escape()) return false;
      } else if (c < 0x20) {
        return fail_at(pos_);  // control characters must be escaped
      } else if (c < 0x80) {
        string_ += static_cast<char>(c);
        ++pos_;
      } else {
        Utf8Sequence const seq = utf8_sequence(text_, pos_);
        // At the lead byte when no sequence starts with it, else at the byte that broke it.
        if (!seq.valid) return fail_at(is_lead(c) ? pos_ + seq.length : pos_);
        string_.append(text_.substr(pos_, seq.length));
        pos_ += seq.length;
      }
    }
    token_ = Token::string;
    last_ = pos_++;
    return true;
  }

  // Whether a multi-byte UTF-8 sequence can start with `c`.
  static bool is_lead(unsigned char c) { return c >= 0xC2 && c <= 0xF4; }

  // After a backslash.
  bool escape() {
    if (pos_ == text_.size()) return fail_at(pos_);
    char const c = text_[pos_++];
    switch (c) {
      case '"':
      case '\\':
      case '/':
        string_ += c;
        return true;
      case 'b':
        string_ += '\b';
        return true;
      case 'f':
        string_ += '\f';
        return true;
      case 'n':
        string_ += '\n';
        return true;
      case 'r':
        string_ += '\r';
        return true;
      case 't':
        string_ += '\t';
        return true;
      case 'u':
        break;
      default:
        return fail_at(pos_ - 1);
    }
    std::uint32_t code = 0;
    if (!hex4(code)) return false;
    if (code >= 0xDC00 && code <= 0xDFFF) return fail_at(pos_ - 1);  // a low surrogate alone
    if (code >= 0xD800 && code <= 0xDBFF) {
      // A high surrogate: the low one must follow, as \uDC00..\uDFFF.
      for (char expected : {'\\', 'u'}) {
        if (pos_ == text_.size() || text_[pos_] != expected) return fail_at(pos_);
        ++pos_;
      }
      std::uint32_t low = 0;
      if (!hex4(low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) return fail_at(pos_ - 1);
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(code);
    return true;
  }

  bool hex4(std::uint32_t& code) {
    for (int i = 0; i < 4; ++i) {
      if (pos_ == text_.size()) return fail_at(pos_);
      char const c = text_[pos_];
      std::uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return fail_at(pos_);
      }
      code = code * 16 + digit;
      ++pos_;
    }
    return true;
  }

  void append_utf8(std::uint32_t code) {
    auto put = [&](std::uint32_t byte) { string_ += static_cast<char>(byte); };
    if (code < 0x80) {
      put(code);
    } else if (code < 0x800) {
      put(0xC0 | (code >> 6));
      put(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      put(0xE0 | (code >> 12));
      put(0x80 | ((code >> 6) & 0x3F));
      put(0x80 | (code & 0x3F));
    } else {
      put(0xF0 | (code >> 18));
      put(0x80 | ((code >> 12) & 0x3F));
      put(0x80 | ((code >> 6) & 0x3F));
      put(0x80 | (code & 0x3F));
    }
  }

  std::string_view text_;
  std::size_t max_nesting_;
  std::size_t pos_ = 0;  // the next byte to read
  Token token_ = Token::end;
  std::size_t last_ = 0;        // the last byte of token_ (text_.size() for Token::end)
  std::string string_;          // Token::string: the decoded string
  std::string_view number_;     // Token::number: its text
  bool number_integer_ = true;  // Token::number: no fraction or exponent
  std::vector<Frame> stack_;    // the open containers, outermost first
  ParseError error_;
};

}  // namespace parsing

// Parses `text`, one complete JSON document (whitespace around it allowed). A container inside
// `max_nesting` others is refused: 3 allows {"a": {"b": [1]}} and not {"a": {"b": [[1]]}}.
inline Parsed parse(std::string_view text, std::size_t max_nesting) {
  return parsing::Parser(text, max_nesting).run();
}

}  // namespace tessel::detail::json
