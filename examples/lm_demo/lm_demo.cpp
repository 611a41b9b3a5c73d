// lm_demo: a byte-level language model trained with tessel's two workloads. The last 8 bytes are
// embedded, concatenated and passed through one tanh layer; the LM head's loss and both gradients
// come from FLCE (no (BT, V) logits are kept), and Shampoo optimizes all three parameters. The
// shapes are static, so both plans are computed by the compiler (config.hpp) and printed here.
// The corpus is the repository's own documentation. At the end: samples, the loss curve (CSV and
// SVG) and a safetensors checkpoint that --resume continues from, step for step.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <tessel/io.hpp>
#include <tessel/shampoo.hpp>
#include <tessel/shampoo/state/checkpoint.hpp>
#include <tessel/tessel.hpp>

#include "config.hpp"
#include "host_executor.hpp"
#include "model.hpp"
#include "plot.hpp"

namespace fs = std::filesystem;
using namespace lm;
using tessel::detail::sentence;

#ifndef LM_DEMO_CORPUS
#define LM_DEMO_CORPUS "docs"
#endif

namespace {

constexpr char const* checkpoint_format = "tessel.lm_demo/1";

struct Settings {
  index_t steps = 2500;
  std::uint64_t seed = 1;
  fs::path out = "lm_demo_out";
  fs::path resume;
  fs::path corpus = LM_DEMO_CORPUS;
  double lr = 0.004;
  int precondition_frequency = 10;
  bool quiet = false;
  bool host = false;
  int threads = 1;
  index_t samples = 3;
  index_t sample_length = 240;
  double temperature = 0.6;
  std::string prompt = "Shampoo ";
};

tessel::shampoo::Options optimizer_options(Settings const& s) {
  tessel::shampoo::Options o;
  o.lr = s.lr;
  o.beta1 = 0.9;
  o.beta2 = 0.99;
  o.epsilon = 1e-8;
  o.precondition_frequency = s.precondition_frequency;
  // The step length comes from Adam (per element), the direction from Shampoo.
  o.grafting = tessel::shampoo::adam_grafting(0.999, 1e-8);
  return o;
}

// Everything a run is: the model, the optimizer (inside the executor), the batch generator and
// the losses so far. Saved to and loaded from one safetensors file.
struct Run {
  Model model;
  std::mt19937_64 rng;
  std::vector<float> losses;  // per step, from step 1
  std::unique_ptr<Executor> exec;
};

std::string rng_text(std::mt19937_64 const& rng) {
  std::ostringstream s;
  s << rng;
  return s.str();
}

void save_checkpoint(Run& run, Settings const& s, Corpus const& corpus, fs::path const& path) {
  // The optimizer's tensors keep their key-path names (["0","block_0",...]); to_safetensors
  // writes its own format tag, which the demo's replaces.
  tessel::SafetensorsFile file = tessel::shampoo::to_safetensors(run.exec->state_dict());
  file.metadata = {{"format", checkpoint_format},
                   {"step", std::to_string(run.losses.size())},
                   {"seed", std::to_string(s.seed)},
                   {"rng", rng_text(run.rng)},
                   {"corpus", std::to_string(corpus.fingerprint())}};
  file.tensors.push_back(
      tessel::make_safetensors_entry("model.embedding", {vocab, embed}, run.model.embedding));
  file.tensors.push_back(tessel::make_safetensors_entry(
      "model.hidden", {hidden, features + 1}, std::span<float const>(run.model.layer.parameter())));
  file.tensors.push_back(
      tessel::make_safetensors_entry("model.head", {vocab, hidden}, run.model.head));
  file.tensors.push_back(tessel::make_safetensors_entry(
      "train.loss", {static_cast<std::int64_t>(run.losses.size())}, run.losses));
  tessel::write_safetensors(path, file);
}

// Reads and checks the whole checkpoint, then loads the optimizer (all or nothing), then the rest.
void load_checkpoint(Run& run, Corpus const& corpus, fs::path const& path) {
  tessel::SafetensorsFile file = tessel::read_safetensors(path);
  auto meta = [&](char const* key) -> std::string const& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      tessel::detail::throw_error(sentence(path.string(), " is not an lm_demo checkpoint (no \"",
                                           key, "\" in its metadata)."));
    return it->second;
  };
  if (meta("format") != checkpoint_format)
    tessel::detail::throw_error(sentence(path.string(), " has format \"", meta("format"),
                                         "\" but lm_demo reads \"", checkpoint_format, "\"."));
  if (meta("corpus") != std::to_string(corpus.fingerprint()))
    tessel::detail::throw_error(sentence(path.string(),
                                         " was trained on another corpus than the one given "
                                         "(fingerprints ",
                                         meta("corpus"), " and ", corpus.fingerprint(), ")."));
  auto tensor = [&](char const* name, std::vector<std::int64_t> shape) {
    auto const& t = file.at(name);
    if (t.shape != shape || t.dtype != tessel::DType::f32)
      tessel::detail::throw_error(sentence(path.string(), ": tensor ", name,
                                           " does not have the model's shape and dtype (f32)."));
    return t.as<float>();
  };
  auto embedding = tensor("model.embedding", {vocab, embed});
  auto layer = tensor("model.hidden", {hidden, features + 1});
  auto head = tensor("model.head", {vocab, hidden});
  std::int64_t steps = -1;
  std::string const& step_text = meta("step");
  auto const parsed = std::from_chars(step_text.data(), step_text.data() + step_text.size(), steps);
  if (parsed.ec != std::errc{} || parsed.ptr != step_text.data() + step_text.size() || steps < 0)
    tessel::detail::throw_error(
        sentence(path.string(), " has step \"", step_text, "\", which is not a step count."));
  auto losses = tensor("train.loss", {steps});
  std::mt19937_64 rng;
  std::istringstream(meta("rng")) >> rng;
  tessel::SafetensorsFile state;
  for (auto& t : file.tensors)
    if (!t.name.empty() && t.name.front() == '[') state.tensors.push_back(std::move(t));
  run.exec->load_state_dict(tessel::shampoo::from_safetensors(state));
  run.model.embedding = std::move(embedding);
  std::ranges::copy(layer, run.model.layer.parameter().begin());
  run.model.head = std::move(head);
  run.losses = std::move(losses);
  run.rng = rng;
  run.exec->attach(run.model.params());
}

