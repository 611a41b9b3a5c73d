// `tessel plan flce` (the FLCE chunk plan as JSON) and `tessel flce` (the loss and gradients of
// cross_entropy(input @ weight.T + bias, target) over .npy files, for cross-checking tessel
// against PyTorch). Errors are one sentence; on any error no output file is left behind. A run
// writes the outputs it is asked for (at least one) and prints one line of JSON saying where.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/flce/plan.hpp>
#include <tessel/flce/vocab_parallel.hpp>
#if defined(TESSEL_CLI_MPI)
#include <tessel/dist/mpi.hpp>
#endif
#include <tessel/io/npy.hpp>
#include <tessel/tensor/tensor.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "flce_job.hpp"

namespace tessel::cli {

namespace {

using tessel::detail::sentence;
using tessel::detail::throw_error;

// ---- plan flce ----

struct PlanFlceOptions {
  std::string bt, hidden, vocab;
  std::string dtype = "f32";
  std::string device;  // empty: Liger-Kernel's plan (make_plan), with CUDA's scratch
  std::string chunk_size;
};

flce::Device parse_device(std::string_view text, std::string_view option) {
  if (text == "cuda") return flce::Device::cuda;
  if (text == "host") return flce::Device::host;
  throw_error(sentence(option, ": \"", text, "\" is not a device; use host or cuda."));
}

DType parse_flce_dtype(std::string_view text) {
  DType const d = parse_dtype(text);
  if (d != DType::f32 && d != DType::f64 && d != DType::f16 && d != DType::bf16)
    throw_error(
        sentence("--dtype: FLCE computes on f32, f64, f16 or bf16, not ", dtype_name(d), "."));
  return d;
}

void run_plan_flce(PlanFlceOptions const& o) {
  auto const bt = parse_integer(o.bt, "--bt");
  auto const h = parse_integer(o.hidden, "--hidden");
  auto const v = parse_integer(o.vocab, "--vocab");
  DType const dtype = parse_flce_dtype(o.dtype);
  flce::Device const device =
      o.device.empty() ? flce::Device::cuda : parse_device(o.device, "--device");
  flce::FlcePlan const plan =
      !o.chunk_size.empty() ? flce::make_plan(bt, h, v, parse_integer(o.chunk_size, "--chunk-size"))
      : o.device.empty()    ? flce::make_plan(bt, h, v)
      : device == flce::Device::host ? flce::make_host_plan(bt, h, v)
                                     : flce::make_device_plan(bt, h, v);
  std::cout << json_line({{"chunk_size", plan.chunk_size},
                          {"num_chunks", plan.num_chunks},
                          {"scratch_bytes", plan.scratch_bytes(dtype, device)}})
            << '\n';
}

// ---- flce ----

struct FlceOptions {
  std::string input, weight, target, bias, class_weights;
  std::string reduction = "mean";
  std::string ignore_index = "-100";
  std::string label_smoothing = "0", lse_square_scale = "0", softcap = "0", temperature = "1";
  std::string shift_sequence_length = "0", entropy_bonus = "0";
  std::string soft_target_indices, soft_target_probs, soft_target_weight = "1";
  std::string dtype = "f32";
  std::string grad_output;
  std::string device = "host";
  std::string loss_out, z_loss_out, grad_input_out, grad_weight_out, grad_bias_out, lse_out,
      target_logprob_out, entropy_out, argmax_out, accuracy_out;
  bool vocab_parallel = false;
};

// Each output: its name in the printed summary (flce::Outputs' member), its option and its path
// ("" when not asked for).
struct OutputFile {
  char const* name;
  char const* option;
  std::string const* path;
};

std::vector<OutputFile> output_files(FlceOptions const& o) {
  return {{"loss", "--loss-out", &o.loss_out},
          {"z_loss", "--z-loss-out", &o.z_loss_out},
          {"grad_input", "--grad-input-out", &o.grad_input_out},
          {"grad_weight", "--grad-weight-out", &o.grad_weight_out},
          {"grad_bias", "--grad-bias-out", &o.grad_bias_out},
          {"lse", "--lse-out", &o.lse_out},
          {"target_logprob", "--target-logprob-out", &o.target_logprob_out},
          {"entropy", "--entropy-out", &o.entropy_out},
          {"argmax", "--argmax-out", &o.argmax_out},
          {"accuracy", "--accuracy-out", &o.accuracy_out}};
}

// A float32/float64 array of the given rank, read from `path` (named by `option` in errors).
NpyArray read_float_array(std::string const& path, char const* option, std::size_t rank,
                          char const* what) {
  NpyArray a = read_npy(path);
  if (a.dtype != DType::f32 && a.dtype != DType::f64)
    throw_error(sentence(option, " ", path, " holds ", dtype_name(a.dtype),
                         "; FLCE reads float32 or float64 arrays."));
  if (a.shape.size() != rank)
    throw_error(sentence(option, " ", path, " has shape ", tessel::detail::shape_text(a.shape),
                         "; FLCE needs ", what, "."));
  return a;
}

template <class T>
std::vector<T> as_storage(NpyArray const& a) {
  if constexpr (std::is_same_v<T, double>) {
    return a.as<double>();
  } else {
    // float64 files round once, to float, then (16-bit) to T.
    std::vector<float> f = a.as<float>();
    std::vector<T> out;
    out.reserve(f.size());
    for (float x : f) out.push_back(T(x));
    return out;
  }
}

// Output files are first written as "<path>.partial" and renamed only once every one has been
// written, so a failed write leaves none behind. A file already at an output path is first moved
// to "<path>.previous"; if a later rename fails, the outputs renamed so far are removed and the
// previous files put back, so a failed command leaves the outputs as they were (short of a crash
// between two renames).
class OutputSet {
 public:
  void add(std::string const& path, DType dtype, std::vector<std::int64_t> shape,
           std::vector<std::byte> bytes) {
    pending_.push_back({path, dtype, std::move(shape), std::move(bytes)});
  }
  void commit() {
    std::vector<std::filesystem::path> written;
    try {
      for (auto const& p : pending_) {
        std::filesystem::path partial = p.path + ".partial";
        write_npy(partial, p.dtype, p.shape, p.bytes.data());
        written.push_back(partial);
      }
    } catch (...) {
      std::error_code ignored;
      for (auto const& w : written) std::filesystem::remove(w, ignored);
      throw;
    }
    std::vector<bool> saved(pending_.size(), false);  // a previous file moved aside
    auto previous = [&](std::size_t i) {
      return std::filesystem::path(pending_[i].path + ".previous");
    };
    // Undoes outputs [0, done) and the aside-move of output `done` (if any), removes the partials
    // not yet renamed, and throws the sentence.
    auto roll_back = [&](std::size_t done, std::string const& message) {
      std::error_code ignored;
      for (std::size_t k = done; k < written.size(); ++k)
        std::filesystem::remove(written[k], ignored);
      for (std::size_t k = 0; k <= done && k < pending_.size(); ++k) {
        if (k < done) std::filesystem::remove(pending_[k].path, ignored);
        if (saved[k]) std::filesystem::rename(previous(k), pending_[k].path, ignored);
      }
      throw_error(message);
    };
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      std::error_code ec;
      auto const& dest = pending_[i].path;
      if (std::filesystem::is_regular_file(dest, ec)) {
        std::filesystem::rename(dest, previous(i), ec);
        if (ec)
          roll_back(i, sentence("cannot move ", dest, " aside to ", previous(i).string(), ": ",
                                ec.message(), "."));
        saved[i] = true;
      }
      std::filesystem::rename(written[i], dest, ec);
      if (ec)
        roll_back(i, sentence("cannot rename ", written[i].string(), " to ", dest, ": ",
                              ec.message(), "."));
    }
    std::error_code ignored;
    for (std::size_t i = 0; i < pending_.size(); ++i)
      if (saved[i]) std::filesystem::remove(previous(i), ignored);
  }

