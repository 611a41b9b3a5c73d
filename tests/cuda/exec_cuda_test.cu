// The CUDA executor against the host executor (its host twin): every kernel family (packet,
// linear and FastDivmod elementwise; block and warp row reductions, flat and not; softmax and
// log-softmax epilogues; full reductions and argmax through cub::DeviceReduce), with results
// compared element by element; and a kernel of tiled views (examples/tiled_copy's body: local_tile,
// local_partition, an identity tensor for the ragged edge) against its host twin. Those tests
// skip, with a message, without a GPU; the validation tests (shape errors before any launch,
// nothing written) run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/dense.hpp>
#include <tessel/exec/cuda/eigh.cuh>
#include <tessel/exec/cuda/rows.cuh>
#include <tessel/exec/dense.hpp>
#include <tessel/exec/eigh.hpp>
#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tessel.hpp>

#include "../../examples/tiled_copy/tiled_copy.hpp"
#include "exec/row_bodies.hpp"
#include "support/cuda.hpp"

// A using-directive, as users write it: tessel declares no namespace `cuda`, so CCCL's ::cuda
// stays unambiguous in nvcc's generated launch stubs.
using namespace tessel;

namespace {

static_assert(exec::DeviceExecutor<exec::Cuda> && !exec::HostExecutor<exec::Cuda>);

template <class Shape>
auto random_host(Shape const& s, unsigned seed) {
  auto t = make_host_tensor<float>(s);
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  index_t const n = to_index(size(t.layout()));
  for (index_t i = 0; i < n; ++i) t.data()[i] = dist(gen);
  return t;
}

using test::to_device;
using test::to_host;
using test::expect_close;


TEST(CudaExecutor, FusedElementwiseMatchesTheHostTwin) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  for (index_t cols : {index_t{1024}, index_t{1027}}) {  // packets; a tail and scalar accesses
    auto hx = random_host(make_shape(index_t{37}, cols), 1);
    auto hy = random_host(make_shape(index_t{37}, cols), 2);
    auto x = to_device(hx, s);
    auto y = to_device(hy, s);
    auto out = make_device_tensor<float>(make_shape(index_t{37}, cols));
    assign(out, exp(x) * 2.0f + y * y, gpu);
    auto expected = make_host_tensor<float>(make_shape(index_t{37}, cols));
    assign(expected, exp(hx) * 2.0f + hy * hy, exec::Serial{});
    expect_close(to_host(out, s), expected, 1e-6);
  }
}

TEST(CudaExecutor, TransposedAndBroadcastOperandsUseTheIndexedKernel) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hx = random_host(make_shape(index_t{65}, index_t{33}), 3);
  auto hb = random_host(make_shape(index_t{33}), 4);
  auto x = to_device(hx, s);
  auto b = to_device(hb, s);
  auto out = make_device_tensor<float>(make_shape(index_t{33}, index_t{65}));
  assign(out, transpose(x) + 1.5f, gpu);  // transposed read: a two-mode nest
  auto expected = make_host_tensor<float>(make_shape(index_t{33}, index_t{65}));
  assign(expected, transpose(hx) + 1.5f, exec::Serial{});
  expect_close(to_host(out, s), expected, 1e-6);

  auto out2 = make_device_tensor<float>(make_shape(index_t{65}, index_t{33}));
  assign(out2, x - b, gpu);  // b broadcast along mode 0
  auto expected2 = make_host_tensor<float>(make_shape(index_t{65}, index_t{33}));
  assign(expected2, hx - hb, exec::Serial{});
  expect_close(to_host(out2, s), expected2, 1e-6);
}

