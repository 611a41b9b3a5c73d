// The CUDA FLCE path against the float64 reference (the same one the host tests use): every
// dtype and reduction with all options, ignored rows, static shapes (whose plan reaches the row
// kernel's type: static_asserts below), the error paths with untouched outputs, backward, a
// stream of the caller's, and the scratch it allocates. Tests that need a GPU are skipped, with a
// message, when no CUDA device is present; the checks made before any CUDA call run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tessel/exec/cuda/stream.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/tensor/tensor.hpp>

#include "flce/reference.hpp"
#include "support/cuda.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

// A static-shape call on the CUDA executor runs the chunk loop and the row kernel instantiated
// with its StaticFlcePlan: V is Int<100> in the kernel's body, whose parameters are pointers and
// scalars only (the plan is empty). 16-bit storage: cuBLAS reads bf16, and the row kernel writes
// a bf16 gradient for it. (The tensor types are spelled one by one: nvcc's front end confuses
// specializations of an alias template defined with decltype.)
template <class T>
T const* no_data() {
  return nullptr;
}
using StaticX = decltype(make_device_tensor(no_data<float>(), make_shape(Int<24>{}, Int<16>{})));
using StaticW = decltype(make_device_tensor(no_data<float>(), make_shape(Int<100>{}, Int<16>{})));
using StaticY = decltype(make_device_tensor(no_data<std::int64_t>(), make_shape(Int<24>{})));
using StaticX16 =
    decltype(make_device_tensor(no_data<bfloat16>(), make_shape(Int<24>{}, Int<16>{})));
using StaticW16 =
    decltype(make_device_tensor(no_data<bfloat16>(), make_shape(Int<100>{}, Int<16>{})));
using DynamicX = decltype(make_device_tensor(no_data<float>(), make_shape(index_t{}, index_t{})));
using DynamicY = decltype(make_device_tensor(no_data<std::int64_t>(), make_shape(index_t{})));

using StaticLoop = lowered_t<StaticX, StaticW, StaticY, exec::Cuda>;
static_assert(std::is_same_v<StaticLoop::plan_type, StaticFlcePlan<24, 16, 100, 4>>);
static_assert(std::is_same_v<StaticLoop::row_body::vocab_type, Int<100>>);
static_assert(std::is_same_v<StaticLoop::space, DeviceSpace>);
using StaticLoop16 = lowered_t<StaticX16, StaticW16, StaticY, exec::Cuda>;
static_assert(std::is_same_v<StaticLoop16::gemm_type, bfloat16>);
static_assert(std::is_same_v<StaticLoop16::gradient_type, bfloat16>);
using DynamicLoop = lowered_t<DynamicX, DynamicX, DynamicY, exec::Cuda>;
static_assert(std::is_same_v<DynamicLoop::plan_type, FlcePlan>);
static_assert(std::is_same_v<DynamicLoop::row_body::vocab_type, index_t>);

// A device copy of a host vector, freed at scope exit.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::vector<T> const& host) : size_(host.size()) {
    TESSEL_CUDA_CHECK(cudaMalloc(&data_, (size_ > 0 ? size_ : 1) * sizeof(T)),
                      "allocating a test buffer");
    if (size_ > 0)
      TESSEL_CUDA_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice),
                        "copying a test buffer");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(DeviceBuffer const&) = delete;
  T* data() const { return data_; }
  std::vector<T> to_host() const {
    std::vector<T> out(size_);
    if (size_ > 0)
      TESSEL_CUDA_CHECK(cudaMemcpy(out.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost),
                        "copying a test buffer");
    return out;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_;
};

template <class T>
struct Tol {
  static constexpr double atol = std::is_same_v<T, double>         ? 1e-10
                                 : std::is_same_v<T, float>        ? 1e-5
                                 : std::is_same_v<T, tessel::half> ? 1e-3
                                                                   : 5e-3;
  static constexpr double rtol = std::is_same_v<T, double>         ? 1e-9
                                 : std::is_same_v<T, float>        ? 5e-4
                                 : std::is_same_v<T, tessel::half> ? 1e-2
                                                                   : 5e-2;
};

template <class T>
double widen(T x) {
  return static_cast<double>(static_cast<accum_t<T>>(x));
}