 private:
  struct Pending {
    std::string path;
    DType dtype;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Pending> pending_;
};

// Values as the output dtype (float32, or float64 for --dtype f64), as bytes.
template <class Out, class V>
std::vector<std::byte> output_bytes(std::vector<V> const& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(Out));
  for (std::size_t i = 0; i < values.size(); ++i) {
    Out const x = static_cast<Out>(static_cast<flce::accum_t<V>>(values[i]));
    std::memcpy(bytes.data() + i * sizeof(Out), &x, sizeof(Out));
  }
  return bytes;
}

// With a communicator, the vocabulary-parallel call: job's weight, bias and class weights (and
// grad_weight, grad_bias) are this rank's slice.
template <class T>
void run_host(FlceJob<T>& job, dist::Communicator* communicator = nullptr) {
  using C = flce::accum_t<T>;
  flce::Options<T> o;
  o.reduction = job.reduction;
  o.ignore_index = job.ignore_index;
  o.label_smoothing = job.label_smoothing;
  o.lse_square_scale = job.lse_square_scale;
  o.softcap = job.softcap;
  o.temperature = job.temperature;
  o.shift_sequence_length = job.shift_sequence_length;
  o.entropy_bonus = job.entropy_bonus;
  o.grad_output = job.grad_output;
  if (!job.bias.empty()) o.bias = make_tensor(job.bias.data(), make_shape(job.vocab));
  if (!job.class_weights.empty())
    o.class_weights = make_tensor(job.class_weights.data(), make_shape(job.vocab));
  if (!job.grad_output_rows.empty())
    o.grad_output_rows =
        make_tensor(static_cast<C const*>(job.grad_output_rows.data()), make_shape(job.bt));
  if (job.soft_k > 0) {
    o.soft_target_indices = make_tensor(static_cast<std::int64_t const*>(job.soft_indices.data()),
                                        make_shape(job.bt, job.soft_k));
    o.soft_target_probs =
        make_tensor(static_cast<C const*>(job.soft_probs.data()), make_shape(job.bt, job.soft_k));
  }
  o.soft_target_weight = job.soft_target_weight;
  flce::Outputs<T> out;
  out.loss = make_tensor(job.loss.data(), make_shape(job.loss_size()));
  if (job.want_z_loss) out.z_loss = make_tensor(job.z_loss.data(), make_shape(job.loss_size()));
  if (job.want_grad_input)
    out.grad_input = make_tensor(job.grad_input.data(), make_shape(job.bt, job.hidden));
  if (job.want_grad_weight)
    out.grad_weight = make_tensor(job.grad_weight.data(), make_shape(job.vocab, job.hidden));
  if (job.want_grad_bias) out.grad_bias = make_tensor(job.grad_bias.data(), make_shape(job.vocab));
  if (job.want_lse) out.lse = make_tensor(job.lse.data(), make_shape(job.bt));
  if (job.want_target_logprob)
    out.target_logprob = make_tensor(job.target_logprob.data(), make_shape(job.bt));
  if (job.want_entropy) out.entropy = make_tensor(job.entropy.data(), make_shape(job.bt));
  if (job.want_argmax) out.argmax = make_tensor(job.argmax.data(), make_shape(job.bt));
  if (job.want_accuracy)
    out.accuracy = make_tensor(job.accuracy.data(), make_shape(job.loss_size()));
  auto const input =
      make_tensor(static_cast<T const*>(job.input.data()), make_shape(job.bt, job.hidden));
  auto const weight =
      make_tensor(static_cast<T const*>(job.weight.data()), make_shape(job.vocab, job.hidden));
  auto const target =
      make_tensor(static_cast<std::int64_t const*>(job.target.data()), make_shape(job.bt));
  if (communicator != nullptr)
    flce::forward(input, weight, target, flce::VocabParallel{communicator}, o, out);
  else
    flce::forward(input, weight, target, o, out);
}

#if defined(TESSEL_CLI_MPI)
// --vocab-parallel: the ranks mpirun started split the classes evenly (flce::even_vocab_slice),
// each runs the vocabulary-parallel call on its slice, and the slices' grad_weight and grad_bias
// are gathered, so every rank ends with the whole job's results. Returns whether this rank writes
// the output files (rank 0).
template <class T>
bool run_vocab_parallel(FlceJob<T>& job) {
  using C = flce::accum_t<T>;
  static dist::MpiSession const session(nullptr, nullptr);  // finalized at exit
  dist::MpiCommunicator comm;
  int const ranks = comm.size();
  if (job.vocab < ranks)
    throw_error(sentence("--vocab-parallel on ", ranks, " ranks needs at least ", ranks,
                         " classes, but --weight has ", job.vocab, "."));
  auto const slice_of = [&](int rank) { return flce::even_vocab_slice(job.vocab, rank, ranks); };
  flce::VocabSlice const slice = slice_of(comm.rank());
  auto const rows = [&](auto const& v, std::int64_t width) {
    using V = std::remove_cvref_t<decltype(v)>;
    if (v.empty()) return V{};
    return V(v.begin() + slice.offset * width, v.begin() + (slice.offset + slice.size) * width);
  };
  FlceJob<T> part = job;
  part.vocab = slice.size;
  part.weight = rows(job.weight, job.hidden);
  part.bias = rows(job.bias, 1);
  part.class_weights = rows(job.class_weights, 1);
  part.grad_weight = rows(job.grad_weight, job.hidden);
  part.grad_bias = rows(job.grad_bias, 1);
  run_host(part, &comm);
  // The slices' gradients gathered in rank (= class) order; the rest is the whole call's already.
  auto const gather = [&](std::vector<C> const& mine, std::vector<C>& all, std::int64_t width) {
    if (all.empty()) return;
    std::vector<std::size_t> counts;
    for (int r = 0; r < ranks; ++r)
      counts.push_back(static_cast<std::size_t>(slice_of(r).size * width) * sizeof(C));
    comm.all_gather_v(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all)),
                      counts);
  };
  gather(part.grad_weight, job.grad_weight, job.hidden);
  gather(part.grad_bias, job.grad_bias, 1);
  job.loss = std::move(part.loss);
  job.z_loss = std::move(part.z_loss);
  job.grad_input = std::move(part.grad_input);
  job.lse = std::move(part.lse);
  job.target_logprob = std::move(part.target_logprob);
  job.entropy = std::move(part.entropy);
  job.argmax = std::move(part.argmax);
  job.accuracy = std::move(part.accuracy);
  return comm.rank() == 0;
}
#endif

