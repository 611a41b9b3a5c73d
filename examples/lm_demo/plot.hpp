// lm_demo's loss curve as CSV and as a small self-contained SVG plot: the per-step loss (light),
// its moving average (dark) and the unigram entropy of the corpus (dashed), which the loss has to
// fall below.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <tessel/core/error.hpp>

namespace lm {

inline std::ofstream open_for_writing(std::filesystem::path const& path) {
  std::ofstream out(path);
  if (!out)
    tessel::detail::throw_error(tessel::detail::sentence("cannot write ", path.string(), "."));
  return out;
}

// step,loss with steps from 1; the loss in nats, printed so it reads back bit for bit.
inline void write_loss_csv(std::filesystem::path const& path, std::vector<float> const& losses) {
  auto out = open_for_writing(path);
  out << "step,loss\n";
  char buf[64];
  for (std::size_t i = 0; i < losses.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%zu,%.9g\n", i + 1, static_cast<double>(losses[i]));
    out << buf;
  }
}

inline void write_loss_svg(std::filesystem::path const& path, std::vector<float> const& losses,
                           double entropy) {
  double const width = 640, height = 360, left = 56, right = 16, top = 28, bottom = 44;
  double const steps = static_cast<double>(std::max<std::size_t>(losses.size(), 2));
  double y_max = entropy * 1.1;
  for (float l : losses) y_max = std::max(y_max, static_cast<double>(l));
  y_max = std::ceil(y_max);
  auto x_of = [&](double step) { return left + (step - 1) / (steps - 1) * (width - left - right); };
  auto y_of = [&](double loss) { return top + (1 - loss / y_max) * (height - top - bottom); };
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return std::string(buf);
  };
  auto polyline = [&](std::vector<double> const& ys, char const* style) {
    std::string points;
    for (std::size_t i = 0; i < ys.size(); ++i)
      points += num(x_of(static_cast<double>(i + 1))) + "," + num(y_of(ys[i])) + " ";
    return "<polyline fill=\"none\" " + std::string(style) + " points=\"" + points + "\"/>\n";
  };
  std::vector<double> raw(losses.begin(), losses.end()), smooth(losses.size());
  double acc = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    acc += raw[i] - (i >= 20 ? raw[i - 20] : 0.0);
    smooth[i] = acc / static_cast<double>(std::min<std::size_t>(i + 1, 20));
  }

  char entropy_text[32];
  std::snprintf(entropy_text, sizeof entropy_text, "%.3f", entropy);

  auto out = open_for_writing(path);
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"18\" font-size=\"14\">lm_demo: training loss (nats) per "
      << "step, FLCE head + Shampoo</text>\n";
  // Axes with five ticks each.
  out << "<g stroke=\"#444\">\n<line x1=\"" << left << "\" y1=\"" << y_of(0) << "\" x2=\""
      << width - right << "\" y2=\"" << y_of(0) << "\"/>\n<line x1=\"" << left << "\" y1=\"" << top
      << "\" x2=\"" << left << "\" y2=\"" << y_of(0) << "\"/>\n</g>\n";
  for (int i = 0; i <= 4; ++i) {
    double const loss = y_max * i / 4, step = 1 + (steps - 1) * i / 4;
    out << "<text x=\"" << left - 6 << "\" y=\"" << num(y_of(loss) + 4) << "\" text-anchor=\"end\">"
        << num(loss) << "</text>\n"
        << "<text x=\"" << num(x_of(step)) << "\" y=\"" << y_of(0) + 16
        << "\" text-anchor=\"middle\">" << static_cast<long>(std::lround(step)) << "</text>\n";
  }
  out << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 8
      << "\" text-anchor=\"middle\">step</text>\n";
  out << "<line x1=\"" << left << "\" y1=\"" << num(y_of(entropy)) << "\" x2=\"" << width - right
      << "\" y2=\"" << num(y_of(entropy)) << "\" stroke=\"#c33\" stroke-dasharray=\"6 4\"/>\n"
      << "<text x=\"" << width - right - 4 << "\" y=\"" << num(y_of(entropy) - 6)
      << "\" text-anchor=\"end\" fill=\"#c33\">unigram entropy " << entropy_text
      << " nats</text>\n";
  out << polyline(raw, "stroke=\"#9bc\" stroke-width=\"1\"")
      << polyline(smooth, "stroke=\"#036\" stroke-width=\"2\"") << "</svg>\n";
}

}  // namespace lm