// Within the tolerance of the precision P the values went through (by default their own type).
template <class P = void, class T>
::testing::AssertionResult close(std::vector<T> const& got, std::vector<double> const& want) {
  using Precision = std::conditional_t<std::is_void_v<P>, T, P>;
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i) {
    double const g = widen(got[i]);
    if (!(std::abs(g - want[i]) <= Tol<Precision>::atol + Tol<Precision>::rtol * std::abs(want[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << g << " vs " << want[i];
  }
  return ::testing::AssertionSuccess();
}

template <class T>
T store(double x) {
  if constexpr (std::is_same_v<T, double>)
    return x;
  else
    return T(static_cast<float>(x));
}

template <class T>
void check_against_reference(Problem p, ReferenceOptions const& o) {
  using C = accum_t<T>;
  for (auto* v : {&p.x, &p.w, &p.bias, &p.class_weights})
    for (auto& e : *v) e = widen(store<T>(e));  // the reference sees the rounded inputs
  ReferenceResult const want = reference(p, o);
  auto host = [](std::vector<double> const& v) {
    std::vector<T> out;
    for (double e : v) out.push_back(store<T>(e));
    return out;
  };
  index_t const bt = p.bt, h = p.h, v = p.v;
  index_t const n_loss = o.reduction == Reduction::none ? bt : 1;
  DeviceBuffer<T> x(host(p.x)), w(host(p.w)), bias(host(p.bias)), cw(host(p.class_weights));
  DeviceBuffer<std::int64_t> y(p.target);
  DeviceBuffer<C> loss{std::vector<C>(n_loss)}, z{std::vector<C>(n_loss)},
      dw{std::vector<C>(v * h)}, db{std::vector<C>(v)};
  DeviceBuffer<T> dx{std::vector<T>(bt * h)};
  DeviceBuffer<index_t> argmax{std::vector<index_t>(bt, -2)};
  DeviceBuffer<C> accuracy{std::vector<C>(n_loss)};
  Options<T, DeviceSpace> opt;
  opt.reduction = o.reduction;
  opt.ignore_index = o.ignore_index;
  opt.label_smoothing = o.label_smoothing;
  opt.lse_square_scale = o.lse_square_scale;
  opt.softcap = o.softcap;
  if (!p.bias.empty()) opt.bias = make_device_tensor(bias.data(), make_shape(v));
  if (!p.class_weights.empty()) opt.class_weights = make_device_tensor(cw.data(), make_shape(v));
  Outputs<T, DeviceSpace> out{.loss = make_device_tensor(loss.data(), make_shape(n_loss)),
                              .z_loss = make_device_tensor(z.data(), make_shape(n_loss)),
                              .grad_input = make_device_tensor(dx.data(), make_shape(bt, h)),
                              .grad_weight = make_device_tensor(dw.data(), make_shape(v, h))};
  if (!p.bias.empty()) out.grad_bias = make_device_tensor(db.data(), make_shape(v));
  out.argmax = make_device_tensor(argmax.data(), make_shape(bt));
  out.accuracy = make_device_tensor(accuracy.data(), make_shape(n_loss));
  forward(make_device_tensor(x.data(), make_shape(bt, h)),
          make_device_tensor(w.data(), make_shape(v, h)),
          make_device_tensor(y.data(), make_shape(bt)), opt, out);
  TESSEL_CUDA_CHECK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  EXPECT_TRUE(close(loss.to_host(), want.loss)) << "loss";
  EXPECT_TRUE(close(z.to_host(), want.z_loss)) << "z_loss";
  EXPECT_TRUE(close(dx.to_host(), want.grad_input)) << "grad_input";
  // grad_weight and grad_bias are accumulated in C, but from the logits' gradient rounded to T:
  // the device's GEMMs read T (16-bit products on the tensor cores, as Liger-Kernel's), so their
  // error is T's, not C's (the host path keeps that gradient in C; see flce/chunk_loop.hpp).
  EXPECT_TRUE(close<T>(dw.to_host(), want.grad_weight)) << "grad_weight";
  if (!p.bias.empty()) {
    EXPECT_TRUE(close<T>(db.to_host(), want.grad_bias)) << "grad_bias";
  }
  // The argmax: the reference's class, or one a near-tie within the tolerance may give; the
  // accuracy: what that argmax gives.
  std::vector<index_t> const classes = argmax.to_host();
  double hits = 0, kept = 0;
  std::vector<double> per_row;
  for (index_t i = 0; i < bt; ++i) {
    index_t const a = classes[i], m = want.argmax[i];
    if (a != m) {
      ASSERT_TRUE(a >= 0 && a < v && m >= 0) << "row " << i << ": " << a << " vs " << m;
      double const top = want.logits[i * v + m];
      EXPECT_LE(top - want.logits[i * v + a], Tol<T>::atol + Tol<T>::rtol * std::abs(top));
    }
    bool const ignored = p.target[i] == o.ignore_index;
    per_row.push_back(!ignored && a == p.target[i] ? 1.0 : 0.0);
    hits += per_row.back();
    kept += ignored ? 0 : 1;
  }
  std::vector<double> const acc = o.reduction == Reduction::none ? per_row
                                  : o.reduction == Reduction::sum
                                      ? std::vector<double>{hits}
                                      : std::vector<double>{kept != 0 ? hits / kept : 0.0};
  EXPECT_TRUE(close(accuracy.to_host(), acc)) << "accuracy";
}

template <class T>
class FlceCuda : public ::testing::Test {};
using StorageTypes = ::testing::Types<double, float, tessel::half, tessel::bfloat16>;
TYPED_TEST_SUITE(FlceCuda, StorageTypes);

TYPED_TEST(FlceCuda, MatchesTheReferenceForEveryReductionWithAllOptions) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none})
    for (bool options : {false, true}) {
      SCOPED_TRACE(std::string(reduction_name(r)) + (options ? " all options" : " plain"));
      // 300 rows: the device plan's chunks (64 rows, at most 1/4 of BT) do not divide BT; V is not a
      // multiple of the row kernel's 512 threads.
      Problem const p = random_problem(300, 96, 1000, 17u, options, options, options ? 0.2 : 0);
      ReferenceOptions o;
      o.reduction = r;
      if (options) {
        o.label_smoothing = 0.1;
        o.lse_square_scale = 1e-3;
        o.softcap = 4.0;
      }
      check_against_reference<TypeParam>(p, o);
    }
}

