// run_tessel compiled once for the FLCE tests (tessel_flce_tests, and the MPI program's
// vocabulary-parallel tests): every storage type on every host executor.
#include "flce/harness.hpp"

#include <cstdint>
#include <vector>

namespace tessel::flce::test {

template <class T, class Executor>
FlceRun run_tessel(Problem const& p, ReferenceOptions const& o, index_t chunk_size, Wanted wanted,
                   Executor const& executor, dist::Communicator* communicator) {
  using C = accum_t<T>;
  auto x = to_storage<T>(p.x);
  auto w = to_storage<T>(p.w);
  auto bias = to_storage<T>(p.bias);
  auto cw = to_storage<T>(p.class_weights);
  std::vector<C> dy_rows(o.grad_output_rows.begin(), o.grad_output_rows.end());
  std::int64_t const loss_size = o.reduction == Reduction::none ? p.bt : 1;
  std::vector<C> loss(loss_size), z(loss_size), dw(p.v * p.h), db(p.v), lse(p.bt), logp(p.bt),
      entropy(p.bt), accuracy(loss_size);
  std::vector<index_t> argmax(p.bt, -2);
  std::vector<T> dx(p.bt * p.h);

  Options<T> opt;
  opt.reduction = o.reduction;
  opt.ignore_index = o.ignore_index;
  opt.label_smoothing = o.label_smoothing;
  opt.lse_square_scale = o.lse_square_scale;
  opt.softcap = o.softcap;
  opt.temperature = o.temperature;
  opt.shift_sequence_length = o.shift_sequence_length;
  opt.entropy_bonus = o.entropy_bonus;
  opt.grad_output = o.grad_output;
  opt.chunk_size = chunk_size;
  if (!p.bias.empty()) opt.bias = make_tensor(bias.data(), make_shape(p.v));
  if (!p.class_weights.empty()) opt.class_weights = make_tensor(cw.data(), make_shape(p.v));
  if (!dy_rows.empty()) opt.grad_output_rows = make_tensor(dy_rows.data(), make_shape(p.bt));
  std::vector<index_t> soft_classes(o.soft_classes.begin(), o.soft_classes.end());
  std::vector<C> soft_probs(o.soft_probs.begin(), o.soft_probs.end());
  if (o.soft_k > 0) {
    opt.soft_target_indices = make_tensor(static_cast<index_t const*>(soft_classes.data()),
                                          make_shape(p.bt, index_t{o.soft_k}));
    opt.soft_target_probs =
        make_tensor(static_cast<C const*>(soft_probs.data()), make_shape(p.bt, index_t{o.soft_k}));
    opt.soft_target_weight = o.soft_weight;
  }

  Outputs<T> out;
  if (wanted.loss) out.loss = make_tensor(loss.data(), make_shape(loss_size));
  if (wanted.z_loss) out.z_loss = make_tensor(z.data(), make_shape(loss_size));
  if (wanted.grad_input) out.grad_input = make_tensor(dx.data(), make_shape(p.bt, p.h));
  if (wanted.grad_weight) out.grad_weight = make_tensor(dw.data(), make_shape(p.v, p.h));
  if (wanted.grad_bias && !p.bias.empty()) out.grad_bias = make_tensor(db.data(), make_shape(p.v));
  if (wanted.lse) out.lse = make_tensor(lse.data(), make_shape(p.bt));
  if (wanted.target_logprob) out.target_logprob = make_tensor(logp.data(), make_shape(p.bt));
  if (wanted.entropy) out.entropy = make_tensor(entropy.data(), make_shape(p.bt));
  if (wanted.argmax) out.argmax = make_tensor(argmax.data(), make_shape(p.bt));
  if (wanted.accuracy) out.accuracy = make_tensor(accuracy.data(), make_shape(loss_size));

  FlceRun r;
  auto const input = make_tensor(x.data(), make_shape(p.bt, p.h));
  auto const weight = make_tensor(w.data(), make_shape(p.v, p.h));
  auto const target = make_tensor(p.target.data(), make_shape(p.bt));
  if (communicator != nullptr)
    r.plan = forward(input, weight, target, VocabParallel{communicator}, opt, out, executor).plan;
  else
    r.plan = forward(input, weight, target, opt, out, executor);
  r.loss = to_double(loss);
  r.z_loss = to_double(z);
  r.grad_input = to_double(dx);
  r.grad_weight = to_double(dw);
  r.grad_bias = to_double(db);
  r.lse = to_double(lse);
  r.target_logprob = to_double(logp);
  r.entropy = to_double(entropy);
  r.accuracy = to_double(accuracy);
  r.argmax.assign(argmax.begin(), argmax.end());
  return r;
}

// Every storage type on exec::Auto; the executor comparisons (chunk_loop_test.cpp) also run
// double, float and bfloat16 on exec::Serial and exec::OpenMP.
#define TESSEL_FLCE_TEST_RUN(T, X)                                                            \
  template FlceRun run_tessel<T, X>(Problem const&, ReferenceOptions const&, index_t, Wanted, \
                                    X const&, dist::Communicator*);
TESSEL_FLCE_TEST_RUN(double, exec::Auto)
TESSEL_FLCE_TEST_RUN(float, exec::Auto)
TESSEL_FLCE_TEST_RUN(half, exec::Auto)
TESSEL_FLCE_TEST_RUN(bfloat16, exec::Auto)
TESSEL_FLCE_TEST_RUN(double, exec::Serial)
TESSEL_FLCE_TEST_RUN(float, exec::Serial)
TESSEL_FLCE_TEST_RUN(bfloat16, exec::Serial)
TESSEL_FLCE_TEST_RUN(double, exec::OpenMP)
TESSEL_FLCE_TEST_RUN(float, exec::OpenMP)
TESSEL_FLCE_TEST_RUN(bfloat16, exec::OpenMP)
#undef TESSEL_FLCE_TEST_RUN

}  // namespace tessel::flce::test
