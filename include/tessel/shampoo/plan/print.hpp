// std::cout << plan for Shampoo blocking plans: what the plan did to each parameter (its merged
// shape and how many blocks it was cut into) and each batch group (block shape, count, the
// preconditioner of each mode, the ranks that own its blocks), as two aligned tables. This is how
// a user sees, for instance, that target_parameter_dimensionality 1 turns a 16x8 weight into one
// 128-element block preconditioned by a 128x128 factor instead of 16x16 and 8x8.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/int_tuple.hpp"
#include "plan.hpp"

namespace tessel::shampoo {

namespace detail {

// Rows of cells written with each column as wide as its widest cell, two spaces between columns.
inline void write_table(std::ostream& os, std::vector<std::vector<std::string>> const& rows) {
  std::vector<std::size_t> width;
  for (auto const& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = row[c].size() > width[c] ? row[c].size() : width[c];
    }
  for (auto const& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 2, ' ');
    }
    os << '\n' << line;
  }
}

// "1 block", "4 blocks".
inline std::string count_text(std::size_t n, char const* noun) {
  std::string out = std::to_string(n);
  out += ' ';
  out += noun;
  if (n != 1) out += 's';
  return out;
}

inline std::string limit_text(index_t v) {
  return v == infinite ? std::string("infinite") : std::to_string(v);
}

}  // namespace detail

template <class P, class B, class G>
std::ostream& operator<<(std::ostream& os, BasicPlan<P, B, G> const& plan) {
  using tessel::detail::shape_text;
  os << "Shampoo plan: " << detail::count_text(plan.num_params(), "parameter") << ", "
     << detail::count_text(plan.num_blocks(), "block") << " in "
     << detail::count_text(plan.num_groups(), "batch group") << " (max_preconditioner_dim "
     << detail::limit_text(plan.max_preconditioner_dim) << ", target_parameter_dimensionality "
     << detail::limit_text(plan.target_parameter_dimensionality) << ", " << plan.group_size
     << (plan.group_size == 1 ? " rank, " : " ranks, ") << dtype_name(plan.dtype) << ")";
  std::vector<std::vector<std::string>> params{{"parameter", "shape", "merged", "blocks"}};
  for (std::size_t i = 0; i < plan.num_params(); ++i) {
    auto const& p = plan.params[i];
    params.push_back({std::to_string(i), shape_text(p.shape), shape_text(p.merged_shape),
                      std::to_string(p.num_blocks)});
  }
  detail::write_table(os, params);
  std::vector<std::vector<std::string>> groups{
      {"group", "block", "count", "preconditioners", "ranks"}};
  for (std::size_t g = 0; g < plan.num_groups(); ++g) {
    auto const& group = plan.groups[g];
    std::string factors;
    for (index_t e : group.shape) {
      if (!factors.empty()) factors += ' ';
      // Appended piece by piece: g++ 12 at -O3 reports a false -Wrestrict for "x" + std::string.
      factors += std::to_string(e);
      factors += 'x';
      factors += std::to_string(e);
    }
    std::vector<bool> owns(static_cast<std::size_t>(plan.group_size), false);
    for (auto const& b : plan.blocks)
      if (static_cast<std::size_t>(b.group) == g) owns[static_cast<std::size_t>(b.rank)] = true;
    std::string ranks;
    for (std::size_t r = 0; r < owns.size(); ++r)
      if (owns[r]) {
        if (!ranks.empty()) ranks += ',';
        ranks += std::to_string(r);
      }
    groups.push_back({std::to_string(g), shape_text(group.shape), std::to_string(group.count),
                      factors.empty() ? std::string("-") : factors, ranks});
  }
  detail::write_table(os, groups);
  return os;
}

}  // namespace tessel::shampoo
