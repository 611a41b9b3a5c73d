// The Kronecker factors a batch group's blocks keep, one per preconditioned mode, shared by every
// family that accumulates them (inverse-root and eigendecomposed Shampoo, eigenvalue-corrected
// Shampoo / SOAP, their KL variants): F_k <- beta2 F_k + w X x_k X, where X is the block's gradient
// (or what the family accumulates instead: KL-Shampoo's preconditioned gradient), stored in
// Options::factor_matrix_dtype (bf16, f16, f32 or f64), (count, d, d) or as upper triangles with
// Options::use_symmetric_packing (state/symmetric_packing.hpp). Beside each factor a mode keeps
// the family's d x d matrices (inverse roots, or eigenvectors: `matrices`) and, for the families
// that keep them, d eigenvalues per slot.
//
// A step opens the factors (converted to T for the step when stored otherwise), accumulates them,
// hands them to the family's amortized work, and stores them back. The overflow pre-check
// (step/bounds.hpp) reads their row norms and bounds before anything is written.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../exec/memory.hpp"
#include "../../expr/cast.hpp"
#include "../state/quantized.hpp"
#include "../state/state_dict.hpp"
#include "../state/symmetric_packing.hpp"
#include "../step/bounds.hpp"
#include "../step/context.hpp"
#include "../step/factors.hpp"
#include "../step/scalars.hpp"

namespace tessel::shampoo {

template <class T, class X>
struct KroneckerFactors {
  using Ctx = StepContext<T, X>;
  using B = exec::Memory<X>;
  template <class U>
  using Buffer = typename B::template Buffer<U>;
  using Scratch = typename Ctx::Scratch;
  using Group = GroupState<T, X>;

  // One preconditioned mode: the factors as stored, the family's matrices and eigenvalues.
  struct Mode {
    index_t dim = 0;    // the block mode
    index_t d = 0;      // its extent
    double root = 2.0;  // 1 / exponent
    DType dtype = DType::f32;
    bool packed = false;        // factors hold upper triangles (state/symmetric_packing.hpp)
    Buffer<std::byte> factors;  // count * factor_numel() elements of dtype
    Buffer<T> matrices;     // count * d * d: inverse roots, or eigenvectors q(b, i, j) = Q_b[i][j]
    Buffer<T> eigenvalues;  // count * d, when the family keeps them
    // Per slot: a bound on max|F| of the stored factor (inf: unknown), from the last accepted
    // step's overflow pre-check (step/bounds.hpp), and the one the check in progress found.
    std::vector<double> bound, pending;

    // Stored elements of one slot's factor.
    index_t factor_numel() const { return packed ? packed_size(d) : d * d; }
    // The factors as full (count, d, d) matrices of T, when that is how they are stored.
    T* factors_as_t() const {
      return dtype == dtype_of_v<T> && !packed ? reinterpret_cast<T*>(factors.data()) : nullptr;
    }
  };

  std::vector<Mode> modes;

  // A factor for mode k of g's blocks (extent d), zero, with the identity as its matrices and,
  // when asked, ones as its eigenvalues (the identity's decomposition).
  void add_mode(Ctx const& c, Group const& g, index_t k, double root, bool with_eigenvalues) {
    Mode m;
    m.dim = k;
    m.d = g.shape[k];
    m.root = root;
    m.dtype = c.options.factor_matrix_dtype;
    m.packed = c.options.use_symmetric_packing;
    index_t const nn = g.count * m.d * m.d;
    m.factors = B::template allocate<std::byte>(g.count * m.factor_numel() *
                                                static_cast<index_t>(dtype_size(m.dtype)));
    m.matrices = B::template allocate<T>(nn);
    std::vector<T> identities(static_cast<std::size_t>(nn), T(0));
    for (index_t i = 0; i < g.count * m.d; ++i)
      identities[static_cast<std::size_t>(i * m.d + i % m.d)] = T(1);  // slot i / d, row i % d
    B::from_host(c.executor, identities.data(), nn, m.matrices.data());
    if (with_eigenvalues) {
      m.eigenvalues = B::template allocate<T>(g.count * m.d);
      assign(Ctx::flat(m.eigenvalues.data(), g.count * m.d), T(1), c.executor);
    }
    B::wait(c.executor);                                     // identities is about to go
    m.bound.assign(static_cast<std::size_t>(g.count), 0.0);  // zero factors
    modes.push_back(std::move(m));
  }

  // Sum of the extents of the modes: the pre-check's row norms per slot.
  index_t total_extent() const {
    index_t n = 0;
    for (auto const& m : modes) n += m.d;
    return n;
  }

  // ---- the step ----

  // The factors opened for a step, as T: each mode's (count, d, d) matrices (the storage itself
  // when it holds them so, else a converted copy that `converted` keeps).
  struct Open {
    std::vector<Scratch> converted;
    std::vector<T*> values;
  };

