// `tessel flce --device cuda`: the job's arrays copied to the device, the CUDA forward on a stream
// of its own, the results copied back. Built only with TESSEL_CUDA.
#include <cstdint>
#include <vector>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/flce/cuda.cuh>
#include <tessel/tensor/tensor.hpp>

#include "flce_job.hpp"

namespace tessel::cli {

namespace {

// A flat host vector as a tensor (the side copies read or write).
template <class V>
auto flat(std::vector<V>& host) {
  return make_tensor(host.data(), make_shape(static_cast<index_t>(host.size())));
}

// A device tensor holding a copy of `host` (queued on `stream`).
template <class V>
auto to_device(std::vector<V>& host, cudaStream_t stream) {
  auto device = make_device_tensor<V>(make_shape(static_cast<index_t>(host.size())));
  gpu::copy_to_device(device, flat(host), stream);
  return device;
}

}  // namespace

template <class T>
void run_flce_cuda(FlceJob<T>& job) {
  using C = flce::accum_t<T>;
  gpu::Stream const stream;
  auto const x = to_device(job.input, stream);
  auto const w = to_device(job.weight, stream);
  auto const bias = to_device(job.bias, stream);
  auto const cw = to_device(job.class_weights, stream);
  auto const y = to_device(job.target, stream);
  auto const rows = to_device(job.grad_output_rows, stream);
  auto const soft_indices = to_device(job.soft_indices, stream);
  auto const soft_probs = to_device(job.soft_probs, stream);
  auto const loss = to_device(job.loss, stream);
  auto const z = to_device(job.z_loss, stream);
  auto const dx = to_device(job.grad_input, stream);
  auto const dw = to_device(job.grad_weight, stream);
  auto const db = to_device(job.grad_bias, stream);
  auto const lse = to_device(job.lse, stream);
  auto const logp = to_device(job.target_logprob, stream);
  auto const entropy = to_device(job.entropy, stream);
  auto const argmax = to_device(job.argmax, stream);
  auto const accuracy = to_device(job.accuracy, stream);

  flce::Options<T, DeviceSpace> o;
  o.reduction = job.reduction;
  o.ignore_index = job.ignore_index;
  o.label_smoothing = job.label_smoothing;
  o.lse_square_scale = job.lse_square_scale;
  o.softcap = job.softcap;
  o.temperature = job.temperature;
  o.shift_sequence_length = job.shift_sequence_length;
  o.entropy_bonus = job.entropy_bonus;
  o.grad_output = job.grad_output;
  if (!job.bias.empty())
    o.bias = make_device_tensor(static_cast<T const*>(bias.data()), make_shape(job.vocab));
  if (!job.class_weights.empty())
    o.class_weights = make_device_tensor(static_cast<T const*>(cw.data()), make_shape(job.vocab));
  if (!job.grad_output_rows.empty())
    o.grad_output_rows = make_device_tensor(static_cast<C const*>(rows.data()), make_shape(job.bt));
  if (job.soft_k > 0) {
    o.soft_target_indices = make_device_tensor(
        static_cast<std::int64_t const*>(soft_indices.data()), make_shape(job.bt, job.soft_k));
    o.soft_target_probs = make_device_tensor(static_cast<C const*>(soft_probs.data()),
                                             make_shape(job.bt, job.soft_k));
  }
  o.soft_target_weight = job.soft_target_weight;
  flce::Outputs<T, DeviceSpace> out;
  out.loss = make_device_tensor(loss.data(), make_shape(job.loss_size()));
  if (job.want_z_loss) out.z_loss = make_device_tensor(z.data(), make_shape(job.loss_size()));
  if (job.want_grad_input)
    out.grad_input = make_device_tensor(dx.data(), make_shape(job.bt, job.hidden));
  if (job.want_grad_weight)
    out.grad_weight = make_device_tensor(dw.data(), make_shape(job.vocab, job.hidden));
  if (job.want_grad_bias) out.grad_bias = make_device_tensor(db.data(), make_shape(job.vocab));
  if (job.want_lse) out.lse = make_device_tensor(lse.data(), make_shape(job.bt));
  if (job.want_target_logprob)
    out.target_logprob = make_device_tensor(logp.data(), make_shape(job.bt));
  if (job.want_entropy) out.entropy = make_device_tensor(entropy.data(), make_shape(job.bt));
  if (job.want_argmax) out.argmax = make_device_tensor(argmax.data(), make_shape(job.bt));
  if (job.want_accuracy)
    out.accuracy = make_device_tensor(accuracy.data(), make_shape(job.loss_size()));
  flce::forward(
      make_device_tensor(static_cast<T const*>(x.data()), make_shape(job.bt, job.hidden)),
      make_device_tensor(static_cast<T const*>(w.data()), make_shape(job.vocab, job.hidden)),
      make_device_tensor(static_cast<std::int64_t const*>(y.data()), make_shape(job.bt)), o, out,
      exec::Cuda{stream});
  gpu::copy_to_host(flat(job.loss), loss, stream);
  gpu::copy_to_host(flat(job.z_loss), z, stream);
  gpu::copy_to_host(flat(job.grad_input), dx, stream);
  gpu::copy_to_host(flat(job.grad_weight), dw, stream);
  gpu::copy_to_host(flat(job.grad_bias), db, stream);
  gpu::copy_to_host(flat(job.lse), lse, stream);
  gpu::copy_to_host(flat(job.target_logprob), logp, stream);
  gpu::copy_to_host(flat(job.entropy), entropy, stream);
  gpu::copy_to_host(flat(job.argmax), argmax, stream);
  gpu::copy_to_host(flat(job.accuracy), accuracy, stream);
  stream.synchronize();
}

template void run_flce_cuda<float>(FlceJob<float>&);
template void run_flce_cuda<double>(FlceJob<double>&);
template void run_flce_cuda<half>(FlceJob<half>&);
template void run_flce_cuda<bfloat16>(FlceJob<bfloat16>&);

}  // namespace tessel::cli
