// The scalar options of one FLCE call (tessel.linear_cross_entropy's keywords that are not
// arrays), as both bindings receive them: the host's (flce.hpp) and the CUDA tensors'
// (flce_cuda.hpp). Parsed once from the options dict tessel's Python side builds (module.cpp);
// tessel validates the values. Free of nanobind, so nvcc compiles it too.
#pragma once

#include <cstdint>

#include <tessel/flce/types.hpp>

namespace tessel_python {

struct FlceScalars {
  tessel::flce::Reduction reduction = tessel::flce::Reduction::mean;
  std::int64_t ignore_index = -100, shift_sequence_length = 0;
  double label_smoothing = 0.0, lse_square_scale = 0.0, softcap = 0.0, temperature = 1.0,
         entropy_bonus = 0.0, soft_target_weight = 1.0;
  std::int64_t chunk_size = 0;  // rows per chunk; 0: the plan's heuristic

  // Into flce::Options<T, Space>, on the host or the device alike.
  template <class Options>
  void apply_to(Options& o) const {
    o.reduction = reduction;
    o.ignore_index = ignore_index;
    o.shift_sequence_length = shift_sequence_length;
    o.label_smoothing = label_smoothing;
    o.lse_square_scale = lse_square_scale;
    o.softcap = softcap;
    o.temperature = temperature;
    o.entropy_bonus = entropy_bonus;
    o.soft_target_weight = soft_target_weight;
    o.chunk_size = chunk_size;
  }
};

}  // namespace tessel_python
