// Validation of an FLCE call, shared by the host and CUDA paths: every shape, layout, option and
// output is checked before anything is written, and each failure is one sentence naming the
// values ("weight has shape (32000,511) but input has hidden size 512.").
#pragma once

#include <charconv>
#include <cmath>
#include <string>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../core/shape.hpp"
#include "arguments.hpp"
#include "options.hpp"
#include "types.hpp"

namespace tessel::flce::detail {

inline std::string elements_text(index_t n) {
  return tessel::detail::sentence(n, n == 1 ? " element" : " elements");
}

[[noreturn]] inline void fail(std::string message) {
  tessel::detail::throw_error(std::move(message));
}

// Matrices go to GEMMs: unit stride along the last mode, rows that do not overlap.
template <class T, class Space>
void check_matrix_layout(MatrixArg<T, Space> const& m, char const* name) {
  if (m.cols > 1 && m.col_stride != 1)
    fail(tessel::detail::sentence(name,
                                  " must be contiguous along its last mode (stride 1), got stride ",
                                  m.col_stride, "."));
  if (m.rows > 1 && m.row_stride < m.cols)
    fail(tessel::detail::sentence(name, " has row stride ", m.row_stride, ", less than its ",
                                  m.cols, " columns."));
}

template <class T, class Space>
void check_vector_size(VectorArg<T, Space> const& v, char const* name, index_t expected,
                       char const* what_expected) {
  if (v.present && v.size != expected)
    fail(tessel::detail::sentence(name, " has ", elements_text(v.size), " but ", what_expected, " ",
                                  expected, "."));
}

// Everything about a call that does not depend on the targets' values.
// @post returns normally only when the call is well-formed up to its targets' values
template <class T, class Space, class Y>
void validate_call(MatrixArg<T const, Space> const& x, MatrixArg<T const, Space> const& w,
                   VectorArg<Y const, Space> const& y, Options<T, Space> const& o,
                   Outputs<T, Space> const& out) {
  using tessel::detail::sentence;
  index_t const bt = x.rows, h = x.cols, v = w.rows;
  if (h < 1) fail(sentence("input has hidden size ", h, "; FLCE needs at least 1."));
  if (v < 1)
    fail(sentence("weight has shape ", tessel::detail::shape_text(make_shape(w.rows, w.cols)),
                  "; FLCE needs a vocabulary (weight's rows) of at least 1."));
  if (w.cols != h)
    fail(sentence("weight has shape ", tessel::detail::shape_text(make_shape(w.rows, w.cols)),
                  " but input has hidden size ", h, "."));
  if (y.size != bt)
    fail(sentence("target has ", elements_text(y.size), " but input has ", bt, " rows."));
  check_matrix_layout(x, "input");
  check_matrix_layout(w, "weight");
  check_vector_size(o.bias, "bias", v, "the vocabulary size (weight's rows) is");
  check_vector_size(o.class_weights, "class_weights", v, "the vocabulary size (weight's rows) is");

  if (!(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0))
    fail(sentence("label_smoothing must lie in [0, 1], got ", o.label_smoothing, "."));
  if (!(std::isfinite(o.lse_square_scale) && o.lse_square_scale >= 0.0))
    fail(sentence("lse_square_scale must be finite and >= 0, got ", o.lse_square_scale, "."));
  if (!(std::isfinite(o.softcap) && o.softcap >= 0.0))
    fail(sentence("softcap must be finite and >= 0 (0 turns it off), got ", o.softcap, "."));
  if (!(std::isfinite(o.temperature) && o.temperature > 0.0))
    fail(sentence("temperature must be finite and > 0, got ", o.temperature, "."));
  if (!std::isfinite(o.entropy_bonus))
    fail(sentence("entropy_bonus must be finite, got ", o.entropy_bonus, "."));
  if (!std::isfinite(o.grad_output))
    fail(sentence("grad_output must be finite, got ", o.grad_output, "."));
  if (o.shift_sequence_length < 0 || (o.shift_sequence_length > 0 && bt % o.shift_sequence_length))
    fail(sentence("shift_sequence_length must be 0 (no shift) or divide input's ", bt,
                  " rows into whole sequences, got ", o.shift_sequence_length, "."));
  if (o.chunk_size < 0)
    fail(sentence("chunk_size must be >= 0 (0 takes the plan's heuristic), got ", o.chunk_size,
                  "."));
  if (o.reduction != Reduction::mean && o.reduction != Reduction::sum &&
      o.reduction != Reduction::none)
    fail(sentence("reduction has the invalid value ", static_cast<int>(o.reduction), "."));
  if (o.grad_output_rows.present) {
    if (o.reduction != Reduction::none)
      fail(sentence("grad_output_rows needs reduction none, got ", reduction_name(o.reduction),
                    "."));
    check_vector_size(o.grad_output_rows, "grad_output_rows", bt, "input's rows are");
  }

  bool const per_row = o.reduction == Reduction::none;
  index_t const loss_size = per_row ? bt : 1;
  auto check_loss = [&](VectorArg<accum_t<T>, Space> const& l, char const* name) {
    if (l.present && l.size != loss_size)
      fail(sentence(name, " has ", elements_text(l.size), " but reduction ",
                    reduction_name(o.reduction), " gives ", loss_size,
                    per_row ? " (one per row)." : "."));
  };
  check_loss(out.loss, "loss");
  check_loss(out.z_loss, "z_loss");
  check_loss(out.accuracy, "accuracy");
  check_vector_size(out.lse, "lse", bt, "input's rows are");
  check_vector_size(out.target_logprob, "target_logprob", bt, "input's rows are");
  check_vector_size(out.entropy, "entropy", bt, "input's rows are");
  check_vector_size(out.argmax, "argmax", bt, "input's rows are");
  if (out.grad_input.present) {
    if (out.grad_input.rows != bt || out.grad_input.cols != h)
      fail(
          sentence("grad_input has shape ",
                   tessel::detail::shape_text(make_shape(out.grad_input.rows, out.grad_input.cols)),
                   " but input has shape ", tessel::detail::shape_text(make_shape(bt, h)), "."));
    check_matrix_layout(out.grad_input, "grad_input");
  }
  if (out.grad_weight.present) {
    if (out.grad_weight.rows != v || out.grad_weight.cols != h)
      fail(sentence(
          "grad_weight has shape ",
          tessel::detail::shape_text(make_shape(out.grad_weight.rows, out.grad_weight.cols)),
          " but weight has shape ", tessel::detail::shape_text(make_shape(v, h)), "."));
    check_matrix_layout(out.grad_weight, "grad_weight");
  }
  if (out.grad_bias.present) {
    if (!o.bias.present) fail("grad_bias was given but there is no bias (Options::bias).");
    check_vector_size(out.grad_bias, "grad_bias", v, "the vocabulary size (weight's rows) is");
  }
  bool const soft = o.soft_target_indices.present || o.soft_target_probs.present;
  if (soft) {
    if (!o.soft_target_indices.present || !o.soft_target_probs.present)
      fail(sentence("soft_target_indices and soft_target_probs go together, but only ",
                    o.soft_target_indices.present ? "soft_target_indices" : "soft_target_probs",
                    " was given."));
    auto const& c = o.soft_target_indices;
    auto const& q = o.soft_target_probs;
    if (c.rows != bt || c.cols < 1)
      fail(sentence("soft_target_indices has shape ",
                    tessel::detail::shape_text(make_shape(c.rows, c.cols)),
                    " but needs (rows, K) with input's ", bt, " rows and K >= 1."));
    if (q.rows != c.rows || q.cols != c.cols)
      fail(sentence("soft_target_probs has shape ",
                    tessel::detail::shape_text(make_shape(q.rows, q.cols)),
                    " but soft_target_indices has shape ",
                    tessel::detail::shape_text(make_shape(c.rows, c.cols)), "."));
  }
  if (!(o.soft_target_weight >= 0.0 && o.soft_target_weight <= 1.0))
    fail(sentence("soft_target_weight must lie in [0, 1], got ", o.soft_target_weight, "."));
  if (!soft && o.soft_target_weight != 1.0)
    fail(sentence("soft_target_weight is ", o.soft_target_weight,
                  " but no soft targets are given: it would change nothing."));
  if (soft && o.soft_target_weight == 0.0)
    fail("soft targets were given with soft_target_weight 0: they would change nothing.");
  if (o.accumulate && !out.grad_weight.present && !out.grad_bias.present)
    fail(
        "accumulate was set but neither grad_weight nor grad_bias is given: it would change "
        "nothing.");
}

// `row` is the input row whose target is bad; under the causal shift that target sits at row + 1.
[[noreturn]] inline void fail_bad_target(index_t value, index_t row, index_t vocab,
                                         index_t ignore_index, index_t shift = 0) {
  if (shift > 0)
    fail(tessel::detail::sentence("target ", value, " at row ", row + 1, " (what row ", row,
                                  " predicts under shift_sequence_length ", shift,
                                  ") is outside [0, ", vocab, ") and is not ignore_index (",
                                  ignore_index, ")."));
  fail(tessel::detail::sentence("target ", value, " at row ", row, " is outside [0, ", vocab,
                                ") and is not ignore_index (", ignore_index, ")."));
}

// The first invalid soft target (of a non-ignored row): entry k of row `row`.
[[noreturn]] inline void fail_bad_soft_target(index_t row, index_t k, index_t cls, double prob,
                                              index_t vocab) {
  if (cls < 0 || cls >= vocab)
    fail(tessel::detail::sentence("soft target ", k, " of row ", row, " names class ", cls,
                                  ", outside [0, ", vocab, ")."));
  fail(tessel::detail::sentence("soft target ", k, " of row ", row, " has probability ", prob,
                                "; probabilities must be finite and >= 0."));
}

}  // namespace tessel::flce::detail