// The mean loss over consecutive windows of the held-out tenth of the corpus.
double held_out_loss(Run& run, Corpus const& corpus) {
  Batch b;
  std::vector<std::size_t> positions(batch_tokens);
  auto const& held = corpus.held_out_positions;
  std::size_t const batches = std::min<std::size_t>(16, held.size() / batch_tokens);
  double sum = 0;
  for (std::size_t k = 0; k < batches; ++k) {
    for (std::size_t i = 0; i < batch_tokens; ++i) positions[i] = held[k * batch_tokens + i];
    b.fill(corpus, positions);
    forward_hidden(run.model, b);
    sum += run.exec->head(b.h, b.targets, {});
  }
  return batches > 0 ? sum / static_cast<double>(batches) : std::nan("");
}

std::string clock_text(double seconds) {
  char buf[32];
  int const s = static_cast<int>(seconds);
  std::snprintf(buf, sizeof buf, "%d:%02d", s / 60, s % 60);
  return buf;
}

// Step, loss, tokens/s and elapsed time: one line rewritten in place on a terminal, a line per
// tenth of the run otherwise (logs, ctest).
class Progress {
 public:
  Progress(index_t first, index_t last, bool quiet)
      : first_(first), last_(last), quiet_(quiet), tty_(isatty(fileno(stdout)) != 0) {}

  void update(index_t step, double loss, double seconds) {
    if (quiet_) return;
    double const tokens_per_s =
        seconds > 0 ? static_cast<double>((step - first_ + 1) * batch_tokens) / seconds : 0.0;
    bool const end = step == last_;
    if (tty_) {
      if (!end && seconds - shown_ < 0.1) return;
      shown_ = seconds;
      int const width = 30;
      int const filled =
          static_cast<int>(width * static_cast<double>(step) / static_cast<double>(last_));
      std::printf("\r  [%s%s] step %5ld/%ld  loss %.3f  %6.1fk tok/s  %s elapsed ",
                  std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(width - filled), '.').c_str(),
                  static_cast<long>(step), static_cast<long>(last_), loss, tokens_per_s / 1e3,
                  clock_text(seconds).c_str());
      if (end) std::printf("\n");
      std::fflush(stdout);
    } else {
      index_t const every = std::max<index_t>(1, last_ / 10);
      if (step % every != 0 && !end && step != first_) return;
      std::printf("  step %5ld/%ld  loss %.3f  %6.1fk tok/s  %s elapsed\n", static_cast<long>(step),
                  static_cast<long>(last_), loss, tokens_per_s / 1e3, clock_text(seconds).c_str());
      std::fflush(stdout);
    }
  }

 private:
  index_t first_, last_;
  bool quiet_, tty_;
  double shown_ = -1.0;
};

