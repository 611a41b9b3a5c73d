// A GPT-2-style model's configuration as types: every extent the kernels see (layers, heads,
// channels, vocabulary, context, and a step's batch and sequence length) is an Int<>, so each
// layer's views, the attention plan and the LM head's FLCE plan are static, and the code of a
// step is instantiated for exactly these shapes.
#pragma once

#include <tessel/core/int.hpp>

namespace gpt {

using tessel::index_t;
using tessel::Int;

// Layers, heads, channels (n_embd), vocabulary and maximum context (GPT-2's n_positions).
template <index_t Layers, index_t Heads, index_t Channels, index_t Vocab, index_t Context>
struct Config {
  static_assert(Channels % Heads == 0, "gpt: the channels must split evenly over the heads.");
  static constexpr Int<Layers> layers{};
  static constexpr Int<Heads> heads{};
  static constexpr Int<Channels> channels{};
  static constexpr Int<Channels / Heads> head_dim{};
  static constexpr Int<Vocab> vocab{};
  static constexpr Int<Context> context{};

  // Parameters of one block, in GPT-2's order: ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
  // mlp.c_proj (each weight then its bias).
  static constexpr index_t block_params =
      2 * Channels + Channels * 3 * Channels + 3 * Channels + Channels * Channels + Channels +
      2 * Channels + Channels * 4 * Channels + 4 * Channels + 4 * Channels * Channels + Channels;
  // wte, wpe, the blocks, ln_f.
  static constexpr index_t num_params =
      Vocab * Channels + Context * Channels + Layers * block_params + 2 * Channels;
};

// GPT-2 small (124M parameters; the vocabulary padded to 50304 as llm.c pads it).
using Gpt2Small = Config<12, 12, 768, 50304, 1024>;

// A step's batch: B sequences of T tokens (T <= the context).
template <index_t B, index_t T>
struct Batch {
  static constexpr Int<B> batch{};
  static constexpr Int<T> seq{};
  static constexpr Int<B * T> tokens{};
};

}  // namespace gpt
