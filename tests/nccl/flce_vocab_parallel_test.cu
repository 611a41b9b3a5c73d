// Vocabulary-parallel FLCE on device tensors over NCCL (one GPU per rank): each rank's call on its
// slice of the weight against the single-process device call on the whole weight, every output,
// mean and none, with every option. Skipped, with a message, where there is no CUDA device; the
// same chunk loop and row bodies run on the host under MPI in mpi/flce_vocab_parallel_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/dist/nccl.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/flce/cuda.cuh>

#include "flce/reference.hpp"
#include "support/cuda.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

struct Results {
  std::vector<float> loss, lse, entropy, grad_input, grad_weight, grad_bias;
  std::vector<index_t> argmax;
};

// forward on the device for problem p (its weight rows [first, first + rows)), over `nccl` when
// given.
Results run(Problem const& p, Reduction r, std::int64_t first, std::int64_t rows,
            dist::NcclCommunicator* nccl, gpu::Stream const& stream) {
  auto as_float = [](std::vector<double> const& v, std::size_t from, std::size_t n) {
    return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(from),
                              v.begin() + static_cast<std::ptrdiff_t>(from + n));
  };
  index_t const bt = p.bt, h = p.h, loss_n = r == Reduction::none ? bt : 1;
  auto x = tessel::test::device_vector(as_float(p.x, 0, p.x.size()));
  auto w = tessel::test::device_vector(as_float(p.w, first * h, rows * h));
  auto b = tessel::test::device_vector(as_float(p.bias, first, rows));
  auto cw = tessel::test::device_vector(as_float(p.class_weights, first, rows));
  auto y = tessel::test::device_vector(p.target);
  auto loss = tessel::test::device_vector(std::vector<float>(loss_n));
  auto lse = tessel::test::device_vector(std::vector<float>(bt));
  auto entropy = tessel::test::device_vector(std::vector<float>(bt));
  auto dx = tessel::test::device_vector(std::vector<float>(bt * h));
  auto dw = tessel::test::device_vector(std::vector<float>(rows * h));
  auto db = tessel::test::device_vector(std::vector<float>(rows));
  auto argmax = tessel::test::device_vector(std::vector<index_t>(bt));
  Options<float, DeviceSpace> o{.reduction = r,
                                .label_smoothing = 0.1,
                                .lse_square_scale = 1e-3,
                                .softcap = 4,
                                .temperature = 0.9,
                                .entropy_bonus = 0.05,
                                .class_weights = make_device_tensor(cw.data(), make_shape(rows)),
                                .bias = make_device_tensor(b.data(), make_shape(rows))};
  Outputs<float, DeviceSpace> out{.loss = make_device_tensor(loss.data(), make_shape(loss_n)),
                                  .grad_input = make_device_tensor(dx.data(), make_shape(bt, h)),
                                  .grad_weight = make_device_tensor(dw.data(), make_shape(rows, h)),
                                  .grad_bias = make_device_tensor(db.data(), make_shape(rows)),
                                  .lse = make_device_tensor(lse.data(), make_shape(bt)),
                                  .entropy = make_device_tensor(entropy.data(), make_shape(bt)),
                                  .argmax = make_device_tensor(argmax.data(), make_shape(bt))};
  auto const input = make_device_tensor(x.data(), make_shape(bt, h));
  auto const weight = make_device_tensor(w.data(), make_shape(rows, h));
  auto const target = make_device_tensor(y.data(), make_shape(bt));
  if (nccl != nullptr)
    forward(input, weight, target, VocabParallel{nccl}, o, out, exec::Cuda{stream.get()});
  else
    forward(input, weight, target, o, out, exec::Cuda{stream.get()});
  stream.synchronize();
  auto host = [](auto const& d) { return tessel::test::host_vector(d); };
  return {host(loss), host(lse), host(entropy), host(dx), host(dw), host(db), host(argmax)};
}

::testing::AssertionResult close(std::vector<float> const& got, std::vector<float> const& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-5 + 5e-4 * std::abs(want[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

TEST(NcclFlce, VocabParallelEqualsTheSingleProcessDeviceCall) {
  TESSEL_REQUIRE_GPU("vocabulary-parallel FLCE over NCCL",
                     "flce/vocab_parallel_test.cpp and mpi/flce_vocab_parallel_test.cpp");
  dist::MpiCommunicator mpi;
  gpu::Stream const stream;
  dist::NcclCommunicator nccl(mpi, stream.get());
  Problem const p = random_problem(40, 24, 101, 17u, true, true, 0.2);
  std::int64_t const base = p.v / mpi.size(), extra = p.v % mpi.size();
  std::int64_t const first = mpi.rank() * base + std::min<std::int64_t>(mpi.rank(), extra);
  std::int64_t const rows = base + (mpi.rank() < extra ? 1 : 0);
  for (Reduction r : {Reduction::mean, Reduction::none}) {
    SCOPED_TRACE(std::string(reduction_name(r)));
    Results const whole = run(p, r, 0, p.v, nullptr, stream);
    Results const mine = run(p, r, first, rows, &nccl, stream);
    EXPECT_TRUE(close(mine.loss, whole.loss)) << "loss";
    EXPECT_TRUE(close(mine.lse, whole.lse)) << "lse";
    EXPECT_TRUE(close(mine.entropy, whole.entropy)) << "entropy";
    EXPECT_TRUE(close(mine.grad_input, whole.grad_input)) << "grad_input";
    EXPECT_TRUE(close(mine.grad_weight,
                      std::vector<float>(whole.grad_weight.begin() + first * p.h,
                                         whole.grad_weight.begin() + (first + rows) * p.h)))
        << "grad_weight";
    EXPECT_TRUE(close(mine.grad_bias, std::vector<float>(whole.grad_bias.begin() + first,
                                                         whole.grad_bias.begin() + first + rows)))
        << "grad_bias";
    EXPECT_EQ(mine.argmax, whole.argmax);
  }
}

}  // namespace
