// tessel._tessel: the Python extension. A thin layer over the headers: arrays arrive through
// DLPack / the buffer protocol as nanobind ndarray views (never copied, never converted), become
// tessel tensor views over the caller's memory, and go to flce::forward. All validation of
// shapes, layouts, options and targets is tessel's own, so its sentences reach Python unchanged
// (tessel::Error -> ValueError). The binding only checks what tessel's types cannot see: an
// object's rank, device and dtype. On the host: f32, f64, f16 and bf16 storage, each instantiated
// in its own translation unit (flce.hpp), with i64 or i32 targets; with TESSEL_PYTHON_CUDA, also
// CUDA arrays with i64 targets (flce_cuda.hpp), into outputs the caller allocated.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arrays.hpp"
#include "flce.hpp"
#if defined(TESSEL_PYTHON_CUDA)
#include <type_traits>

#include "flce_cuda.hpp"
#endif

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>
#include <tessel/core/float16.hpp>
#include <tessel/flce/plan.hpp>

namespace nb = nanobind;

namespace {

using namespace tessel_python;

// The extras named by `names` (flce::Outputs' field names, in any order, repeats allowed).
// @post an unknown name is refused with a sentence naming it and the known ones (ValueError)
FlceExtras parse_extras(std::vector<std::string> const& names) {
  FlceExtras extras;
  for (std::string const& name : names) {
    if (name == "z_loss")
      extras.z_loss = true;
    else if (name == "lse")
      extras.lse = true;
    else if (name == "target_logprob")
      extras.target_logprob = true;
    else if (name == "entropy")
      extras.entropy = true;
    else if (name == "argmax")
      extras.argmax = true;
    else if (name == "accuracy")
      extras.accuracy = true;
    else
      refuse(sentence("return_extras names '", name,
                      "', which is not an output of tessel's FLCE; the extras are z_loss, lse, "
                      "target_logprob, entropy, argmax and accuracy."));
  }
  return extras;
}

// The scalar options of either binding, from the dict tessel's Python side fills with every key
// (tessel.linear_cross_entropy's keyword names); a value of the wrong type is a TypeError naming
// it, a wrong value tessel's ValueError.
FlceScalars parse_scalars(nb::dict const& d) {
  return {.reduction = tessel::flce::parse_reduction(dict_option<std::string>(d, "reduction")),
          .ignore_index = dict_option<std::int64_t>(d, "ignore_index"),
          .shift_sequence_length = dict_option<std::int64_t>(d, "shift_sequence_length"),
          .label_smoothing = dict_option<double>(d, "label_smoothing"),
          .lse_square_scale = dict_option<double>(d, "lse_square_scale"),
          .softcap = dict_option<double>(d, "softcap"),
          .temperature = dict_option<double>(d, "temperature"),
          .entropy_bonus = dict_option<double>(d, "entropy_bonus"),
          .soft_target_weight = dict_option<double>(d, "soft_target_weight"),
          .chunk_size = dict_option<std::int64_t>(d, "chunk_size")};
}

nb::tuple linear_cross_entropy(InArray const& input, InArray const& weight, InArray const& target,
                               InArray const& bias, InArray const& class_weights,
                               InArray const& grad_output_rows, InArray const& soft_target_indices,
                               InArray const& soft_target_probs, nb::dict const& options,
                               bool grad_input, bool grad_weight, bool grad_bias,
                               std::vector<std::string> const& extras) {
  check_host(input, "input");
  check_rank(input, "input", 2, "(rows, hidden)");
  check_host(target, "target");
  check_rank(target, "target", 1, "(rows)");
  std::optional<DType> const target_dtype = dtype_of(target);
  if (target_dtype != DType::i64 && target_dtype != DType::i32)
    refuse(sentence("target has dtype ", dtype_text(target),
                    " but class indices must be i64 (int64) or i32 (int32)."));
  FlceCall const call{.input = input,
                      .weight = weight,
                      .target = target,
                      .bias = bias,
                      .class_weights = class_weights,
                      .grad_output_rows = grad_output_rows,
                      .soft_target_indices = soft_target_indices,
                      .soft_target_probs = soft_target_probs,
                      .scalars = parse_scalars(options),
                      .grad_input = grad_input,
                      .grad_weight = grad_weight,
                      .grad_bias = grad_bias,
                      .extras = parse_extras(extras)};
  // One translation unit per storage type (flce.hpp); no fallback type.
  std::optional<DType> const dtype = dtype_of(input);
  if (dtype == DType::f32) return run_linear_cross_entropy<float>(call);
  if (dtype == DType::f64) return run_linear_cross_entropy<double>(call);
  if (dtype == DType::f16) return run_linear_cross_entropy<tessel::half>(call);
  if (dtype == DType::bf16) return run_linear_cross_entropy<tessel::bfloat16>(call);
  refuse(sentence("input has dtype ", dtype_text(input),
                  "; tessel's FLCE computes on f32 (float32), f64 (float64), f16 (float16) and "
                  "bf16 (bfloat16)."));
}

#if defined(TESSEL_PYTHON_CUDA)
// ---- CUDA tensors (flce_cuda.hpp): PyTorch allocates the outputs, tessel queues the call on the
// stream PyTorch passes (its current stream for the tensors' device) ----

using OutArray = nb::ndarray<>;

template <class Array>
DeviceMatrix device_matrix(Array const& a) {
  return {const_cast<void*>(static_cast<void const*>(a.data())), static_cast<index_t>(a.shape(0)),
          static_cast<index_t>(a.shape(1)), a.stride(0), a.stride(1)};
}
template <class Array>
DeviceVector device_vector(Array const& a) {
  return {const_cast<void*>(static_cast<void const*>(a.data())), static_cast<index_t>(a.shape(0)),
          a.stride(0)};
}

// An optional array of the call: on the input's device, of the given rank and dtype; absent
// (invalid) stays a null description.
template <class Array, class Description>
void describe(Array const& a, char const* name, std::size_t rank, char const* modes, DType dtype,
              char const* dtype_reason, int device, Description& out) {
  if (!a.is_valid()) return;
  check_on_cuda_device(a, name, device);
  check_rank_and_dtype(a, name, rank, modes, dtype, dtype_reason);
  if constexpr (std::is_same_v<Description, DeviceMatrix>)
    out = device_matrix(a);
  else
    out = device_vector(a);
}

// The outputs arrive in a dict from their names (flce::Outputs' fields) to arrays; the loss-like
// ones (loss, z_loss, accuracy) hold one element for mean and sum, which FLCE writes as a
// one-element vector.
void describe_output(nb::dict const& outputs, char const* name, std::size_t rank, DType dtype,
                     int device, DeviceVector& out) {
  if (!outputs.contains(name)) return;
  auto const a = nb::cast<OutArray>(outputs[name]);
  check_on_cuda_device(a, name, device);
  if (dtype_of(a) != dtype || a.ndim() != rank)
    refuse(sentence("output ", name, " must have dtype ", tessel::dtype_name(dtype), " and ", rank,
                    " dimensions."));
  out = rank == 0 ? DeviceVector{a.data(), 1, 1} : device_vector(a);
}
void describe_output(nb::dict const& outputs, char const* name, DType dtype, int device,
                     DeviceMatrix& out) {
  if (!outputs.contains(name)) return;
  auto const a = nb::cast<OutArray>(outputs[name]);
  check_on_cuda_device(a, name, device);
  if (dtype_of(a) != dtype || a.ndim() != 2)
    refuse(sentence("output ", name, " must have dtype ", tessel::dtype_name(dtype),
                    " and 2 dimensions."));
  out = device_matrix(a);
}

// tessel.torch's CUDA path: the same arguments as linear_cross_entropy, the outputs PyTorch
// allocated on the input's device (a dict; those left out are not computed) and the stream.
void linear_cross_entropy_cuda(InArray const& input, InArray const& weight, InArray const& target,
                               InArray const& bias, InArray const& class_weights,
                               InArray const& grad_output_rows, InArray const& soft_target_indices,
                               InArray const& soft_target_probs, nb::dict const& options,
                               nb::dict const& outputs, std::uintptr_t stream) {
  if (input.device_type() != nb::device::cuda::value)
    refuse(sentence("input lives on DLPack device type ", input.device_type(),
                    ", not on a CUDA device (type 2)."));
  int const device = input.device_id();
  check_rank(input, "input", 2, "(rows, hidden)");
  std::optional<DType> const dtype = dtype_of(input);
  if (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::f16 && dtype != DType::bf16)
    refuse(sentence("input has dtype ", dtype_text(input),
                    "; tessel's FLCE computes on f32 (float32), f64 (float64), f16 (float16) and "
                    "bf16 (bfloat16)."));
  DType const t = *dtype;
  DType const c = t == DType::f64 ? DType::f64 : DType::f32;
  check_on_cuda_device(target, "target", device);
  check_rank(target, "target", 1, "(rows)");
  if (dtype_of(target) != DType::i64)
    refuse(sentence("target has dtype ", dtype_text(target),
                    " but class indices on CUDA must be i64 (int64): .long()."));
  DeviceFlceCall call;
  call.dtype = t;
  call.device = device;
  call.stream = stream;
  call.input = device_matrix(input);
  call.target = device_vector(target);
  describe(weight, "weight", 2, "(vocab, hidden)", t, "input's", device, call.weight);
  describe(bias, "bias", 1, "(vocab)", t, "input's", device, call.bias);
  describe(class_weights, "class_weights", 1, "(vocab)", t, "input's", device, call.class_weights);
  describe(grad_output_rows, "grad_output_rows", 1, "(rows)", c, "the computation's", device,
           call.grad_output_rows);
  describe(soft_target_indices, "soft_target_indices", 2, "(rows, K)", DType::i64,
           "the class indices'", device, call.soft_target_indices);
  describe(soft_target_probs, "soft_target_probs", 2, "(rows, K)", c, "the computation's", device,
           call.soft_target_probs);
  call.scalars = parse_scalars(options);
  std::size_t const loss_rank = call.scalars.reduction == tessel::flce::Reduction::none ? 1 : 0;
  describe_output(outputs, "loss", loss_rank, c, device, call.loss);
  describe_output(outputs, "z_loss", loss_rank, c, device, call.z_loss);
  describe_output(outputs, "accuracy", loss_rank, c, device, call.accuracy);
  describe_output(outputs, "lse", 1, c, device, call.lse);
  describe_output(outputs, "target_logprob", 1, c, device, call.target_logprob);
  describe_output(outputs, "entropy", 1, c, device, call.entropy);
  describe_output(outputs, "argmax", 1, DType::i64, device, call.argmax);
  describe_output(outputs, "grad_bias", 1, c, device, call.grad_bias);
  describe_output(outputs, "grad_input", t, device, call.grad_input);
  describe_output(outputs, "grad_weight", c, device, call.grad_weight);
  // The descriptions hold no Python objects; the queued work outlives nothing they point to
  // (PyTorch's caching allocator keeps the memory for its stream).
  nb::gil_scoped_release released;
  run_linear_cross_entropy_cuda(call);
}
#endif

// The host plan of a call: chunk rows, chunk count and scratch bytes for the storage dtype.
nb::dict flce_host_plan(index_t bt, index_t hidden, index_t vocab, std::string_view dtype) {
  tessel::flce::FlcePlan const plan = tessel::flce::make_host_plan(bt, hidden, vocab);
  nb::dict d;
  d["bt"] = plan.bt;
  d["hidden"] = plan.hidden;
  d["vocab"] = plan.vocab;
  d["chunk_size"] = plan.chunk_size;
  d["num_chunks"] = plan.num_chunks;
  d["scratch_bytes"] = plan.scratch_bytes(tessel::parse_dtype(dtype), tessel::flce::Device::host);
  return d;
}

}  // namespace