TEST(CudaExecutor, StaticLayoutsTakeTheCompileTimeNest) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  // Every layout static: the kernels are instantiated with the nest lowered at compile time
  // (constant extents and strides); the results must still match the host executor's.
  auto hx = random_host(make_shape(Int<48>{}, Int<40>{}), 21);
  auto hb = random_host(make_shape(Int<48>{}), 22);
  auto x = to_device(hx, s);
  auto b = to_device(hb, s);
  auto out = make_device_tensor<float>(make_shape(Int<40>{}, Int<48>{}));
  assign(out, transpose(x) * 2.0f + b, gpu);  // two modes, a broadcast: the static nest kernel
  auto expected = make_host_tensor<float>(make_shape(Int<40>{}, Int<48>{}));
  assign(expected, transpose(hx) * 2.0f + hb, exec::Serial{});
  expect_close(to_host(out, s), expected, 1e-6);

  auto rows = make_device_tensor<float>(make_shape(Int<48>{}));
  auto cols = make_device_tensor<float>(make_shape(Int<40>{}));
  auto sm = make_device_tensor<float>(make_shape(Int<48>{}, Int<40>{}));
  auto total = make_device_tensor<float>(make_shape(Int<1>{}));
  assign(rows, logsumexp(x, mode<1>), gpu);
  assign(cols, max(x * 0.5f, mode<0>), gpu);  // strided rows
  assign(sm, log_softmax(x), gpu);
  assign(total, sum(x), gpu);
  auto erows = make_host_tensor<float>(make_shape(Int<48>{}));
  auto ecols = make_host_tensor<float>(make_shape(Int<40>{}));
  auto esm = make_host_tensor<float>(make_shape(Int<48>{}, Int<40>{}));
  assign(erows, logsumexp(hx, mode<1>), exec::Serial{});
  assign(ecols, max(hx * 0.5f, mode<0>), exec::Serial{});
  assign(esm, log_softmax(hx), exec::Serial{});
  expect_close(to_host(rows, s), erows, 1e-5);
  expect_close(to_host(cols, s), ecols, 0.0);
  expect_close(to_host(sm, s), esm, 1e-5);
  EXPECT_NEAR(to_host(total, s).data()[0], item(sum(hx)), 1e-3);
}

TEST(CudaExecutor, RowReductionsMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  for (index_t cols : {index_t{100}, index_t{5000}}) {  // a warp per row; a block per row
    auto hx = random_host(make_shape(index_t{19}, cols), 5);
    auto x = to_device(hx, s);
    auto lse = make_device_tensor<float>(make_shape(index_t{19}));
    auto mx = make_device_tensor<float>(make_shape(index_t{19}));
    auto am = make_device_tensor<index_t>(make_shape(index_t{19}));
    auto col = make_device_tensor<float>(make_shape(cols));
    assign(lse, logsumexp(x * 0.5f, mode<1>), gpu);  // producer fused into the row kernel
    assign(mx, max(x, mode<1>), gpu);
    assign(am, argmax(x, mode<1>), gpu);
    assign(col, sum(x, mode<0>), gpu);  // a strided (column) row
    auto else_ = make_host_tensor<float>(make_shape(index_t{19}));
    auto emx = make_host_tensor<float>(make_shape(index_t{19}));
    auto eam = make_host_tensor<index_t>(make_shape(index_t{19}));
    auto ecol = make_host_tensor<float>(make_shape(cols));
    assign(else_, logsumexp(hx * 0.5f, mode<1>), exec::Serial{});
    assign(emx, max(hx, mode<1>), exec::Serial{});
    assign(eam, argmax(hx, mode<1>), exec::Serial{});
    assign(ecol, sum(hx, mode<0>), exec::Serial{});
    expect_close(to_host(lse, s), else_, 1e-5);
    expect_close(to_host(mx, s), emx, 0.0);
    expect_close(to_host(am, s), eam, 0.0);
    expect_close(to_host(col, s), ecol, 1e-4);
  }
}

TEST(CudaExecutor, SoftmaxEpiloguesMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  for (index_t cols : {index_t{257}, index_t{4099}}) {
    auto hx = random_host(make_shape(index_t{7}, cols), 6);
    auto x = to_device(hx, s);
    auto sm = make_device_tensor<float>(make_shape(index_t{7}, cols));
    auto lsm = make_device_tensor<float>(make_shape(index_t{7}, cols));
    assign(sm, softmax(x + 1.0f), gpu);
    assign(lsm, log_softmax(x), gpu);
    auto esm = make_host_tensor<float>(make_shape(index_t{7}, cols));
    auto elsm = make_host_tensor<float>(make_shape(index_t{7}, cols));
    assign(esm, softmax(hx + 1.0f), exec::Serial{});
    assign(elsm, log_softmax(hx), exec::Serial{});
    expect_close(to_host(sm, s), esm, 1e-5);
    expect_close(to_host(lsm, s), elsm, 1e-5);
  }
}

