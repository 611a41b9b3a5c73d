// Runs tessel's host FLCE on a reference Problem in a given storage type and compares results with
// the float64 reference under per-dtype tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tessel/dist/communicator.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/flce/vocab_parallel.hpp>
#include <tessel/tensor/tensor.hpp>

#include "reference.hpp"

namespace tessel::flce::test {

// |actual - expected| <= atol + rtol * |expected|, elementwise (numpy.allclose), per dtype.
// f32 and bf16 are Liger-Kernel's test tolerances; f64 is near its rounding, f16 between.
struct Tolerance {
  double atol, rtol;
};
template <class T>
constexpr Tolerance tolerance() {
  if constexpr (std::is_same_v<T, double>) return {1e-10, 1e-9};
  if constexpr (std::is_same_v<T, float>) return {1e-5, 5e-4};
  if constexpr (std::is_same_v<T, half>) return {1e-3, 1e-2};
  return {5e-3, 5e-2};  // bfloat16
}

template <class T>
std::string dtype_label() {
  return std::string(dtype_name(dtype_of_v<T>));
}

// Each value rounded to T and back: the reference then sees exactly what tessel computes on, so
// the comparison measures the computation, not the rounding of the inputs.
template <class T>
double round_to(double x) {
  return static_cast<double>(static_cast<float>(T(static_cast<float>(x))));
}
template <>
inline double round_to<double>(double x) {
  return x;
}
template <>
inline double round_to<float>(double x) {
  return static_cast<double>(static_cast<float>(x));
}

template <class T>
Problem rounded(Problem p) {
  for (auto* v : {&p.x, &p.w, &p.bias, &p.class_weights})
    for (auto& e : *v) e = round_to<T>(e);
  return p;
}

template <class T>
std::vector<T> to_storage(std::vector<double> const& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (double e : v)
    out.push_back(T(static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(e)));
  return out;
}

template <class T>
std::vector<double> to_double(std::vector<T> const& v) {
  std::vector<double> out;
  for (auto const& e : v) out.push_back(static_cast<double>(static_cast<accum_t<T>>(e)));
  return out;
}

struct FlceRun {
  std::vector<double> loss, z_loss, grad_input, grad_weight, grad_bias, lse, target_logprob,
      entropy, accuracy;
  std::vector<std::int64_t> argmax;
  FlcePlan plan;
};

// Which outputs a run asks for.
struct Wanted {
  bool loss = true, z_loss = true, grad_input = true, grad_weight = true, grad_bias = true;
  bool lse = true, target_logprob = true, entropy = true, argmax = true, accuracy = true;
};

// tessel's host forward on problem p (already rounded to T) with options o, on `executor`. With
// a communicator, the vocabulary-parallel forward: p's weight, bias and class weights are then
// this rank's slice (and grad_weight, grad_bias the slice's). Compiled once, in harness.cpp, for
// every storage type and host executor the tests use (the run-time-shape forward is the heaviest
// instantiation in these tests; each test file compiling it again cost minutes of CI); the
// combinations it instantiates are listed there.
template <class T, class Executor = exec::Auto>
FlceRun run_tessel(Problem const& p, ReferenceOptions const& o, index_t chunk_size = 0,
                   Wanted wanted = {}, Executor const& executor = {},
                   dist::Communicator* communicator = nullptr);

// Elementwise allclose with a readable failure: how many elements are off and the worst one.
inline ::testing::AssertionResult all_close(std::vector<double> const& actual,
                                            std::vector<double> const& expected, Tolerance tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "sizes differ: " << actual.size() << " vs " << expected.size();
  std::size_t bad = 0, worst = 0;
  double worst_excess = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    double const err = std::abs(actual[i] - expected[i]);
    double const bound = tol.atol + tol.rtol * std::abs(expected[i]);
    if (!(err <= bound)) {
      ++bad;
      double const excess = std::isnan(err) ? INFINITY : err - bound;
      if (bad == 1 || excess > worst_excess) {
        worst = i;
        worst_excess = excess;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements differ; worst at " << worst << ": "
         << actual[worst] << " vs " << expected[worst] << " (atol " << tol.atol << ", rtol "
         << tol.rtol << ")";
}

// tessel's argmax against the reference's: the same class, or (a near-tie that rounding may
// decide either way) one whose reference logit is within tol of the row's largest.
inline ::testing::AssertionResult argmax_agrees(std::vector<std::int64_t> const& actual,
                                                ReferenceResult const& want, std::int64_t vocab,
                                                Tolerance tol) {
  if (actual.size() != want.argmax.size())
    return ::testing::AssertionFailure()
           << "sizes differ: " << actual.size() << " vs " << want.argmax.size();
  for (std::size_t i = 0; i < actual.size(); ++i) {
    std::int64_t const a = actual[i], m = want.argmax[i];
    if (a == m) continue;
    if (m < 0 || a < 0 || a >= vocab)
      return ::testing::AssertionFailure() << "row " << i << ": argmax " << a << ", want " << m;
    double const top = want.logits[i * vocab + m], at = want.logits[i * vocab + a];
    if (!(top - at <= tol.atol + tol.rtol * std::abs(top)))
      return ::testing::AssertionFailure() << "row " << i << ": argmax " << a << " (logit " << at
                                           << "), want " << m << " (logit " << top << ")";
  }
  return ::testing::AssertionSuccess();
}

// The accuracy output against the argmax output of the same call: the fraction (mean), count
// (sum) or indicator (none) of non-ignored rows whose argmax is their target, exactly.
inline ::testing::AssertionResult accuracy_follows_argmax(FlceRun const& got,
                                                          std::vector<std::int64_t> const& target,
                                                          Reduction reduction,
                                                          std::int64_t ignore_index) {
  double hits = 0, count = 0;
  std::vector<double> rows;
  for (std::size_t i = 0; i < target.size(); ++i) {
    bool const ignored = target[i] == ignore_index;
    double const hit = !ignored && got.argmax[i] == target[i] ? 1.0 : 0.0;
    hits += hit;
    count += ignored ? 0 : 1;
    rows.push_back(hit);
  }
  std::vector<double> const want = reduction == Reduction::none ? rows
                                   : reduction == Reduction::sum
                                       ? std::vector<double>{hits}
                                       : std::vector<double>{count != 0 ? hits / count : 0.0};
  // accum_t<T> rounds hits / count; f32's rounding is within 1e-7 of it.
  return all_close(got.accuracy, want, {1e-7, 1e-7});
}

// p with only the classes of `slice`: its weight rows, bias and class weights.
inline Problem sliced(Problem p, VocabSlice slice) {
  auto const rows = [&](std::vector<double> const& v, std::int64_t width) {
    if (v.empty()) return v;
    return std::vector<double>(v.begin() + slice.offset * width,
                               v.begin() + (slice.offset + slice.size) * width);
  };
  p.w = rows(p.w, p.h);
  p.bias = rows(p.bias, 1);
  p.class_weights = rows(p.class_weights, 1);
  p.v = slice.size;
  return p;
}

// The single-process results restricted to what a rank of a vocabulary-parallel call returns:
// grad_weight's and grad_bias's rows of its slice.
inline FlceRun sliced(FlceRun r, VocabSlice slice, std::int64_t hidden) {
  r.grad_weight = std::vector<double>(r.grad_weight.begin() + slice.offset * hidden,
                                      r.grad_weight.begin() + (slice.offset + slice.size) * hidden);
  r.grad_bias = std::vector<double>(r.grad_bias.begin() + slice.offset,
                                    r.grad_bias.begin() + slice.offset + slice.size);
  return r;
}

}  // namespace tessel::flce::test