  // F_j <- beta2 F_j + w X_j x_k X_j for every mode j, X_j = input(j) (g's (count, block...)
  // buffer); returns the opened factors, which store() writes back.
  template <class Input>
  Open accumulate(Ctx const& c, Group const& g, Input const& input, StepScalars<T> const& s) {
    Open open;
    for (auto& m : modes) {
      T* f = m.factors_as_t();
      if (!f) {
        open.converted.push_back(B::template scratch<T>(c.executor, g.count * m.d * m.d));
        f = open.converted.back().data();
        visit_factor_dtype(m.dtype, [&](auto u) {
          using U = decltype(u);
          U const* stored = reinterpret_cast<U const*>(m.factors.data());
          if (m.packed)
            unpack_symmetric(c.executor, stored, f, g.count, m.d);
          else if constexpr (!std::is_same_v<U, T>)  // stored as T: f is the storage itself
            assign(Ctx::flat(f, g.count * m.d * m.d), Ctx::flat(stored, g.count * m.d * m.d),
                   c.executor);
        });
      }
      stages::accumulate_factor(c.executor, f, input(open.values.size()), g.count, g.shape, m.dim,
                                s.beta2, s.weight);
      open.values.push_back(f);
    }
    return open;
  }

  // The opened factors back into their storage (rounded to its dtype, packed when packed).
  void store(Ctx const& c, Group const& g, Open const& open) {
    for (std::size_t j = 0; j < modes.size(); ++j) {
      auto& m = modes[j];
      if (m.factors_as_t()) continue;
      visit_factor_dtype(m.dtype, [&](auto u) {
        using U = decltype(u);
        U* stored = reinterpret_cast<U*>(m.factors.data());
        if (m.packed)
          pack_symmetric(c.executor, static_cast<T const*>(open.values[j]), stored, g.count, m.d);
        else if constexpr (!std::is_same_v<U, T>)
          assign(Ctx::flat(stored, g.count * m.d * m.d),
                 Ctx::flat(open.values[j], g.count * m.d * m.d), c.executor);
      });
    }
  }

  // ---- the overflow pre-check (step/bounds.hpp) ----

  // r (g.row_norms) and max_i r_i (g.per_slot, 2 j + 1) of what each mode accumulates.
  template <class Input>
  void request_row_norms(Ctx const& c, Group& g, Input const& input) const {
    double* norms = g.row_norms.data();
    for (std::size_t j = 0; j < modes.size(); ++j) {
      auto const& m = modes[j];
      stages::row_norm_inputs(c.executor, input(j), g.count, g.shape, m.dim, norms,
                              g.per_slot.data() + (2 * j + 1) * g.count);
      norms += g.count * m.d;
    }
  }

  // Where bound inputs of mode j, slot `slot` are in a per-slot readback (2 per mode).
  static std::size_t at(std::size_t j, index_t count, index_t slot) {
    return 2 * j * static_cast<std::size_t>(count) + static_cast<std::size_t>(slot);
  }

  // The cheap bound per slot and mode into inputs (at(j, ...)); where some slot's does not fit,
  // the tight one is requested (entry_bounds into g.per_slot) and tight[j] set. Returns whether any
  // mode asked for tight bounds.
  bool cheap_bounds(Ctx const& c, Group& g, std::vector<double>& inputs, std::vector<char>& tight,
                    StepScalars<T> const& s) {
    double const beta2 = static_cast<double>(s.beta2), weight = static_cast<double>(s.weight);
    double* norms = g.row_norms.data();
    bool any = false;
    tight.assign(modes.size(), 0);
    for (std::size_t j = 0; j < modes.size(); ++j) {
      auto& m = modes[j];
      m.pending.assign(static_cast<std::size_t>(g.count), 0.0);
      bool all_fit = true;
      for (index_t slot = 0; slot < g.count; ++slot) {
        double const largest_r = inputs[at(j, g.count, slot) + static_cast<std::size_t>(g.count)];
        double const cheap = beta2 * m.bound[static_cast<std::size_t>(slot)] + weight * largest_r;
        inputs[at(j, g.count, slot)] = cheap;
        all_fit = all_fit && bound_fits<T>(cheap, g.numel / std::max<index_t>(m.d, 1), m.dtype, s);
      }
      if (!all_fit) {
        any = true;
        tight[j] = 1;
        visit_factor_dtype(m.dtype, [&](auto u) {
          using U = decltype(u);
          U const* stored = reinterpret_cast<U const*>(m.factors.data());
          auto full = B::template scratch<U>(c.executor, m.packed ? g.count * m.d * m.d : 0);
          if (m.packed) {
            unpack_symmetric(c.executor, stored, full.data(), g.count, m.d);
            stored = full.data();
          }
          stages::entry_bounds(c.executor, stored, g.count, m.d, beta2, weight, norms,
                               g.per_slot.data() + 2 * j * g.count);
        });
      }
      norms += g.count * m.d;
    }
    return any;
  }

