// io/json.hpp against nlohmann/json, which the library used before: on random documents and
// random corruptions of them, the same verdict, the same byte offset for a syntax error, the same
// repeated key and too-deep container (nlohmann with the callback the safetensors reader had), and
// for a valid document the same bytes from dump(). The differences are by design and excluded
// here: a NUL byte or a byte-order mark (nlohmann accepted them). Skipped when nlohmann/json is
// not installed (the library no longer needs it; the CLI does).
#include <gtest/gtest.h>

#if __has_include(<nlohmann/json.hpp>)

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tessel/io/json.hpp>

namespace {

using namespace tessel::detail;
using Nlohmann = nlohmann::ordered_json;
using Reason = json::ParseError::Reason;

// nlohmann's verdict in the terms of json::Parsed.
struct Verdict {
  bool valid = false;
  std::string dump;  // valid: nlohmann's dump()
  Reason reason = Reason::syntax;
  std::size_t offset = 0;  // syntax, truncated
  std::string key;         // repeated_key
  std::string entry;       // repeated_key: the key of the depth-1 container around it
};

struct Stop {};

Verdict nlohmann_verdict(std::string const& text, int max_nesting) {
  Verdict v;
  std::vector<std::set<std::string>> keys;
  std::string entry;
  Nlohmann::parser_callback_t const callback = [&](int depth, Nlohmann::parse_event_t event,
                                                   Nlohmann& parsed) {
    switch (event) {
      case Nlohmann::parse_event_t::object_start:
      case Nlohmann::parse_event_t::array_start:
        if (depth >= max_nesting) {
          v.reason = Reason::too_deep;
          throw Stop{};
        }
        if (event == Nlohmann::parse_event_t::object_start) keys.emplace_back();
        break;
      case Nlohmann::parse_event_t::object_end:
        keys.pop_back();
        break;
      case Nlohmann::parse_event_t::key: {
        auto const& key = parsed.get_ref<std::string const&>();
        if (!keys.back().insert(key).second) {
          v.reason = Reason::repeated_key;
          v.key = key;
          v.entry = depth == 1 ? "" : entry;
          throw Stop{};
        }
        if (depth == 1) entry = key;
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    v.dump = Nlohmann::parse(text, callback).dump();
    v.valid = true;
  } catch (Stop const&) {
  } catch (Nlohmann::parse_error const& e) {
    v.offset = e.byte - 1;
    v.reason = e.byte > text.size() ? Reason::truncated : Reason::syntax;
    if (v.reason == Reason::truncated) v.offset = text.size();
  } catch (Nlohmann::out_of_range const&) {
    v.reason = Reason::number_too_large;
  }
  return v;
}

// The same comparison for one text; returns a description of the difference, or "".
std::string compare(std::string const& text, int max_nesting) {
  Verdict const expected = nlohmann_verdict(text, max_nesting);
  json::Parsed const got = json::parse(text, static_cast<std::size_t>(max_nesting));
  if (expected.valid != got.value.has_value()) return "verdicts differ";
  if (expected.valid) return expected.dump == json::dump(*got.value) ? "" : "dumps differ";
  json::ParseError const& e = got.error;
  if (e.reason != expected.reason) return "reasons differ";
  if ((e.reason == Reason::syntax || e.reason == Reason::truncated) && e.offset != expected.offset)
    return "offsets differ: " + std::to_string(e.offset) + " vs " + std::to_string(expected.offset);
  if (e.reason == Reason::repeated_key) {
    std::string const entry = e.path.size() == 1 ? "" : e.path[1];
    if (e.key != expected.key || entry != expected.entry) return "repeated keys differ";
  }
  return "";
}

// Random JSON text with the shapes the library's files have and the corners of the grammar:
// escapes, surrogate pairs, raw UTF-8, control characters, every spelling of a number.
class Generator {
 public:
  explicit Generator(unsigned seed) : random_(seed) {}

  std::string document() {
    std::string out;
    value(out, 0);
    return space() + out + space();
  }

  // `text` with 1-3 random byte edits, never introducing a NUL or a leading 0xEF.
  std::string corrupt(std::string text) {
    static constexpr char alphabet[] = "{}[]:,\"\\ue0.-+1 \x01\x7f\xc3\xa9\xed\xa0\xf0\x9f\xff";
    int const edits = 1 + pick(3);
    for (int i = 0; i < edits; ++i) {
      std::size_t const at = text.empty() ? 0 : static_cast<std::size_t>(pick(int(text.size())));
      char const c = alphabet[pick(sizeof alphabet - 1)];
      switch (pick(3)) {
        case 0:
          if (!text.empty()) text.erase(at, 1);
          break;
        case 1:
          text.insert(at, 1, c);
          break;
        default:
          if (!text.empty()) text[at] = c;
      }
    }
    if (!text.empty() && static_cast<unsigned char>(text[0]) == 0xEF) text[0] = ' ';
    return text;
  }

 private:
  int pick(int n) { return static_cast<int>(random_() % static_cast<unsigned>(n)); }

  std::string space() {
    static constexpr char const* spaces[] = {"", "", "", " ", "\n", "\t ", "\r\n  "};
    return spaces[pick(7)];
  }

  void value(std::string& out, int depth) {
    int const kind = depth >= 4 ? pick(4) : pick(7);
    switch (kind) {
      case 0:
        out +=
            std::array<char const*, 3>{"null", "true", "false"}[static_cast<std::size_t>(pick(3))];
        return;
      case 1:
      case 2:
        number(out);
        return;
      case 3:
        string(out);
        return;
      case 4:
      case 5: {
        out += '[';
        int const n = pick(4);
        for (int i = 0; i < n; ++i) {
          if (i) out += ',';
          out += space();
          value(out, depth + 1);
          out += space();
        }
        out += ']';
        return;
      }
      default: {
        out += '{';
        int const n = pick(4);
        for (int i = 0; i < n; ++i) {
          if (i) out += ',';
          out += space();
          if (pick(4) == 0) {
            out += "\"k\"";  // sometimes repeated
          } else {
            string(out);
          }
          out += space() + ":" + space();
          value(out, depth + 1);
        }
        out += '}';
      }
    }
  }

  void number(std::string& out) {
    static constexpr char const* numbers[] = {"0",
                                              "-0",
                                              "7",
                                              "-7",
                                              "42",
                                              "1.5",
                                              "-0.25",
                                              "1e2",
                                              "1E+2",
                                              "2.5e-3",
                                              "100.0",
                                              "18446744073709551615",
                                              "18446744073709551616",
                                              "9223372036854775807",
                                              "-9223372036854775808",
                                              "-9223372036854775809",
                                              "1e308",
                                              "1.7976931348623157e308",
                                              "2e308",
                                              "1e-400",
                                              "5e-324",
                                              "123456789012345678",
                                              "0.1",
                                              "1e15",
                                              "1e14",
                                              "0.0001",
                                              "1e-5",
                                              "12345.678e-10",
                                              "3.14159265358979323846"};
    out += numbers[pick(sizeof numbers / sizeof numbers[0])];
  }

  void string(std::string& out) {
    static constexpr char const* pieces[] = {"a",
                                             "shape",
                                             "dtype",
                                             " ",
                                             "\\\"",
                                             "\\\\",
                                             "\\/",
                                             "\\b",
                                             "\\f",
                                             "\\n",
                                             "\\r",
                                             "\\t",
                                             "\\u0041",
                                             "\\u00e9",
                                             "\\u20AC",
                                             "\\ud83d\\ude00",
                                             "\\u0000",
                                             "\\u001f",
                                             "\xc3\xa9",
                                             "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80",
                                             "\x7f",
                                             "/",
                                             "__metadata__"};
    out += '"';
    int const n = pick(4);
    for (int i = 0; i < n; ++i) out += pieces[pick(sizeof pieces / sizeof pieces[0])];
    out += '"';
  }

  std::mt19937 random_;
};

TEST(JsonOracle, RandomDocumentsParseAndDumpAsNlohmannDid) {
  Generator g(5);
  for (int trial = 0; trial < 4000; ++trial) {
    std::string const text = g.document();
    for (int nesting : {3, 64}) EXPECT_EQ(compare(text, nesting), "") << nesting << ": " << text;
  }
}

TEST(JsonOracle, RandomCorruptionsFailAtTheSameByte) {
  Generator g(7);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string const text = g.corrupt(g.document());
    EXPECT_EQ(compare(text, 64), "") << text;
  }
}

TEST(JsonOracle, EveryPrefixFailsAtTheSameByte) {
  Generator g(9);
  for (int trial = 0; trial < 300; ++trial) {
    std::string const text = g.document();
    for (std::size_t n = 0; n <= text.size(); ++n)
      EXPECT_EQ(compare(text.substr(0, n), 64), "") << text.substr(0, n);
  }
}

// Doubles are the one place the writer differs: it writes the shortest digits that read back
// (std::to_chars), where nlohmann's Grisu2 sometimes wrote a digit more, or the other of two
// equally short forms. Only error messages show doubles; the library's files hold none. The
// layout (where the point goes, when an exponent is used, its digits) is nlohmann's.
TEST(JsonOracle, DoublesDumpInNlohmannsLayoutAndNeverLonger) {
  std::mt19937_64 random(13);
  auto layout = [](std::string s) {
    for (char& c : s) c = c >= '0' && c <= '9' ? '0' : c;
    return s;
  };
  for (int trial = 0; trial < 100000; ++trial) {
    std::uint64_t const bits = random();
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    if (trial % 2 == 0) d = static_cast<double>(static_cast<std::int64_t>(bits >> 20)) / 1024.0;
    if (!std::isfinite(d)) continue;
    std::string ours;
    json::write_double(ours, d);
    std::string const theirs = Nlohmann(d).dump();
    EXPECT_EQ(Nlohmann::parse(ours).get<double>(), d) << ours;
    EXPECT_LE(ours.size(), theirs.size()) << ours << " " << theirs;
    if (ours.size() == theirs.size()) {
      EXPECT_EQ(layout(ours), layout(theirs)) << ours << " " << theirs;
    }
  }
}

TEST(JsonOracle, StringsEscapeAndReplaceAsNlohmannDid) {
  std::mt19937 random(17);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s(static_cast<std::size_t>(random() % 8), '\0');
    for (char& c : s) c = static_cast<char>(random() % 4 == 0 ? random() % 0x20 : random() % 256);
    std::string replaced;
    json::write_string(replaced, s, json::InvalidUtf8::replace);
    EXPECT_EQ(replaced, Nlohmann(s).dump(-1, ' ', false, Nlohmann::error_handler_t::replace));
    bool valid = true;
    try {
      (void)Nlohmann(s).dump();
    } catch (Nlohmann::type_error const&) {
      valid = false;
    }
    EXPECT_EQ(json::is_valid_utf8(s), valid);
  }
}

}  // namespace

#else

TEST(JsonOracle, NeedsNlohmannJson) {
  GTEST_SKIP() << "nlohmann/json is not installed: the comparison with it is skipped.";
}

#endif