NB_MODULE(_tessel, m) {
  m.doc() = "tessel's C++ core; use the tessel package (tessel.linear_cross_entropy, tessel.plan).";
  nb::register_exception_translator([](std::exception_ptr const& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (tessel::Error const& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  // Both FLCE bindings: the arrays, the optional ones by keyword, and the scalar options as one
  // dict (parse_scalars).
  m.def("linear_cross_entropy", &linear_cross_entropy, nb::arg("input"), nb::arg("weight"),
        nb::arg("target"), nb::arg("bias").none(), nb::kw_only(), nb::arg("class_weights").none(),
        nb::arg("grad_output_rows").none(), nb::arg("soft_target_indices").none(),
        nb::arg("soft_target_probs").none(), nb::arg("options"), nb::arg("grad_input"),
        nb::arg("grad_weight"), nb::arg("grad_bias"), nb::arg("extras"),
        "(loss, grad_input, grad_weight, grad_bias, {extra name: array}) of flce::forward; see "
        "tessel.linear_cross_entropy.");
  m.def("flce_host_plan", &flce_host_plan, nb::arg("bt"), nb::arg("hidden"), nb::arg("vocab"),
        nb::arg("dtype"), "flce::make_host_plan as a dict; see tessel.plan.flce.");
#if defined(TESSEL_PYTHON_CUDA)
  m.def("linear_cross_entropy_cuda", &linear_cross_entropy_cuda, nb::arg("input"),
        nb::arg("weight"), nb::arg("target"), nb::arg("bias").none(), nb::kw_only(),
        nb::arg("class_weights").none(), nb::arg("grad_output_rows").none(),
        nb::arg("soft_target_indices").none(), nb::arg("soft_target_probs").none(),
        nb::arg("options"), nb::arg("outputs"), nb::arg("stream"),
        "flce::forward on CUDA arrays into the given outputs, queued on `stream` (a "
        "cudaStream_t as an integer); see tessel.torch.linear_cross_entropy.");
#endif
  bind_shampoo(m);
}