TEST(CudaExecutor, FullReductionsGoThroughCub) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hx = random_host(make_shape(index_t{301}, index_t{97}), 7);
  auto x = to_device(hx, s);
  auto total = make_device_tensor<float>(make_shape(index_t{1}));
  auto arg = make_device_tensor<index_t>(make_shape(index_t{1}));
  auto lse = make_device_tensor<float>(make_shape(index_t{1}));
  assign(total, sum(x * x), gpu);
  assign(arg, argmax(x), gpu);
  assign(lse, logsumexp(x), gpu);
  auto et = make_host_tensor<float>(make_shape(index_t{1}));
  auto ea = make_host_tensor<index_t>(make_shape(index_t{1}));
  auto el = make_host_tensor<float>(make_shape(index_t{1}));
  assign(et, sum(hx * hx), exec::Serial{});
  assign(ea, argmax(hx), exec::Serial{});
  assign(el, logsumexp(hx), exec::Serial{});
  expect_close(to_host(total, s), et, 1e-4);
  expect_close(to_host(arg, s), ea, 0.0);
  expect_close(to_host(lse, s), el, 1e-5);
}

TEST(CudaExecutor, ReductionsInsideExpressionsAreMaterializedOnTheDevice) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hx = random_host(make_shape(index_t{9}, index_t{300}), 8);
  auto x = to_device(hx, s);
  auto out = make_device_tensor<float>(make_shape(index_t{9}, index_t{300}));
  assign(out, exp(x - logsumexp(x, mode<1>, keep)), gpu);
  auto expected = make_host_tensor<float>(make_shape(index_t{9}, index_t{300}));
  assign(expected, exp(hx - logsumexp(hx, mode<1>, keep)), exec::Serial{});
  expect_close(to_host(out, s), expected, 1e-5);
}

// Validation runs on the host before any CUDA call, so fake device pointers are enough here.
// A 16-bit leaf the executor may have to compact keeps its element type in the device temporary
// (the evaluator types of both paths agree; this did not compile before), and a scalar-first
// product broadcasts a rank-0 scalar with a rank-0 accumulator (nvcc used to flag it).
TEST(CudaExecutor, SixteenBitLeavesAndScalarFirstProductsMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto x = random_host(make_shape(index_t{48}, index_t{64}), 45);
  auto h16 = make_host_tensor<bfloat16>(make_shape(index_t{48}, index_t{64}));
  for (index_t i = 0; i < 48 * 64; ++i) h16[i] = bfloat16(x[i]);
  auto d16 = to_device(h16, s);
  auto expected = make_host_tensor<float>(make_shape(index_t{64}, index_t{48}));
  assign(expected, 2.0f * cast<float>(transpose(h16.view())), exec::Serial{});
  auto out = make_device_tensor<float>(make_shape(index_t{64}, index_t{48}));
  assign(out, 2.0f * cast<float>(transpose(d16.view())), gpu);
  expect_close(to_host(out, s), expected, 0.0);
}

TEST(CudaExecutor, ShapeMismatchThrowsBeforeAnyLaunch) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  auto x = make_device_tensor(fake, make_shape(3, 4));
  auto out = make_device_tensor(fake + 64, make_shape(4, 3));
  try {
    assign(out, x + 1.0f, exec::Cuda{});
    FAIL() << "a shape mismatch must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot assign an expression of shape (3,4) to a tensor of shape (4,3).");
  }
}