TYPED_TEST(FlceCuda, HandlesAnIgnoreIndexInsideTheVocabularyAndAllIgnoredRows) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem p = random_problem(64, 32, 77, 5u, true, true);
  for (std::size_t i = 0; i < p.target.size(); i += 2) p.target[i] = 7;
  ReferenceOptions o;
  o.ignore_index = 7;
  check_against_reference<TypeParam>(p, o);
  Problem all = random_problem(16, 8, 40, 6u, true, false, 1.0);
  check_against_reference<TypeParam>(all, {});  // loss 0 and zero gradients
}

TEST(FlceCudaF32, StaticShapesInstantiateTheRowKernelForTheirVocabulary) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem const p = random_problem(24, 16, 100, 8u);
  std::vector<float> xf(p.x.begin(), p.x.end()), wf(p.w.begin(), p.w.end());
  DeviceBuffer<float> x(xf), w(wf), loss{std::vector<float>(1)};
  DeviceBuffer<std::int64_t> y(p.target);
  forward(make_device_tensor(x.data(), make_shape(Int<24>{}, Int<16>{})),
          make_device_tensor(w.data(), make_shape(Int<100>{}, Int<16>{})),
          make_device_tensor(y.data(), make_shape(Int<24>{})), {},
          {.loss = make_device_tensor(loss.data(), make_shape(1))});
  EXPECT_TRUE(close(loss.to_host(), reference(p, {}).loss));
}

TEST(FlceCudaF32, StaticShapesLaunchTheRowKernelOfTheStaticPlan) {
  // The kernel a static call launches, named: its instantiation is part of this program.
  [[maybe_unused]] auto* const kernel =
      &exec::kernels::rows_kernel<StaticLoop::row_threads, StaticLoop::row_body>;
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  cudaFuncAttributes attributes{};
  TESSEL_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes");
  EXPECT_EQ(attributes.localSizeBytes, 0u);  // nothing spills
  EXPECT_GE(attributes.maxThreadsPerBlock, StaticLoop::row_threads);
}

