// Helpers shared by the sparsity tests: the sentence of a tessel::Error, seeded random matrices and
// element values as vectors (to check that nothing was written).
#pragma once

#include <random>
#include <string>
#include <vector>

#include <tessel/core/error.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "support/error_of.hpp"

namespace sparsity_test {

using tessel::test::error_of;

// A rows x cols matrix of distinct-magnitude normal values (no zeros), from a fixed seed.
inline auto random_matrix(tessel::index_t rows, tessel::index_t cols, unsigned seed) {
  auto t = tessel::make_host_tensor<float>(tessel::make_shape(rows, cols));
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (tessel::index_t i = 0; i < rows * cols; ++i) {
    float x = normal(gen);
    t[i] = x == 0.0f ? 1e-3f : x;
  }
  return t;
}

template <class T>
std::vector<float> values(T const& t) {
  std::vector<float> out;
  for (tessel::index_t i = 0; i < tessel::to_index(tessel::size(t.layout())); ++i)
    out.push_back(static_cast<float>(t[i]));
  return out;
}

}  // namespace sparsity_test
