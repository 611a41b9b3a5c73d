// The examples' training text (lm_demo, gpt): one file, or every *.md file of a directory
// concatenated in name order, as bytes, with every tenth KiB held out.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tessel/core/error.hpp>

namespace examples {

// The training text: one file, or every *.md file of a directory concatenated in name order.
struct Corpus {
  std::string text;
  std::vector<std::filesystem::path> files;
  // Every tenth block of 1 KiB is held out (the loss reported at the end is measured there), so
  // both parts sample every document. Positions are those of predicted bytes (>= the context the
  // model sees before each).
  std::vector<std::uint32_t> train_positions, held_out_positions;

  // @pre the corpus has at least 16 KiB, so that at least one batch is held out (tessel::Error
  // otherwise)
  static Corpus load(std::filesystem::path const& path, std::size_t context) {
    namespace fs = std::filesystem;
    using tessel::detail::sentence;
    Corpus c;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (auto const& entry : fs::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".md")
          c.files.push_back(entry.path());
      std::sort(c.files.begin(), c.files.end());
      if (c.files.empty())
        tessel::detail::throw_error(
            sentence("the corpus directory ", path.string(), " has no .md files."));
    } else if (fs::is_regular_file(path, ec)) {
      c.files.push_back(path);
    } else {
      tessel::detail::throw_error(
          sentence("the corpus ", path.string(), " is neither a file nor a directory."));
    }
    for (auto const& f : c.files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) tessel::detail::throw_error(sentence("cannot read ", f.string(), "."));
      c.text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    constexpr std::size_t min_bytes = 16 * 1024;
    if (c.text.size() < min_bytes || c.text.size() > UINT32_MAX)
      tessel::detail::throw_error(sentence("the corpus ", path.string(), " has ", c.text.size(),
                                           " bytes; the example needs at least ", min_bytes,
                                           " and at most ", UINT32_MAX, "."));
    constexpr std::size_t block = 1024;
    for (std::size_t p = context; p < c.text.size(); ++p)
      (p / block % 10 == 9 ? c.held_out_positions : c.train_positions)
          .push_back(static_cast<std::uint32_t>(p));
    return c;
  }

  std::uint8_t byte(std::size_t i) const { return static_cast<std::uint8_t>(text[i]); }

  // The entropy of the byte frequencies, in nats: the loss of the best model that ignores context.
  double unigram_entropy() const {
    std::vector<double> counts(256, 0.0);
    for (char ch : text) counts[static_cast<std::uint8_t>(ch)] += 1.0;
    double h = 0.0;
    double const n = static_cast<double>(text.size());
    for (double k : counts)
      if (k > 0) h -= k / n * std::log(k / n);
    return h;
  }

  // FNV-1a of the text: a checkpoint remembers which corpus it was trained on.
  std::uint64_t fingerprint() const {
    std::uint64_t h = 1469598103934665603ull;
    for (char ch : text) h = (h ^ static_cast<std::uint8_t>(ch)) * 1099511628211ull;
    return h;
  }
};

}  // namespace examples