// Sizes cuBLAS cannot take are refused before anything is queued (views of no memory: nothing is
// read, and no GPU is needed).
TEST(FlceCudaF32, SizesBeyondCublasAreRefusedBeforeAnyCudaCall) {
  index_t const h = index_t{1} << 31;
  float* const none = nullptr;
  std::int64_t* const no_targets = nullptr;
  std::string message;
  try {
    forward(make_device_tensor(static_cast<float const*>(none), make_shape(2, h)),
            make_device_tensor(static_cast<float const*>(none), make_shape(4, h)),
            make_device_tensor(static_cast<std::int64_t const*>(no_targets), make_shape(2)), {},
            {.loss = make_device_tensor(none, make_shape(1))});
  } catch (Error const& e) {
    message = e.what();
  }
  EXPECT_EQ(message,
            "the hidden size 2147483648 exceeds cuBLAS's 32-bit dimension limit "
            "(2147483647).");
}

TEST(FlceCudaF32, RunsOnTheCallersStream) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem const p = random_problem(70, 12, 90, 13u, true);
  ReferenceResult const want = reference(p, {});
  std::vector<float> xf(p.x.begin(), p.x.end()), wf(p.w.begin(), p.w.end()),
      bf(p.bias.begin(), p.bias.end());
  DeviceBuffer<float> x(xf), w(wf), b(bf), loss{std::vector<float>(1)},
      dx{std::vector<float>(70 * 12)}, db{std::vector<float>(90)};
  DeviceBuffer<std::int64_t> y(p.target);
  gpu::Stream const stream;
  forward(make_device_tensor(x.data(), make_shape(70, 12)),
          make_device_tensor(w.data(), make_shape(90, 12)),
          make_device_tensor(y.data(), make_shape(70)),
          {.bias = make_device_tensor(b.data(), make_shape(90))},
          {.loss = make_device_tensor(loss.data(), make_shape(1)),
           .grad_input = make_device_tensor(dx.data(), make_shape(70, 12)),
           .grad_bias = make_device_tensor(db.data(), make_shape(90))},
          exec::Cuda{stream});
  backward(
      2.0,
      Outputs<float, DeviceSpace>{.grad_input = make_device_tensor(dx.data(), make_shape(70, 12))},
      exec::Cuda{stream});
  stream.synchronize();
  EXPECT_TRUE(close(loss.to_host(), want.loss));
  std::vector<double> doubled(want.grad_input);
  for (double& e : doubled) e *= 2;
  EXPECT_TRUE(close(dx.to_host(), doubled));
  EXPECT_TRUE(close(db.to_host(), want.grad_bias));
}

TEST(FlceCudaF32, AnInvalidTargetThrowsBeforeAnyOutputIsWritten) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem p = random_problem(40, 8, 30, 9u);
  p.target[33] = 30;
  std::vector<float> xf(p.x.begin(), p.x.end()), wf(p.w.begin(), p.w.end());
  DeviceBuffer<float> x(xf), w(wf), loss{std::vector<float>(1, 5.0f)},
      dx{std::vector<float>(40 * 8, 5.0f)};
  DeviceBuffer<std::int64_t> y(p.target);
  std::string message;
  try {
    forward(make_device_tensor(x.data(), make_shape(40, 8)),
            make_device_tensor(w.data(), make_shape(30, 8)),
            make_device_tensor(y.data(), make_shape(40)), {},
            {.loss = make_device_tensor(loss.data(), make_shape(1)),
             .grad_input = make_device_tensor(dx.data(), make_shape(40, 8))});
  } catch (Error const& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "target 30 at row 33 is outside [0, 30) and is not ignore_index (-100).");
  EXPECT_EQ(loss.to_host(), std::vector<float>(1, 5.0f));
  EXPECT_EQ(dx.to_host(), std::vector<float>(40 * 8, 5.0f));
}