// The soft targets' files, read and checked against each other and the input.
struct SoftTargetFiles {
  std::unique_ptr<NpyArray> indices, probs;
};

template <class T>
void run_flce_typed(FlceOptions const& o, NpyArray const& x, NpyArray const& w,
                    std::vector<std::int64_t> target, NpyArray const* bias,
                    NpyArray const* class_weights, NpyArray const* grad_rows, double grad_output,
                    SoftTargetFiles const& soft, bool cuda) {
  using C = flce::accum_t<T>;
  using Out = std::conditional_t<std::is_same_v<T, double>, double, float>;
  FlceJob<T> job;
  job.bt = x.shape[0];
  job.hidden = x.shape[1];
  job.vocab = w.shape[0];
  job.input = as_storage<T>(x);
  job.weight = as_storage<T>(w);
  job.target = std::move(target);
  if (bias) job.bias = as_storage<T>(*bias);
  if (class_weights) job.class_weights = as_storage<T>(*class_weights);
  if (grad_rows) {
    auto rows = grad_rows->as<double>();
    job.grad_output_rows.assign(rows.begin(), rows.end());
  }
  if (soft.indices) {
    job.soft_k = soft.indices->shape[1];
    job.soft_indices = soft.indices->as<std::int64_t>();
    auto probs = soft.probs->as<double>();
    job.soft_probs.assign(probs.begin(), probs.end());
  }
  job.soft_target_weight = parse_number(o.soft_target_weight, "--soft-target-weight");
  job.reduction = flce::parse_reduction(o.reduction);
  job.ignore_index = parse_integer(o.ignore_index, "--ignore-index");
  job.label_smoothing = parse_number(o.label_smoothing, "--label-smoothing");
  job.lse_square_scale = parse_number(o.lse_square_scale, "--lse-square-scale");
  job.softcap = parse_number(o.softcap, "--softcap");
  job.temperature = parse_number(o.temperature, "--temperature");
  job.shift_sequence_length = parse_integer(o.shift_sequence_length, "--shift-sequence-length");
  job.entropy_bonus = parse_number(o.entropy_bonus, "--entropy-bonus");
  job.grad_output = grad_output;
  job.want_z_loss = !o.z_loss_out.empty();
  job.want_grad_input = !o.grad_input_out.empty();
  job.want_grad_weight = !o.grad_weight_out.empty();
  job.want_grad_bias = !o.grad_bias_out.empty();
  job.want_lse = !o.lse_out.empty();
  job.want_target_logprob = !o.target_logprob_out.empty();
  job.want_entropy = !o.entropy_out.empty();
  job.want_argmax = !o.argmax_out.empty();
  job.want_accuracy = !o.accuracy_out.empty();
  if (job.want_grad_bias && !bias)
    throw_error("--grad-bias-out needs --bias: there is no bias to differentiate.");
  if (grad_rows && job.reduction != flce::Reduction::none)
    throw_error(sentence("--grad-output ", o.grad_output,
                         " gives per-row values, which need --reduction none, not ", o.reduction,
                         "."));
  // Shapes the library would also reject, named here by option and file.
  auto check_vector = [&](NpyArray const* a, char const* option, std::string const& path,
                          std::int64_t expected, char const* what) {
    if (a && a->shape[0] != expected)
      throw_error(sentence(option, " ", path, " has shape ", tessel::detail::shape_text(a->shape),
                           " but ", what, " is ", expected, "."));
  };
  check_vector(bias, "--bias", o.bias, job.vocab, "the vocabulary size (--weight's rows)");
  check_vector(class_weights, "--class-weights", o.class_weights, job.vocab,
               "the vocabulary size (--weight's rows)");
  check_vector(grad_rows, "--grad-output", o.grad_output, job.bt, "the row count (--input's rows)");

  job.loss.assign(job.loss_size(), C(0));
  if (job.want_z_loss) job.z_loss.assign(job.loss_size(), C(0));
  if (job.want_grad_input) job.grad_input.assign(job.bt * job.hidden, T(0.0f));
  if (job.want_grad_weight) job.grad_weight.assign(job.vocab * job.hidden, C(0));
  if (job.want_grad_bias) job.grad_bias.assign(job.vocab, C(0));
  if (job.want_lse) job.lse.assign(job.bt, C(0));
  if (job.want_target_logprob) job.target_logprob.assign(job.bt, C(0));
  if (job.want_entropy) job.entropy.assign(job.bt, C(0));
  if (job.want_argmax) job.argmax.assign(job.bt, -1);
  if (job.want_accuracy) job.accuracy.assign(job.loss_size(), C(0));
  bool writes = true;  // this process writes the output files
  if (cuda) {
#if defined(TESSEL_CLI_CUDA)
    run_flce_cuda(job);
#endif
  } else if (o.vocab_parallel) {
#if defined(TESSEL_CLI_MPI)
    writes = run_vocab_parallel(job);
#endif
  } else {
    run_host(job);
  }
  if (!writes) return;

  DType const out_dtype = dtype_of_v<Out>;
  std::vector<std::int64_t> const loss_shape = job.reduction == flce::Reduction::none
                                                   ? std::vector<std::int64_t>{job.bt}
                                                   : std::vector<std::int64_t>{};
  OutputSet files;
  if (!o.loss_out.empty())
    files.add(o.loss_out, out_dtype, loss_shape, output_bytes<Out>(job.loss));
  if (job.want_z_loss)
    files.add(o.z_loss_out, out_dtype, loss_shape, output_bytes<Out>(job.z_loss));
  if (job.want_grad_input)
    files.add(o.grad_input_out, out_dtype, {job.bt, job.hidden}, output_bytes<Out>(job.grad_input));
  if (job.want_grad_weight)
    files.add(o.grad_weight_out, out_dtype, {job.vocab, job.hidden},
              output_bytes<Out>(job.grad_weight));
  if (job.want_grad_bias)
    files.add(o.grad_bias_out, out_dtype, {job.vocab}, output_bytes<Out>(job.grad_bias));
  if (job.want_lse) files.add(o.lse_out, out_dtype, {job.bt}, output_bytes<Out>(job.lse));
  if (job.want_target_logprob)
    files.add(o.target_logprob_out, out_dtype, {job.bt}, output_bytes<Out>(job.target_logprob));
  if (job.want_entropy)
    files.add(o.entropy_out, out_dtype, {job.bt}, output_bytes<Out>(job.entropy));
  if (job.want_argmax) {
    std::vector<std::byte> bytes(job.argmax.size() * sizeof(std::int64_t));
    std::memcpy(bytes.data(), job.argmax.data(), bytes.size());
    files.add(o.argmax_out, DType::i64, {job.bt}, std::move(bytes));
  }
  if (job.want_accuracy)
    files.add(o.accuracy_out, out_dtype, loss_shape, output_bytes<Out>(job.accuracy));
  files.commit();
  // What was written where, as one line of JSON (the tool's convention for stdout).
  nlohmann::json written = nlohmann::json::object();
  for (OutputFile const& f : output_files(o))
    if (!f.path->empty()) written[f.name] = *f.path;
  std::cout << json_line({{"bt", job.bt},
                          {"hidden", job.hidden},
                          {"vocab", job.vocab},
                          {"dtype", std::string(dtype_name(dtype_of_v<T>))},
                          {"reduction", std::string(flce::reduction_name(job.reduction))},
                          {"out", written}})
            << '\n';
}

