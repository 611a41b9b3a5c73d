// std::cout << tensor: a header line (dtype, layout) and the elements as nested rows, NumPy's way —
// one format for all elements so columns line up, and past 1000 elements only the first and last
// three of every mode with "..." between. Host tensors of any layout (views, strided, block views;
// hierarchical modes print by their size), read in logical row-major order. A device tensor prints
// its header only: its elements are not readable from the host.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/print.hpp"
#include "tensor.hpp"

namespace tessel {

// How tensors are summarized, as in numpy.set_printoptions.
struct TensorPrintOptions {
  index_t threshold = 1000;  // more elements than this: summarize
  index_t edge_items = 3;    // elements kept at each end of a summarized mode
};

namespace detail {

// One number format for a whole tensor (PyTorch's choice, simplified): integers as integers;
// floats with four decimals, or as "1." when every finite value is whole, or in scientific
// notation when the finite magnitudes span more than 1e3 or leave [1e-4, 1e8).
class ElementFormat {
 public:
  explicit ElementFormat(std::vector<double> const& values) {
    double largest = 0, smallest = 0;
    bool any = false;
    whole_ = true;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      double const a = std::fabs(v);
      whole_ = whole_ && v == std::trunc(v);
      if (a == 0) continue;
      largest = any ? std::fmax(largest, a) : a;
      smallest = any ? std::fmin(smallest, a) : a;
      any = true;
    }
    scientific_ = any && (largest / smallest > 1e3 || largest >= 1e8 || smallest < 1e-4);
    if (whole_ && largest < 1e8) scientific_ = false;
  }

  std::string floating(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buffer[64];
    if (scientific_)
      std::snprintf(buffer, sizeof buffer, "%.4e", v);
    else if (whole_)
      std::snprintf(buffer, sizeof buffer, "%.0f.", v);
    else
      std::snprintf(buffer, sizeof buffer, "%.4f", v);
    return buffer;
  }

 private:
  bool whole_ = true;
  bool scientific_ = false;
};

// An element as a double: exact for every floating type tessel stores (half and bfloat16 widen
// through float).
template <class V>
double as_double(V const& v) {
  if constexpr (std::is_same_v<V, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}

template <class V>
std::string element_text(V const& v, ElementFormat const& f) {
  if constexpr (std::is_same_v<V, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_integral_v<V>)
    return std::to_string(v);
  else
    return f.floating(as_double(v));
}

// The flat row-major indices printed along each mode: all of them, or the first and last
// edge_items with -1 marking the "..." between.
inline std::vector<index_t> printed_indices(index_t extent, bool summarize, index_t edge) {
  std::vector<index_t> out;
  if (!summarize || extent <= 2 * edge) {
    for (index_t i = 0; i < extent; ++i) out.push_back(i);
    return out;
  }
  for (index_t i = 0; i < edge; ++i) out.push_back(i);
  out.push_back(-1);
  for (index_t i = extent - edge; i < extent; ++i) out.push_back(i);
  return out;
}

struct TensorText {
  std::vector<index_t> extents;
  std::vector<std::vector<index_t>> shown;  // per mode, printed_indices
  std::vector<std::string> cells;           // the shown elements, row-major
  std::size_t width = 0;
};

inline void write_nested(std::ostream& os, TensorText const& t, std::size_t mode, std::size_t& cell,
                         std::size_t indent) {
  if (mode == t.extents.size()) {
    std::string const& s = t.cells[cell++];
    os << std::string(t.width - s.size(), ' ') << s;
    return;
  }
  os << '[';
  auto const& idx = t.shown[mode];
  bool const last_mode = mode + 1 == t.extents.size();
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (k > 0) {
      os << ',';
      if (last_mode) {
        os << ' ';
      } else {
        // One newline between rows, one more per mode above them (NumPy's blank lines).
        os << std::string(t.extents.size() - mode - 1, '\n') << std::string(indent + 1, ' ');
      }
    }
    if (idx[k] < 0) {  // the summarized middle: no cells were collected for it
      os << "...";
      continue;
    }
    write_nested(os, t, mode + 1, cell, indent + 1);
  }
  os << ']';
}

}  // namespace detail

// Writes t as text: "tensor f32 (2,3):(3,_1)" and its elements (see the file comment).
template <class E, class L>
void print_tensor(std::ostream& os, Tensor<E, L> const& t, TensorPrintOptions const& options = {}) {
  using V = typename Tensor<E, L>::value_type;
  os << "tensor";
  if constexpr (HasDType<V>) os << ' ' << dtype_name(dtype_of_v<V>);
  os << ' ' << to_string(t.layout());
  if constexpr (!std::is_same_v<typename Tensor<E, L>::space, HostSpace>) {
    os << " in device memory (copy it to the host to print its elements)";
    return;
  } else {
    detail::TensorText text;
    text.extents = to_vector(product_each(t.shape()));
    index_t numel = 1;
    for (index_t e : text.extents) numel *= e;
    bool const summarize = numel > options.threshold;
    for (index_t e : text.extents)
      text.shown.push_back(detail::printed_indices(e, summarize, options.edge_items));
    // The shown elements in row-major order of the shown coordinates.
    std::vector<index_t> flat;
    std::vector<std::size_t> at(text.extents.size(), 0);
    bool empty = numel == 0;
    while (!empty) {
      index_t f = 0;
      bool gap = false;
      for (std::size_t m = 0; m < text.extents.size(); ++m) {
        index_t const i = text.shown[m][at[m]];
        gap = gap || i < 0;
        f = f * text.extents[m] + (i < 0 ? 0 : i);
      }
      if (!gap) flat.push_back(f);
      std::size_t m = text.extents.size();
      while (m > 0) {
        --m;
        if (++at[m] < text.shown[m].size()) break;
        at[m] = 0;
        if (m == 0) empty = true;
      }
      if (text.extents.empty()) break;
    }
    std::vector<double> values;  // what the number format is chosen from
    if constexpr (!std::is_integral_v<V>)
      for (index_t f : flat) values.push_back(detail::as_double(t[f]));
    detail::ElementFormat const format(values);
    for (index_t f : flat) {
      text.cells.push_back(detail::element_text(t[f], format));
      text.width = std::max(text.width, text.cells.back().size());
    }
    os << '\n';
    if (numel == 0) {
      os << "[]";
      return;
    }
    std::size_t cell = 0;
    detail::write_nested(os, text, 0, cell, 0);
  }
}

template <class E, class L>
std::ostream& operator<<(std::ostream& os, Tensor<E, L> const& t) {
  print_tensor(os, t);
  return os;
}

}  // namespace tessel