void print_plans() {
  using tessel::flce::Device;
  auto const scratch = flce_plan.scratch_bytes(tessel::DType::f32, Device::host);
  std::printf(
      "FLCE plan of the LM head on the host (static_assert'ed): BT=%ld H=%ld V=%ld -> %ld chunks "
      "of %ld rows; "
      "scratch %.0f KiB, where the (BT, V) logits alone would take %.0f KiB\n",
      static_cast<long>(batch_tokens), static_cast<long>(hidden), static_cast<long>(vocab),
      static_cast<long>(flce_plan.num_chunks), static_cast<long>(flce_plan.chunk_size),
      static_cast<double>(scratch) / 1024, static_cast<double>(batch_tokens * vocab * 4) / 1024);
  char const* names[num_params] = {"embedding", "hidden layer (weight | bias)", "LM head"};
  std::printf(
      "Shampoo plan (static_assert'ed, max_preconditioner_dim %ld): %zu parameters, %zu blocks, "
      "%zu batch groups\n",
      static_cast<long>(max_block), shampoo_plan.num_params(), shampoo_plan.num_blocks(),
      shampoo_plan.num_groups());
  for (std::size_t b = 0; b < shampoo_plan.num_blocks(); ++b) {
    auto const& block = shampoo_plan.blocks[b];
    std::printf("  %-29s %-10s block %ld: offset %-8s shape %s\n", names[block.param],
                tessel::to_string(shampoo_plan.params[block.param].shape).c_str(),
                static_cast<long>(block.index),
                tessel::to_string(shampoo_plan.block_offset(b)).c_str(),
                tessel::to_string(shampoo_plan.block_shape(b)).c_str());
  }
}