void run_flce(FlceOptions const& o) {
  DType const dtype = parse_flce_dtype(o.dtype);
  bool const cuda = parse_device(o.device, "--device") == flce::Device::cuda;
#if !defined(TESSEL_CLI_MPI)
  if (o.vocab_parallel)
    throw_error(
        "--vocab-parallel: this tessel was built without MPI (configure with -DTESSEL_MPI=ON).");
#endif
  if (o.vocab_parallel && cuda)
    throw_error(
        "--vocab-parallel runs on the host's MPI ranks; the CLI has no NCCL path (--device cuda).");
#if !defined(TESSEL_CLI_CUDA)
  if (cuda)
    throw_error(
        "--device cuda: this tessel was built without CUDA (configure with -DTESSEL_CUDA=ON).");
#endif
  // At least one output: a run that writes nothing computes for nothing.
  std::vector<OutputFile> const outputs = output_files(o);
  if (std::all_of(outputs.begin(), outputs.end(), [](auto const& f) { return f.path->empty(); })) {
    std::string options;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (i > 0) options += i + 1 < outputs.size() ? ", " : " or ";
      options += outputs[i].option;
    }
    throw_error(sentence("no output asked for; give at least one of ", options, "."));
  }
  // Two options must not name the same file (the later would silently replace the earlier).
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t k = i + 1; k < outputs.size(); ++k)
      if (!outputs[i].path->empty() && *outputs[i].path == *outputs[k].path)
        throw_error(sentence(outputs[i].option, " and ", outputs[k].option, " name the same file ",
                             *outputs[i].path, "."));

  NpyArray const x = read_float_array(o.input, "--input", 2, "a 2-D (BT, H) array");
  NpyArray const w = read_float_array(o.weight, "--weight", 2, "a 2-D (V, H) array");
  NpyArray const t = read_npy(o.target);
  if (t.dtype != DType::i64 && t.dtype != DType::i32)
    throw_error(sentence("--target ", o.target, " holds ", dtype_name(t.dtype),
                         "; FLCE reads int64 (or int32) class indices."));
  if (t.shape.size() != 1)
    throw_error(sentence("--target ", o.target, " has shape ", tessel::detail::shape_text(t.shape),
                         "; FLCE needs a 1-D (BT,) array."));
  if (w.shape[1] != x.shape[1])
    throw_error(sentence("--weight ", o.weight, " has shape ", tessel::detail::shape_text(w.shape),
                         " but --input ", o.input, " has hidden size ", x.shape[1], "."));
  if (t.shape[0] != x.shape[0])
    throw_error(sentence("--target ", o.target, " has shape ", tessel::detail::shape_text(t.shape),
                         " but --input ", o.input, " has ", x.shape[0], " rows."));
  std::unique_ptr<NpyArray> bias, class_weights, grad_rows;
  SoftTargetFiles soft;
  if (o.soft_target_indices.empty() != o.soft_target_probs.empty())
    throw_error(o.soft_target_indices.empty()
                    ? "--soft-target-probs needs --soft-target-indices (the classes they are on)."
                    : "--soft-target-indices needs --soft-target-probs (their probabilities).");
  if (!o.soft_target_indices.empty()) {
    soft.indices = std::make_unique<NpyArray>(read_npy(o.soft_target_indices));
    if (soft.indices->dtype != DType::i64 && soft.indices->dtype != DType::i32)
      throw_error(sentence("--soft-target-indices ", o.soft_target_indices, " holds ",
                           dtype_name(soft.indices->dtype),
                           "; FLCE reads int64 (or int32) class indices."));
    soft.probs = std::make_unique<NpyArray>(
        read_float_array(o.soft_target_probs, "--soft-target-probs", 2, "a 2-D (BT, K) array"));
    if (soft.indices->shape.size() != 2 || soft.indices->shape[0] != x.shape[0])
      throw_error(sentence("--soft-target-indices ", o.soft_target_indices, " has shape ",
                           tessel::detail::shape_text(soft.indices->shape), " but --input ",
                           o.input, " has ", x.shape[0], " rows; FLCE needs (BT, K)."));
    if (soft.probs->shape != soft.indices->shape)
      throw_error(sentence("--soft-target-probs ", o.soft_target_probs, " has shape ",
                           tessel::detail::shape_text(soft.probs->shape),
                           " but --soft-target-indices ", o.soft_target_indices, " has shape ",
                           tessel::detail::shape_text(soft.indices->shape), "."));
  }
  if (!o.bias.empty())
    bias = std::make_unique<NpyArray>(read_float_array(o.bias, "--bias", 1, "a 1-D (V,) array"));
  if (!o.class_weights.empty())
    class_weights = std::make_unique<NpyArray>(
        read_float_array(o.class_weights, "--class-weights", 1, "a 1-D (V,) array"));
  double grad_output = 1.0;
  if (!o.grad_output.empty()) {
    double value = 0;
    switch (read_number(o.grad_output, value)) {
      case NumberText::number:
        grad_output = value;
        break;
      case NumberText::out_of_range:  // a number, not a file name
        throw_out_of_range(o.grad_output, "--grad-output");
      case NumberText::not_a_number:
        grad_rows = std::make_unique<NpyArray>(
            read_float_array(o.grad_output, "--grad-output", 1, "a number or a 1-D (BT,) array"));
        break;
    }
  }
  std::vector<std::int64_t> target = t.as<std::int64_t>();
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    // parse_flce_dtype admitted only these four.
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> ||
                  std::is_same_v<T, bfloat16>)
      run_flce_typed<T>(o, x, w, std::move(target), bias.get(), class_weights.get(),
                        grad_rows.get(), grad_output, soft, cuda);
    else
      throw_error(sentence("--dtype: FLCE computes on f32, f64, f16 or bf16, not ",
                           dtype_name(dtype), "."));
  });
}

}  // namespace

