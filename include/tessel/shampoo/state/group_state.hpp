// What a Shampoo optimizer keeps per batch group, in the memory of its executor (exec::Memory<X>,
// exec/memory.hpp): for each preconditioned mode the factor matrices in their stored dtype (bf16,
// f16, f32 or f64), (count, d, d) or with Options::use_symmetric_packing (count, d (d + 1) / 2)
// (state/symmetric_packing.hpp), and the inverse roots in T, (count, d, d); the filtered gradient,
// momentum and grafting accumulator, (count, block...) each when in use; and the step's scratch
// (gathered gradients, the direction and two preconditioning buffers). Also the host-side
// bookkeeping: the plan block of each slot, failed root computations in a row, this step's errors,
// the segments.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/float16.hpp"
#include "../../exec/memory.hpp"
#include "../plan/plan.hpp"
#include "../plan/segments.hpp"
#include "quantized.hpp"
#include "symmetric_packing.hpp"

namespace tessel::shampoo {

template <class T, class X>
struct GroupState {
  template <class U>
  using Buffer = typename exec::Memory<X>::template Buffer<U>;

  // One preconditioned mode: the factors as stored, and the inverse roots.
  struct Mode {
    index_t dim = 0;    // the block mode
    index_t d = 0;      // its extent
    double root = 2.0;  // 1 / exponent
    DType dtype = DType::f32;
    bool packed = false;        // factors hold upper triangles (state/symmetric_packing.hpp)
    Buffer<std::byte> factors;  // count * factor_numel() elements of dtype
    Buffer<T> inverse_roots;    // count * d * d (eigenvalue-corrected and eigendecomposed
                                // Shampoo: the eigenvectors, q(b, i, j) = Q_b[i][j])
    Buffer<T> eigenvalues;      // eigendecomposed Shampoo: count * d
    // Per slot: a bound on max|F| of the stored factor (inf: unknown), from the last accepted
    // step's overflow pre-check (step/bounds.hpp), and the one the check in progress found.
    std::vector<double> bound, pending;

    // Stored elements of one slot's factor.
    index_t factor_numel() const { return packed ? packed_size(d) : d * d; }

    // The factors as full (count, d, d) matrices of T, when that is how they are stored (no
    // conversion needed).
    T* factors_as_t() const {
      return dtype == dtype_of_v<T> && !packed ? reinterpret_cast<T*>(factors.data()) : nullptr;
    }
  };

  Extents shape;
  index_t count = 0;
  index_t numel = 0;
  std::vector<Mode> modes;
  Buffer<T> filtered, momentum, grafting;  // count * numel each, when in use
  Buffer<T> corrected;                     // eigenvalue-corrected Shampoo: V, count * numel
  // Options::keep_rotated_filtered_grad: the filtered gradient in the eigenbasis, count * numel,
  // and whether it is (to rounding) the filtered gradient rotated by the current eigenvectors.
  Buffer<T> rotated_filtered;
  bool rotated_filtered_valid = false;
  Buffer<T> kl;  // KL-Shampoo: per mode, the gradient preconditioned along the other modes
  Buffer<T> z;   // iterate averaging: the descent sequence z, count * numel
  Buffer<T> staged_momentum;  // a distributed step's momentum until it commits
  Buffer<T> grad, direction, search, spare;
  // Eigenvalue-corrected Shampoo: where this step's accumulate left the direction already rotated
  // into the eigenbasis (search or spare), or null.
  T* rotated = nullptr;
  Buffer<T> scale;                  // per slot: the grafting rescale
  Buffer<double> per_slot;          // per slot and mode: the bound inputs, then the norms
  Buffer<double> row_norms;         // per mode and slot: the overflow pre-check's r_i
  std::vector<index_t> blocks;      // plan block of each slot
  std::vector<index_t> failures;    // consecutive failed amortized computations, per slot
  std::vector<std::string> errors;  // this step's, per slot
  std::vector<SegmentPlan> segments;
};

}  // namespace tessel::shampoo
