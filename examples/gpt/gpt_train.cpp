// A small GPT (model.hpp) trained on the repository's docs, byte by byte, with tessel's Shampoo
// (Adam grafting) on the host: the progress of the loss, the held-out loss at the end, and the
// wall time. `gpt_train [steps] [corpus]` (defaults: 1500 steps, docs/).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include <tessel/shampoo.hpp>

#include "../common/corpus.hpp"
#include "model.hpp"

namespace {

using tessel::index_t;
// 4 layers, 4 heads of 32, 128 channels, bytes as tokens, 64 bytes of context; 16 x 64 tokens a
// step.
using Cfg = gpt::Config<4, 4, 128, 256, 64>;
using Bt = gpt::Batch<16, 64>;
constexpr index_t seq = Bt::seq, batch = Bt::batch;

// GPT-2's initialization: N(0, 0.02), the residual projections scaled by 1 / sqrt(2 layers),
// LayerNorms at weight 1, bias 0, every Linear bias 0.
std::vector<float> initial_params(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> p(static_cast<std::size_t>(Cfg::num_params), 0.0f);
  for (auto const& np : gpt::named_params<Cfg>()) {
    bool const ln_weight = np.name.find("ln_") != std::string::npos && np.name.ends_with("weight");
    bool const residual = np.name.ends_with("c_proj.weight");
    double const std = np.shape.size() == 1 ? 0.0
                       : residual           ? 0.02 / std::sqrt(2.0 * Cfg::layers)
                                            : 0.02;
    std::normal_distribution<double> d(0.0, std);
    for (index_t i = 0; i < np.numel(); ++i)
      p[static_cast<std::size_t>(np.offset + i)] =
          ln_weight ? 1.0f : (std > 0 ? static_cast<float>(d(rng)) : 0.0f);
  }
  return p;
}

// B windows of T + 1 bytes ending at positions drawn from `from` (each >= T): tokens and the
// byte after each.
void fill(examples::Corpus const& corpus, std::vector<std::uint32_t> const& from,
          std::mt19937_64& rng, std::vector<std::int32_t>& tokens,
          std::vector<std::int32_t>& targets) {
  std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
  for (index_t b = 0; b < batch; ++b) {
    std::size_t const end = from[pick(rng)];  // >= T: the corpus was loaded with context T
    for (index_t t = 0; t < seq; ++t) {
      auto const i = static_cast<std::size_t>(b * seq + t);
      tokens[i] = corpus.byte(end - static_cast<std::size_t>(seq) + static_cast<std::size_t>(t));
      targets[i] =
          corpus.byte(end - static_cast<std::size_t>(seq) + static_cast<std::size_t>(t) + 1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int const steps = argc > 1 ? std::atoi(argv[1]) : 1500;
  std::string const path = argc > 2 ? argv[2] : GPT_CORPUS;
  auto const corpus = examples::Corpus::load(path, static_cast<std::size_t>(seq));
  std::printf("corpus: %s, %zu bytes (%zu held out); unigram entropy %.3f nats\n", path.c_str(),
              corpus.text.size(), corpus.held_out_positions.size(), corpus.unigram_entropy());
  std::printf(
      "model: %ld layers, %ld heads, %ld channels, %ld parameters; %ld x %ld tokens a step\n",
      long{Cfg::layers}, long{Cfg::heads}, long{Cfg::channels}, long{Cfg::num_params}, long{batch},
      long{seq});

  gpt::Model<Cfg, Bt, float> model;
  auto params = initial_params(1);
  std::vector<float> grads(params.size());

  // Shampoo over every named parameter, with Adam's step length (as the MLP demo trains).
  auto const named = gpt::named_params<Cfg>();
  std::vector<std::vector<index_t>> shapes;
  for (auto const& np : named) shapes.push_back(np.shape);
  tessel::shampoo::Options o;
  o.lr = 2e-3;
  o.beta1 = 0.9;
  o.beta2 = 0.99;
  o.epsilon = 1e-8;
  o.precondition_frequency = 20;
  o.grafting = tessel::shampoo::adam_grafting(0.999, 1e-8);
  tessel::shampoo::Shampoo<float, tessel::shampoo::RootInv> opt(
      tessel::shampoo::make_plan(tessel::shampoo::plan_options(index_t{256}, index_t{1}), shapes),
      o);
  std::vector<std::span<float>> ps;
  std::vector<std::span<float const>> gs;
  for (auto const& np : named) {
    auto const at = static_cast<std::size_t>(np.offset), n = static_cast<std::size_t>(np.numel());
    ps.emplace_back(params.data() + at, n);
    gs.emplace_back(grads.data() + at, n);
  }

  std::mt19937_64 rng(42);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(batch * seq)), targets(tokens.size());
  auto const start = std::chrono::steady_clock::now();
  double recent = 0.0;
  for (int step = 1; step <= steps; ++step) {
    fill(corpus, corpus.train_positions, rng, tokens, targets);
    recent += model.forward_backward(params, grads, tokens, targets);
    opt.step(ps, gs);
    if (step % 100 == 0 || step == steps) {
      double const seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      int const n = step % 100 == 0 ? 100 : step % 100;
      std::printf("step %5d  loss %.3f  %.1f s\n", step, recent / n, seconds);
      std::fflush(stdout);
      recent = 0.0;
    }
  }
  std::mt19937_64 held_rng(7);
  double held = 0.0;
  int const held_batches = 16;
  for (int k = 0; k < held_batches; ++k) {
    fill(corpus, corpus.held_out_positions, held_rng, tokens, targets);
    held += model.loss(params, tokens, targets);
  }
  std::printf("held-out loss %.3f nats after %d steps, %.1f s\n", held / held_batches, steps,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}