TEST(CudaExecutor, ARepeatingDestinationThrowsBeforeAnyLaunch) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  auto x = make_device_tensor(fake, make_shape(3, 4));
  auto out = make_device_tensor(fake + 64, make_layout(make_shape(3, 4), make_stride(1, 0)));
  try {
    assign(out, x * 2.0f, exec::Cuda{});
    FAIL() << "a destination with a stride-0 mode must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot assign to a tensor whose layout (3,4):(1,0) maps several coordinates to "
                 "one element.");
  }
}

TEST(CudaExecutor, AnEmptyMaxThrowsBeforeAnyLaunch) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  auto x = make_device_tensor(fake, make_shape(3, 0));
  auto out = make_device_tensor(fake + 64, make_shape(3));
  try {
    assign(out, max(x, mode<1>), exec::Cuda{});
    FAIL() << "a max over an empty mode must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot take the max over mode 1 of an expression of shape (3,0), which has "
                 "extent 0.");
  }
}


// exec::gemm / exec::syrk on the device against their host twins (exec/dense.hpp): every storage
// order of A and B (transposed views), a column-major C, a batch sharing B, and bf16 operands
// accumulated into f32.
TEST(CudaDense, GemmAndSyrkMatchTheHost) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const x{s.get()};
  auto ha = random_host(make_shape(index_t{3}, index_t{33}, index_t{20}), 41);
  auto hb = random_host(make_shape(index_t{1}, index_t{20}, index_t{45}), 42);
  auto da = to_device(ha, s);
  auto db = to_device(hb, s);
  auto want = make_host_tensor<float>(make_shape(index_t{3}, index_t{33}, index_t{45}));
  exec::gemm(exec::Serial{}, want.view(), ha.view(), hb.view(), {.alpha = 2.0});
  auto dc = make_device_tensor<float>(make_shape(index_t{3}, index_t{33}, index_t{45}));
  exec::gemm(x, dc.view(), da.view(), db.view(), {.alpha = 2.0});
  expect_close(to_host(dc, s), want, 1e-4);
  // C^T stored column-major: the same values through a transposed view.
  auto dct = make_device_tensor<float>(make_shape(index_t{3}, index_t{45}, index_t{33}));
  exec::gemm(x, permute<0, 2, 1>(dct.view()), da.view(), db.view(), {.alpha = 2.0});
  auto hct = to_host(dct, s);
  for (index_t q = 0; q < 3; ++q)
    for (index_t i = 0; i < 33; ++i)
      for (index_t j = 0; j < 45; ++j)
        ASSERT_NEAR(hct(q, j, i), want(q, i, j), 1e-4 * (1 + std::abs(want(q, i, j))));
  // syrk: A A^T, symmetric.
  auto hs = make_host_tensor<float>(make_shape(index_t{3}, index_t{33}, index_t{33}));
  exec::syrk(exec::Serial{}, hs.view(), ha.view());
  auto ds = make_device_tensor<float>(make_shape(index_t{3}, index_t{33}, index_t{33}));
  exec::syrk(x, ds.view(), da.view());
  expect_close(to_host(ds, s), hs, 1e-4);
  // bf16 operands, f32 result: against the host product of the rounded operands.
  auto ha16 = make_host_tensor<bfloat16>(make_shape(index_t{33}, index_t{20}));
  auto hb16 = make_host_tensor<bfloat16>(make_shape(index_t{20}, index_t{45}));
  auto ha32 = make_host_tensor<float>(make_shape(index_t{33}, index_t{20}));
  auto hb32 = make_host_tensor<float>(make_shape(index_t{20}, index_t{45}));
  for (index_t i = 0; i < 33 * 20; ++i) ha32[i] = static_cast<float>(ha16[i] = bfloat16(ha[i]));
  for (index_t i = 0; i < 20 * 45; ++i) hb32[i] = static_cast<float>(hb16[i] = bfloat16(hb[i]));
  auto want32 = make_host_tensor<float>(make_shape(index_t{33}, index_t{45}));
  exec::gemm(exec::Serial{}, want32.view(), ha32.view(), hb32.view());
  auto dc32 = make_device_tensor<float>(make_shape(index_t{33}, index_t{45}));
  exec::gemm(x, dc32.view(), to_device(ha16, s).view(), to_device(hb16, s).view());
  expect_close(to_host(dc32, s), want32, 1e-4);
}

