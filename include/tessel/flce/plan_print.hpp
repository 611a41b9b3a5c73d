// std::cout << plan for FLCE plans: the extents and how the batch is chunked, one line.
// "FLCE plan: BT 16384, H 4096, V 128256; 32 chunks of 512 rows (static)".
#pragma once

#include <ostream>

#include "plan.hpp"

namespace tessel::flce {

inline std::ostream& operator<<(std::ostream& os, FlcePlan const& p) {
  return os << "FLCE plan: BT " << p.bt << ", H " << p.hidden << ", V " << p.vocab << "; "
            << p.num_chunks << (p.num_chunks == 1 ? " chunk" : " chunks") << " of " << p.chunk_size
            << (p.chunk_size == 1 ? " row" : " rows");
}

template <index_t BT, index_t H, index_t V, index_t Chunk>
std::ostream& operator<<(std::ostream& os, StaticFlcePlan<BT, H, V, Chunk> const& p) {
  return os << FlcePlan(p) << " (static)";
}

}  // namespace tessel::flce