TEST(FlceCudaF32, BackwardScalesTheDeviceGradients) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem const p = random_problem(50, 12, 60, 10u, true);
  ReferenceOptions o;
  o.grad_output = 0.5;
  ReferenceResult const want = reference(p, o);
  std::vector<float> xf(p.x.begin(), p.x.end()), wf(p.w.begin(), p.w.end()),
      bf(p.bias.begin(), p.bias.end());
  DeviceBuffer<float> x(xf), w(wf), b(bf), dx{std::vector<float>(50 * 12)},
      dw{std::vector<float>(60 * 12)}, db{std::vector<float>(60)};
  DeviceBuffer<std::int64_t> y(p.target);
  Outputs<float, DeviceSpace> const out{
      .grad_input = make_device_tensor(dx.data(), make_shape(50, 12)),
      .grad_weight = make_device_tensor(dw.data(), make_shape(60, 12)),
      .grad_bias = make_device_tensor(db.data(), make_shape(60))};
  forward(make_device_tensor(x.data(), make_shape(50, 12)),
          make_device_tensor(w.data(), make_shape(60, 12)),
          make_device_tensor(y.data(), make_shape(50)),
          {.bias = make_device_tensor(b.data(), make_shape(60))}, out);
  backward(0.5, out);
  EXPECT_TRUE(close(dx.to_host(), want.grad_input));
  EXPECT_TRUE(close(dw.to_host(), want.grad_weight));
  EXPECT_TRUE(close(db.to_host(), want.grad_bias));
}

// accumulate on the device: the chunk loop is the host's, so this pins that the device GEMM and
// the grad_bias assignment keep what the buffers held.
TEST(FlceCudaF32, AccumulateAddsToTheDeviceGradients) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem const p = random_problem(50, 12, 60, 12u, true);
  ReferenceOptions o;
  o.reduction = Reduction::sum;
  ReferenceResult const want = reference(p, o);
  std::vector<float> xf(p.x.begin(), p.x.end()), wf(p.w.begin(), p.w.end()),
      bf(p.bias.begin(), p.bias.end());
  std::vector<float> dw0(60 * 12, 0.5f), db0(60, -1.0f);
  DeviceBuffer<float> x(xf), w(wf), b(bf), dw(dw0), db(db0);
  DeviceBuffer<std::int64_t> y(p.target);
  forward(make_device_tensor(x.data(), make_shape(50, 12)),
          make_device_tensor(w.data(), make_shape(60, 12)),
          make_device_tensor(y.data(), make_shape(50)),
          {.reduction = Reduction::sum,
           .bias = make_device_tensor(b.data(), make_shape(60)),
           .chunk_size = 16,
           .accumulate = true},
          {.grad_weight = make_device_tensor(dw.data(), make_shape(60, 12)),
           .grad_bias = make_device_tensor(db.data(), make_shape(60))});
  std::vector<double> want_dw = want.grad_weight, want_db = want.grad_bias;
  for (double& e : want_dw) e += 0.5;
  for (double& e : want_db) e -= 1.0;
  EXPECT_TRUE(close(dw.to_host(), want_dw));
  EXPECT_TRUE(close(db.to_host(), want_db));
}

TEST(FlceCudaF32, AllocatesItsScratchFromTheStreamOrderedPool) {
  TESSEL_REQUIRE_GPU("the CUDA FLCE path", "tests/flce");
  Problem const p = random_problem(256, 64, 3000, 11u);
  std::vector<float> xf(p.x.begin(), p.x.end()), wf(p.w.begin(), p.w.end());
  DeviceBuffer<float> x(xf), w(wf), loss{std::vector<float>(1)}, dx{std::vector<float>(256 * 64)};
  DeviceBuffer<std::int64_t> y(p.target);
  cudaMemPool_t pool;
  int device = 0;
  TESSEL_CUDA_CHECK(cudaGetDevice(&device), "cudaGetDevice");
  TESSEL_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t zero = 0, high = 0;
  TESSEL_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), "reset");
  FlcePlan const plan = forward(make_device_tensor(x.data(), make_shape(256, 64)),
                                make_device_tensor(w.data(), make_shape(3000, 64)),
                                make_device_tensor(y.data(), make_shape(256)), {},
                                {.loss = make_device_tensor(loss.data(), make_shape(1)),
                                 .grad_input = make_device_tensor(dx.data(), make_shape(256, 64))});
  TESSEL_CUDA_CHECK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  TESSEL_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), "high");
  EXPECT_GE(static_cast<index_t>(high), plan.scratch_bytes(DType::f32));
  EXPECT_LT(static_cast<index_t>(high), plan.scratch_bytes(DType::f32) + (index_t{2} << 20));
}

}  // namespace
