// A row body for the exec::for_each_row tests, shared by the host test (tests/exec/rows_test.cpp)
// and its CUDA twin (tests/cuda/exec_cuda_test.cu): each row's sum (a lane reduction), then the
// row written minus its mean (every lane has the sum after the reduction).
#pragma once

#include <tessel/core/config.hpp>

namespace tessel::test {

template <class T>
struct CenterRows {
  T const* in;
  T* out;
  T* sums;
  index_t n;

  struct Plus {
    TESSEL_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
  };

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t row) const {
    T partial = 0;
    for (index_t j = ctx.lane(); j < n; j += ctx.lanes()) partial += in[row * n + j];
    T const sum = ctx.reduce(partial, Plus{});
    for (index_t j = ctx.lane(); j < n; j += ctx.lanes())
      out[row * n + j] = in[row * n + j] - sum / static_cast<T>(n);
    if (ctx.lane() == 0) sums[row] = sum;
  }
};

}  // namespace tessel::test