// The device primitives check their operands on the host with the host's sentences, before any
// CUDA call (fake device pointers are enough).
TEST(CudaDense, OperandErrorsBeforeAnyCall) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  auto a = make_device_tensor(fake, make_shape(4, 3));
  auto b = make_device_tensor(fake + 64, make_shape(5, 2));
  auto c = make_device_tensor(fake + 128, make_shape(4, 2));
  try {
    exec::gemm(exec::Cuda{}, c, a, b);
    FAIL() << "mismatched shapes must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "gemm cannot multiply A (4,3) by B (5,2) into C (4,2): it needs A (m, k), B (k, "
                 "n) and C (m, n).");
  }
}



// exec::eigh on the device against its host twin (exec/eigh.hpp): the same eigenvalues, and
// eigenvectors that agree up to sign, for a row-major batch (transposed on the device after
// cuSOLVER) and a column-major one (decomposed in place); info 0 for every matrix.
TEST(CudaEigh, MatchesTheHost) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  exec::Cuda const x{s.get()};
  index_t const batch = 5, n = 12;
  auto ha = make_host_tensor<double>(make_shape(batch, n, n));
  std::mt19937 gen(44);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (index_t b = 0; b < batch; ++b)
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j <= i; ++j) ha(b, i, j) = ha(b, j, i) = dist(gen);
  auto hq = make_host_tensor<double>(make_shape(batch, n, n));
  assign(hq, ha, exec::Serial{});
  auto hw = make_host_tensor<double>(make_shape(batch, n));
  auto hinfo = make_host_tensor<int>(make_shape(batch));
  exec::eigh(exec::Serial{}, hw.view(), hq.view(), hinfo.view());
  for (bool column_major : {false, true}) {
    auto dq = to_device(ha, s);  // symmetric: its transpose holds the same matrices
    auto dw = make_device_tensor<double>(make_shape(batch, n));
    auto dinfo = make_device_tensor<int>(make_shape(batch));
    if (column_major)
      exec::eigh(x, dw.view(), permute<0, 2, 1>(dq.view()), dinfo.view());
    else
      exec::eigh(x, dw.view(), dq.view(), dinfo.view());
    auto q = to_host(dq, s);
    auto w = to_host(dw, s);
    auto info = to_host(dinfo, s);
    s.synchronize();
    for (index_t b = 0; b < batch; ++b) {
      EXPECT_EQ(info(b), 0);
      for (index_t j = 0; j < n; ++j) {
        EXPECT_NEAR(w(b, j), hw(b, j), 1e-10);
        // Column j of the contract's matrices(b, i, j); a sign is free per eigenvector.
        auto at = [&](index_t i) { return column_major ? q(b, j, i) : q(b, i, j); };
        double const sign = at(0) * hq(b, 0, j) < 0 ? -1.0 : 1.0;
        for (index_t i = 0; i < n; ++i) EXPECT_NEAR(sign * at(i), hq(b, i, j), 1e-8);
      }
    }
  }
}

