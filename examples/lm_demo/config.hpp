// lm_demo's static shapes and the two plans the compiler derives from them: FLCE's chunking of
// the (BT, V) logits and Shampoo's blocking of the three parameters. Kept free of Eigen and I/O so
// the CUDA translation unit includes it too.
#pragma once

#include <tessel/core/int.hpp>
#include <tessel/core/shape.hpp>
#include <tessel/flce/plan.hpp>
#include <tessel/shampoo/plan.hpp>

namespace lm {

using tessel::index_t;
using tessel::Int;

// The model: the last `context` bytes, each embedded in `embed` numbers and concatenated, go
// through one tanh layer of `hidden` units; the LM head maps those to the 256 byte logits.
inline constexpr index_t vocab = 256;  // bytes
inline constexpr index_t context = 8;  // bytes the model sees before the one it predicts
inline constexpr index_t embed = 32;   // embedding width per byte
inline constexpr index_t features = context * embed;  // input of the hidden layer
inline constexpr index_t hidden = 128;                // hidden units = the LM head's input size
inline constexpr index_t batch_tokens = 512;          // BT: predicted bytes per step
inline constexpr index_t max_block = 256;             // Shampoo's max_preconditioner_dim

// The LM head's loss and gradients come from FLCE; with static shapes its plan is a type. The
// host plan keeps a chunk of logits within 1/8 of them: chunks of BT / 8 rows. (A CUDA run takes
// Liger-Kernel's plan, a chunk about as large as the (BT, H) input: 2 chunks of 256 rows.)
inline constexpr auto flce_plan =
    tessel::flce::make_host_plan(Int<batch_tokens>{}, Int<hidden>{}, Int<vocab>{});
static_assert(decltype(flce_plan)::chunk_size == 64 && decltype(flce_plan)::num_chunks == 8,
              "the host FLCE plan of the LM head is 8 chunks of 64 rows.");

// The three parameters Shampoo optimizes, in this order. The hidden layer is a CombinedLinear:
// weight and bias in one (hidden, features + 1) matrix.
inline constexpr auto shampoo_plan = tessel::shampoo::make_plan(
    tessel::shampoo::plan_options(Int<max_block>{}, Int<1>{}, 1),
    tessel::make_shape(Int<vocab>{}, Int<embed>{}),          // 0: embedding (256, 32)
    tessel::make_shape(Int<hidden>{}, Int<features + 1>{}),  // 1: hidden layer (128, 257)
    tessel::make_shape(Int<vocab>{}, Int<hidden>{}));        // 2: LM head (256, 128)
// The hidden layer's 257 columns exceed max_block: its bias column becomes a block of its own.
static_assert(shampoo_plan.num_params() == 3 && shampoo_plan.num_blocks() == 4,
              "the Shampoo plan cuts the three parameters into four blocks.");
static_assert(shampoo_plan.block_shape(1) == tessel::shampoo::Extents{hidden, max_block} &&
                  shampoo_plan.block_shape(2) == tessel::shampoo::Extents{hidden, 1},
              "the hidden layer's blocks are (128, 256) and its bias column (128, 1).");

inline constexpr index_t num_params = 3;
inline constexpr index_t param_sizes[num_params] = {vocab * embed, hidden*(features + 1),
                                                    vocab* hidden};

}  // namespace lm