// Bytes as text for a terminal: control characters other than newline become '.', trailing
// spaces go, and newlines continue the indentation.
std::string printable(std::string const& text) {
  std::string out;
  for (char ch : text) {
    auto const u = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      out += "\n    ";
    } else {
      out += (u < 0x20 || u == 0x7f) ? '.' : ch;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

int run_demo(Settings const& s) {
  auto const start = std::chrono::steady_clock::now();
  auto seconds_since = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  Corpus const corpus = Corpus::load(s.corpus, lm::context);
  double const entropy = corpus.unigram_entropy();
  std::printf("tessel lm_demo: a byte-level language model, FLCE head + Shampoo\n");
  std::printf("corpus: %s (%zu file(s), %zu bytes; every tenth KiB, %zu bytes, held out)\n",
              s.corpus.string().c_str(), corpus.files.size(), corpus.text.size(),
              corpus.held_out_positions.size());
  std::printf(
      "model: context %ld bytes -> embedding (%ld, %ld) -> tanh layer %ld -> %ld -> LM head "
      "(%ld, %ld); %ld tokens per step\n",
      static_cast<long>(context), static_cast<long>(vocab), static_cast<long>(embed),
      static_cast<long>(features), static_cast<long>(hidden), static_cast<long>(vocab),
      static_cast<long>(hidden), static_cast<long>(batch_tokens));
  print_plans();

  auto const options = optimizer_options(s);
  Run run{Model(s.seed), std::mt19937_64(s.seed), {}, nullptr};
  std::string why_not_cuda;
  if (!s.host) run.exec = make_cuda_executor(options, why_not_cuda);
  if (s.host) why_not_cuda = "--host was given";
  if (run.exec) {
    std::printf("executor: CUDA. %s.\n", run.exec->where().c_str());
  } else {
    run.exec = std::make_unique<HostExecutor>(options);
    std::printf("executor: host, because %s. %s.\n", why_not_cuda.c_str(),
                run.exec->where().c_str());
  }
  run.exec->attach(run.model.params());
  if (!s.resume.empty()) {
    load_checkpoint(run, corpus, s.resume);
    std::printf("resumed from %s at step %zu\n", s.resume.string().c_str(), run.losses.size());
  }

  // Validate the output directory before the minute of training.
  fs::create_directories(s.out);
  fs::path const csv_path = s.out / "loss.csv", svg_path = s.out / "loss.svg",
                 checkpoint_path = s.out / "checkpoint.safetensors";

  index_t const first = static_cast<index_t>(run.losses.size()) + 1;
  std::printf("unigram entropy of the corpus: %.3f nats (%.3f bits); the loss is in nats too\n",
              entropy, entropy / std::log(2.0));
  std::printf(
      "training steps %ld..%ld, Shampoo lr %g with Adam grafting, preconditioners every %d "
      "steps\n",
      static_cast<long>(first), static_cast<long>(s.steps), s.lr, s.precondition_frequency);
  std::fflush(stdout);

  Batch batch;
  std::vector<std::size_t> positions(batch_tokens);
  std::uniform_int_distribution<std::size_t> position(0, corpus.train_positions.size() - 1);
  Progress progress(first, s.steps, s.quiet);
  auto const train_start = std::chrono::steady_clock::now();
  for (index_t step = first; step <= s.steps; ++step) {
    for (auto& p : positions) p = corpus.train_positions[position(run.rng)];
    batch.fill(corpus, positions);
    forward_hidden(run.model, batch);
    float const loss = run.exec->head(batch.h, batch.targets, batch.dh);
    backward_hidden(run.model, batch);
    run.exec->step(batch.grad_embedding, batch.grad_hidden);
    run.losses.push_back(loss);
    // The bar shows the mean of the last 20 steps: single batches are noisy.
    std::size_t const n = std::min<std::size_t>(20, run.losses.size());
    double recent = 0;
    for (std::size_t i = run.losses.size() - n; i < run.losses.size(); ++i) recent += run.losses[i];
    progress.update(step, recent / static_cast<double>(n), seconds_since(train_start));
  }
  double const train_seconds = seconds_since(train_start);

  save_checkpoint(run, s, corpus, checkpoint_path);
  write_loss_csv(csv_path, run.losses);
  write_loss_svg(svg_path, run.losses, entropy);

  std::mt19937_64 sample_rng(s.seed + 7);
  std::printf("\nsamples (temperature %.2f, prompt \"%s\"):\n", s.temperature, s.prompt.c_str());
  for (index_t i = 0; i < s.samples; ++i)
    std::printf("  %ld. %s\n", static_cast<long>(i + 1),
                printable(generate(run.model, s.prompt, s.sample_length, s.temperature, sample_rng))
                    .c_str());

  double const final_loss = held_out_loss(run, corpus);
  std::size_t const n = std::min<std::size_t>(50, run.losses.size());
  double train_loss = 0;
  for (std::size_t i = run.losses.size() - n; i < run.losses.size(); ++i)
    train_loss += run.losses[i];
  train_loss = n > 0 ? train_loss / static_cast<double>(n) : std::nan("");
  index_t const trained = s.steps - first + 1;
  std::printf("\ntrained %ld steps in %.1f s (%.1fk tokens/s); total %.1f s\n",
              static_cast<long>(std::max<index_t>(trained, 0)), train_seconds,
              trained > 0 ? static_cast<double>(trained * batch_tokens) / train_seconds / 1e3 : 0.0,
              seconds_since(start));
  std::printf("wrote %s, %s, %s\n", csv_path.string().c_str(), svg_path.string().c_str(),
              checkpoint_path.string().c_str());
  std::printf("loss (nats): first step %.3f, last 50 steps %.3f, held-out %.3f\n",
              run.losses.empty() ? std::nan("") : run.losses.front(), train_loss, final_loss);
  bool const learned = final_loss < entropy;
  std::printf("held-out loss %.3f nats is %s the unigram entropy %.3f nats (%.3f vs %.3f bits)\n",
              final_loss, learned ? "below" : "NOT below", entropy, final_loss / std::log(2.0),
              entropy / std::log(2.0));
  return learned ? 0 : 2;
}

}  // namespace

#ifndef LM_DEMO_CUDA
std::unique_ptr<Executor> lm::make_cuda_executor(tessel::shampoo::Options const&,
                                                 std::string& why_not) {
  why_not = "it was built without CUDA (TESSEL_CUDA=OFF, or no nvcc found)";
  return nullptr;
}
#endif

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{
      "lm_demo: train a byte-level language model whose LM head is tessel's fused linear "
      "cross-entropy, optimized by tessel's Shampoo, on the repository's docs."};
  app.add_option("--steps", s.steps, "train until this step (counting resumed steps)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", s.seed, "seed of the initialization and the batches")
      ->capture_default_str();
  app.add_option("--out", s.out, "directory for loss.csv, loss.svg and checkpoint.safetensors")
      ->capture_default_str();
  app.add_option("--resume", s.resume, "continue from this checkpoint.safetensors")
      ->check(CLI::ExistingFile);
  app.add_option("--corpus", s.corpus, "a text file, or a directory whose *.md files are read")
      ->capture_default_str();
  app.add_option("--lr", s.lr, "Shampoo's learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--precondition-frequency", s.precondition_frequency,
                 "steps between inverse-root computations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--samples", s.samples, "generated samples at the end")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--sample-length", s.sample_length, "bytes per sample")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--temperature", s.temperature, "sampling temperature")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--prompt", s.prompt, "text the samples continue")->capture_default_str();
  app.add_option("--threads", s.threads,
                 "host threads (OpenMP); one is fastest at this size, where every parallel loop "
                 "is a few microseconds long")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--host", s.host, "run on the host even when a GPU is present");
  app.add_flag("-q,--quiet", s.quiet, "no progress output while training");
  app.footer(
      "Exit status: 0 when the held-out loss ends below the corpus's unigram entropy, 2 when it "
      "does not, 1 on an error.");
  CLI11_PARSE(app, argc, argv);
#ifdef _OPENMP
  omp_set_num_threads(s.threads);
#endif
  try {
    return run_demo(s);
  } catch (std::exception const& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lm_demo: %s\n", e.what());
    return 1;
  }
}