// The device eigh checks its operands on the host with the host's sentences before any call.
TEST(CudaEigh, OperandErrorsBeforeAnyCall) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  int* fake_info = reinterpret_cast<int*>(std::uintptr_t{4096});
  auto m = make_device_tensor(fake, make_shape(index_t{2}, index_t{3}, index_t{3}));
  auto w = make_device_tensor(fake + 64, make_shape(index_t{2}, index_t{2}));
  auto info = make_device_tensor(fake_info, make_shape(index_t{2}));
  try {
    exec::eigh(exec::Cuda{}, w, m, info);
    FAIL() << "mismatched shapes must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "eigh of matrices (2,3,3) needs eigenvalues (2,3) and info (2), got eigenvalues "
                 "(2,2) and info (2).");
  }
  // cuSOLVER wants eigenvalues (batch, n) packed: a strided view is refused, not copied.
  auto strided = make_device_tensor(fake + 64, make_layout(make_shape(index_t{2}, index_t{3}),
                                                           make_stride(index_t{6}, index_t{2})));
  try {
    exec::eigh(exec::Cuda{}, strided, m, info);
    FAIL() << "strided eigenvalues must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "the device eigh needs compact eigenvalues (strides (3,1)), got strides (6,2); "
                 "copy them into a compact tensor.");
  }
  auto compact_w = make_device_tensor(fake + 64, make_shape(index_t{2}, index_t{3}));
  auto spread = make_device_tensor(fake, make_layout(make_shape(index_t{2}, index_t{3}, index_t{3}),
                                                     make_stride(index_t{16}, index_t{3}, Int<1>{})));
  try {
    exec::eigh(exec::Cuda{}, compact_w, spread, info);
    FAIL() << "matrices apart must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "the device eigh needs the matrices stored back to back (batch stride 9), got "
                 "batch stride 16; copy them into a compact tensor.");
  }
  auto strided_info = make_device_tensor(fake_info, make_layout(make_shape(index_t{2}),
                                                                make_stride(index_t{2})));
  try {
    exec::eigh(exec::Cuda{}, compact_w, m, strided_info);
    FAIL() << "a strided info must throw";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "the device eigh needs a compact info (stride 1), got stride 2.");
  }
}

// exec::for_each_row on the device (a block per row) against the host twin: the same body.
TEST(CudaRows, ABlockPerRowMatchesTheHostTwin) {
  TESSEL_REQUIRE_GPU("the CUDA executor", "tests/exec");
  gpu::Stream s;
  index_t const rows = 300, n = 1000;
  auto in = random_host(make_shape(rows, n), 43);
  auto want = make_host_tensor<float>(make_shape(rows, n));
  auto want_sums = make_host_tensor<float>(make_shape(rows));
  exec::for_each_row(exec::Serial{}, rows, n,
                     test::CenterRows<float>{in.data(), want.data(), want_sums.data(), n});
  auto din = to_device(in, s);
  auto dout = make_device_tensor<float>(make_shape(rows, n));
  auto dsums = make_device_tensor<float>(make_shape(rows));
  exec::for_each_row<128>(exec::Cuda{s.get()}, rows, n,
                          test::CenterRows<float>{din.data(), dout.data(), dsums.data(), n});
  expect_close(to_host(dout, s), want, 1e-4);
  expect_close(to_host(dsums, s), want_sums, 1e-4);
}

// The tiled copy's body as a kernel: block blockIdx.x, thread threadIdx.x of the
// <<<block_count, thread_count>>> launch, over device views of the two (64, 64) buffers.
__global__ void tiled_copy_kernel(float const* src, float* dst) {
  auto s = make_device_tensor(src, tiled_copy::buffer_layout());
  auto d = make_device_tensor(dst, tiled_copy::buffer_layout());
  tiled_copy::copy_tile_part(s, d, static_cast<index_t>(blockIdx.x),
                             static_cast<index_t>(threadIdx.x));
}

TEST(CudaTiledViews, TiledCopyMatchesTheHostTwin) {
  TESSEL_REQUIRE_GPU("the tiled copy kernel", "examples/tiled_copy");
  gpu::Stream s;
  auto src = random_host(tiled_copy::buffer_layout(), 44);
  auto padding = make_host_tensor<float>(tiled_copy::buffer_layout());
  for (float& x : padding) x = -1.0f;  // what no thread writes stays -1
  auto dsrc = to_device(src, s);
  auto ddst = to_device(padding, s);
  auto want = make_host_tensor<float>(tiled_copy::buffer_layout());
  std::copy(padding.begin(), padding.end(), want.begin());
  for (index_t b = 0; b < tiled_copy::block_count; ++b)
    for (index_t k = 0; k < tiled_copy::thread_count; ++k)
      tiled_copy::copy_tile_part(src.view(), want.view(), b, k);
  tiled_copy_kernel<<<tiled_copy::block_count, tiled_copy::thread_count, 0, s.get()>>>(
      dsrc.data(), ddst.data());
  TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the tiled copy kernel");
  expect_close(to_host(ddst, s), want, 0.0);
}

}  // namespace
