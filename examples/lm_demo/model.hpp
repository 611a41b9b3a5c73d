// lm_demo's model on the host: the corpus, batches of (context, next byte), the embedding and the
// hidden tanh layer (forward and backward), and temperature sampling. The LM head's loss and
// gradients are the executor's (FLCE); only sampling forms logits, one row at a time.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <tessel/core/error.hpp>
#include <tessel/shampoo/combined_linear.hpp>

#include "../common/corpus.hpp"
#include "config.hpp"
#include "executor.hpp"

namespace lm {

using examples::Corpus;

// The parameters, in the plan's order: embedding (V, E), hidden layer (H, F + 1), head (V, H).
struct Model {
  std::vector<float> embedding;
  tessel::shampoo::CombinedLinear<float> layer;
  std::vector<float> head;

  explicit Model(std::uint64_t seed)
      : embedding(static_cast<std::size_t>(vocab * embed)),
        layer(features, hidden, true, seed + 1),
        head(static_cast<std::size_t>(vocab * hidden)) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : embedding) v = normal(rng);
    // nn.Linear's bound, as the hidden layer: the first logits are nearly uniform.
    float const bound = 1.0f / std::sqrt(static_cast<float>(hidden));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    for (float& v : head) v = uniform(rng);
  }

  Params params() {
    return {std::span<float>(embedding), layer.parameter(), std::span<float>(head)};
  }
};

// One batch: the activations of the host layers and the gradients they produce.
struct Batch {
  std::vector<std::int64_t> targets = std::vector<std::int64_t>(batch_tokens);
  std::vector<std::uint8_t> contexts = std::vector<std::uint8_t>(batch_tokens * context);
  std::vector<float> x = std::vector<float>(batch_tokens * features);     // (BT, F) embeddings
  std::vector<float> h = std::vector<float>(batch_tokens * hidden);       // (BT, H) tanh output
  std::vector<float> dh = std::vector<float>(batch_tokens * hidden);      // (BT, H)
  std::vector<float> dx = std::vector<float>(batch_tokens * features);    // (BT, F)
  std::vector<float> grad_embedding = std::vector<float>(vocab * embed);  // (V, E)
  std::vector<float> grad_hidden = std::vector<float>(hidden * (features + 1));

  // Row i predicts the byte at positions[i] from the `context` bytes before it.
  template <class Positions>
  void fill(Corpus const& corpus, Positions const& positions) {
    for (index_t i = 0; i < batch_tokens; ++i) {
      std::size_t const p = positions[static_cast<std::size_t>(i)];
      targets[static_cast<std::size_t>(i)] = corpus.byte(p);
      for (index_t k = 0; k < context; ++k)
        contexts[static_cast<std::size_t>(i * context + k)] = corpus.byte(p - context + k);
    }
  }
};

// h = tanh(layer([embedding[c_0], ..., embedding[c_7]])) for every row.
inline void forward_hidden(Model const& m, Batch& b, index_t rows = batch_tokens) {
  for (index_t i = 0; i < rows * context; ++i)
    std::copy_n(m.embedding.begin() + b.contexts[static_cast<std::size_t>(i)] * embed, embed,
                b.x.begin() + i * embed);
  m.layer.forward(std::span<float const>(b.x).first(static_cast<std::size_t>(rows * features)),
                  rows, std::span<float>(b.h).first(static_cast<std::size_t>(rows * hidden)));
  for (index_t i = 0; i < rows * hidden; ++i) b.h[static_cast<std::size_t>(i)] = std::tanh(b.h[i]);
}

// From b.dh (d loss / d h, the executor's) to the gradients of the hidden layer and embedding.
inline void backward_hidden(Model const& m, Batch& b) {
  for (std::size_t i = 0; i < b.dh.size(); ++i) b.dh[i] *= 1.0f - b.h[i] * b.h[i];
  m.layer.backward(b.x, b.dh, batch_tokens, b.grad_hidden, b.dx);
  std::fill(b.grad_embedding.begin(), b.grad_embedding.end(), 0.0f);
  for (index_t i = 0; i < batch_tokens * context; ++i) {
    float* row = b.grad_embedding.data() + b.contexts[static_cast<std::size_t>(i)] * embed;
    for (index_t e = 0; e < embed; ++e) row[e] += b.dx[static_cast<std::size_t>(i * embed + e)];
  }
}

// Continues `prompt` by `length` bytes, each drawn from softmax(logits / temperature).
inline std::string generate(Model const& m, std::string const& prompt, index_t length,
                            double temperature, std::mt19937_64& rng) {
  std::string text = prompt;
  // Too short a prompt is padded on the left with newlines, as the start of a document.
  std::string window = std::string(static_cast<std::size_t>(context), '\n') + prompt;
  Batch b;
  std::vector<double> p(vocab);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (index_t n = 0; n < length; ++n) {
    for (index_t k = 0; k < context; ++k)
      b.contexts[static_cast<std::size_t>(k)] =
          static_cast<std::uint8_t>(window[window.size() - static_cast<std::size_t>(context - k)]);
    forward_hidden(m, b, 1);
    double top = -1e300;
    for (index_t v = 0; v < vocab; ++v) {
      double z = 0;
      for (index_t j = 0; j < hidden; ++j)
        z += static_cast<double>(m.head[static_cast<std::size_t>(v * hidden + j)]) * b.h[j];
      p[static_cast<std::size_t>(v)] = z / temperature;
      top = std::max(top, p[static_cast<std::size_t>(v)]);
    }
    double sum = 0;
    for (double& z : p) sum += (z = std::exp(z - top));
    double u = uniform(rng) * sum;
    index_t next = vocab - 1;
    for (index_t v = 0; v < vocab; ++v) {
      u -= p[static_cast<std::size_t>(v)];
      if (u <= 0) {
        next = v;
        break;
      }
    }
    window.push_back(static_cast<char>(next));
    text.push_back(static_cast<char>(next));
  }
  return text;
}

}  // namespace lm
