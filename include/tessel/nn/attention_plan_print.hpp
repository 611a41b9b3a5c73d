// std::cout << plan for attention plans, one line: "attention plan: B 4, 12 heads, T 256,
// head_dim 64, f32; 4 query tiles of 64 rows, 4 key/value tiles of 64 rows; 65536 bytes a tile,
// backward scratch 49152 bytes (static)".
#pragma once

#include <ostream>

#include "attention_plan.hpp"

namespace tessel::nn {

inline std::ostream& operator<<(std::ostream& os, AttentionPlan const& p) {
  auto tiles = [&](index_t count, index_t rows, char const* what) -> std::ostream& {
    return os << count << " " << what << (count == 1 ? " tile" : " tiles") << " of " << rows
              << (rows == 1 ? " row" : " rows");
  };
  os << "attention plan: B " << p.batch << ", " << p.heads << (p.heads == 1 ? " head" : " heads")
     << ", T " << p.seq_len << ", head_dim " << p.head_dim << ", "
     << (p.element_bytes == 8 ? "f64" : "f32") << "; ";
  tiles(p.num_q_tiles, p.q_tile, "query") << ", ";
  tiles(p.num_kv_tiles, p.kv_tile, "key/value") << "; ";
  return os << p.tile_bytes << " bytes a tile, backward scratch " << p.scratch_bytes << " bytes";
}

template <index_t B, index_t H, index_t T, index_t D, index_t E, index_t Budget>
std::ostream& operator<<(std::ostream& os, StaticAttentionPlan<B, H, T, D, E, Budget> const& p) {
  return os << AttentionPlan(p) << " (static)";
}

}  // namespace tessel::nn