void add_flce_commands(CLI::App& app) {
  auto* plan = app.get_subcommand("plan");
  auto plan_opts = std::make_shared<PlanFlceOptions>();
  auto* plan_cmd = plan->add_subcommand(
      "flce", "The FLCE chunk plan: rows per chunk, chunk count and scratch bytes.");
  plan_cmd->add_option("--bt", plan_opts->bt, "Rows of the input (batch x sequence)")->required();
  plan_cmd->add_option("--hidden", plan_opts->hidden, "Hidden size H")->required();
  plan_cmd->add_option("--vocab", plan_opts->vocab, "Vocabulary size V")->required();
  plan_cmd->add_option("--dtype", plan_opts->dtype, "Storage type: f32, f64, f16 or bf16")
      ->capture_default_str();
  plan_cmd->add_option("--device", plan_opts->device,
                       "The plan a call on this device takes: cuda (make_device_plan) or host "
                       "(make_host_plan); without it, Liger-Kernel's plan (make_plan) with CUDA's "
                       "scratch");
  plan_cmd->add_option("--chunk-size", plan_opts->chunk_size,
                       "Rows per chunk (default: heuristic)");
  plan_cmd->callback([plan_opts] { run_plan_flce(*plan_opts); });

  auto o = std::make_shared<FlceOptions>();
  auto* cmd = app.add_subcommand(
      "flce",
      "Loss and gradients of cross_entropy(input @ weight.T + bias, target) over .npy files.");
  cmd->add_option("--input", o->input, "(BT, H) float32/float64 .npy")->required();
  cmd->add_option("--weight", o->weight, "(V, H) float32/float64 .npy")->required();
  cmd->add_option("--target", o->target, "(BT,) int64 .npy of class indices")->required();
  cmd->add_option("--bias", o->bias, "(V,) .npy");
  cmd->add_option("--class-weights", o->class_weights, "(V,) .npy: PyTorch's `weight`");
  cmd->add_option("--reduction", o->reduction, "mean, sum or none")->capture_default_str();
  cmd->add_option("--ignore-index", o->ignore_index, "Target value to ignore")
      ->capture_default_str();
  cmd->add_option("--label-smoothing", o->label_smoothing, "In [0, 1]")->capture_default_str();
  cmd->add_option("--lse-square-scale", o->lse_square_scale, "z-loss scale")->capture_default_str();
  cmd->add_option("--softcap", o->softcap, "c in c*tanh(logits/c); 0: off")->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "Logits are divided by it first (> 0)")
      ->capture_default_str();
  cmd->add_option("--entropy-bonus", o->entropy_bonus,
                  "beta: each row's loss gets -beta * entropy (PPO's entropy coefficient)")
      ->capture_default_str();
  cmd->add_option("--shift-sequence-length", o->shift_sequence_length,
                  "Causal shift: rows are sequences of this length, row i scored against "
                  "target i+1; 0: off")
      ->capture_default_str();
  cmd->add_option("--soft-target-indices", o->soft_target_indices,
                  "(BT, K) int64 .npy: each row's soft-target classes (a teacher's top-k)");
  cmd->add_option("--soft-target-probs", o->soft_target_probs,
                  "(BT, K) .npy: their probabilities (repeated classes add up)");
  cmd->add_option("--soft-target-weight", o->soft_target_weight,
                  "alpha in [0, 1]: loss = (1 - alpha) hard + alpha soft cross-entropy")
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Compute on f32, f64, f16 or bf16")->capture_default_str();
  cmd->add_option("--grad-output", o->grad_output,
                  "Upstream gradient: a number, or a (BT,) .npy for --reduction none");
  cmd->add_option("--device", o->device, "host or cuda")->capture_default_str();
  cmd->add_flag("--vocab-parallel", o->vocab_parallel,
                "Under mpirun: split the classes evenly over the ranks (each reads the files and "
                "holds its slice of --weight); rank 0 writes the outputs");
  cmd->add_option("--loss-out", o->loss_out,
                  "Loss .npy (shape () or (BT,)); every --*-out is optional, but give one");
  cmd->add_option("--z-loss-out", o->z_loss_out, "z-loss part .npy");
  cmd->add_option("--grad-input-out", o->grad_input_out, "(BT, H) .npy");
  cmd->add_option("--grad-weight-out", o->grad_weight_out, "(V, H) .npy");
  cmd->add_option("--grad-bias-out", o->grad_bias_out, "(V,) .npy");
  cmd->add_option("--lse-out", o->lse_out, "(BT,) .npy: each row's log-sum-exp (0 if ignored)");
  cmd->add_option("--target-logprob-out", o->target_logprob_out,
                  "(BT,) .npy: each row's log p(target) (0 if ignored)");
  cmd->add_option("--entropy-out", o->entropy_out,
                  "(BT,) .npy: each row's softmax entropy (0 if ignored)");
  cmd->add_option("--argmax-out", o->argmax_out,
                  "(BT,) int64 .npy: each row's predicted class (-1 if ignored)");
  cmd->add_option("--accuracy-out", o->accuracy_out,
                  "Token accuracy .npy, reduced like the loss (argmax == target, unweighted)");
  cmd->callback([o] { run_flce(*o); });
}

}  // namespace tessel::cli