  // Each slot's accepted bound becomes pending (for the next step) and, when the step could
  // overflow a factor, error(slot, sentence) is called with the first mode's sentence.
  template <class Error>
  void decide_bounds(Ctx const& c, Group const& g, std::vector<double> const& inputs, index_t step,
                     StepScalars<T> const& s, Error const& error) {
    for (index_t slot = 0; slot < g.count; ++slot) {
      BlockPlan const& bp = c.block_of(g, slot);
      for (std::size_t j = 0; j < modes.size(); ++j) {
        auto& m = modes[j];
        double const bound = inputs[at(j, g.count, slot)];
        m.pending[static_cast<std::size_t>(slot)] =
            bound * bound_rounding<T>(g.numel / std::max<index_t>(m.d, 1), m.dtype);
        error(slot, [&] {
          return factor_bound_error<T>(
              j, m.dim, c.key_of(bp.param), bp.index, step, bound,
              inputs[at(j, g.count, slot) + static_cast<std::size_t>(g.count)],
              g.numel / std::max<index_t>(m.d, 1), m.dtype, s);
        });
      }
    }
  }

  // The pre-check's bounds become the accepted ones (the step goes ahead).
  void accept_bounds() {
    for (auto& m : modes) std::swap(m.bound, m.pending);
  }
  // Unknown bounds: the next step reads the factors (a loaded state).
  void forget_bounds(index_t count) {
    for (auto& m : modes)
      m.bound.assign(static_cast<std::size_t>(count), std::numeric_limits<double>::infinity());
  }

  // ---- inspection and state ----

  // Factor matrix j of slot `slot` in T (dequantized, unpacked), row-major d x d.
  std::vector<T> factor_matrix(Ctx const& c, index_t slot, std::size_t j) const {
    auto const& m = modes[j];
    auto const dd = static_cast<std::size_t>(m.d * m.d);
    std::size_t const size = dtype_size(m.dtype);
    std::vector<std::byte> bytes(dd * size);
    index_t const stored = m.factor_numel() * static_cast<index_t>(size);
    B::to_host(c.executor, m.factors.data() + slot * stored, stored, bytes.data());
    B::wait(c.executor);
    if (m.packed) {
      std::vector<std::byte> const packed(bytes.begin(), bytes.begin() + stored);
      unpack_symmetric_bytes(packed.data(), bytes.data(), m.d, size);
    }
    std::vector<T> out(dd);
    for (std::size_t i = 0; i < dd; ++i)
      out[i] = static_cast<T>(detail::load_element(m.dtype, bytes.data(), i));
    return out;
  }
  // The family's matrix j of slot `slot` (an inverse root or eigenvectors), row-major d x d.
  std::vector<T> matrix(Ctx const& c, index_t slot, std::size_t j) const {
    auto const& m = modes[j];
    std::vector<T> out(static_cast<std::size_t>(m.d * m.d));
    B::to_host(c.executor, m.matrices.data() + slot * m.d * m.d, m.d * m.d, out.data());
    B::wait(c.executor);
    return out;
  }

  // f(StateBuffer) for the factors and the family's matrices (saved under `matrices_key`, as upper
  // triangles with packed_matrices) and eigenvalues (under `eigenvalues_key`, unless null) of every
  // mode, in order.
  template <class F>
  void for_each_buffer(char const* matrices_key, bool packed_matrices, char const* eigenvalues_key,
                       F&& f) const {
    index_t const t_size = static_cast<index_t>(sizeof(T));
    for (std::size_t j = 0; j < modes.size(); ++j) {
      auto const& m = modes[j];
      std::vector<index_t> const square{m.d, m.d};
      std::vector<index_t> const packed{packed_size(m.d)};
      std::string const index = std::to_string(j);
      f(StateBuffer(m.factors, m.factor_numel() * static_cast<index_t>(dtype_size(m.dtype)),
                    {"shampoo", "factor_matrices", index}, m.dtype, m.packed ? packed : square,
                    m.packed ? packed : square));
      f(StateBuffer(m.matrices, m.d * m.d * t_size, {"shampoo", matrices_key, index}, dtype_of_v<T>,
                    square, packed_matrices ? packed : square));
      if (eigenvalues_key)
        f(StateBuffer(m.eigenvalues, m.d * t_size, {"shampoo", eigenvalues_key, index},
                      dtype_of_v<T>, {m.d}, {m.d}));
    }
  }
};

}  // namespace tessel::shampoo
