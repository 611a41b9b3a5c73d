// FLCE quickstart: the loss and gradients of cross_entropy(x @ W.T + b, y) without the (BT, V)
// logits, on the host's executor; the plan of a Llama-3-sized problem computed by the compiler.
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

#include <tessel/tessel.hpp>

using namespace tessel;
using namespace tessel::literals;

int main() {
  // 4 rows (tokens), hidden size 3, vocabulary 5. Row 2 is padding (ignore_index -100).
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 1.5f,  0.0f, -0.5f,
                          0.0f, 0.0f,  0.0f, -1.0f, 1.0f, 1.0f};
  std::vector<float> w = {0.1f, 0.2f, 0.3f, -0.3f, 0.1f, 0.0f, 0.5f, -0.5f,
                          0.2f, 0.0f, 0.4f, -0.1f, 0.2f, 0.2f, 0.2f};
  std::vector<std::int64_t> y = {2, 0, -100, 4};
  auto input = make_tensor(x.data(), make_shape(4_c, 3_c));   // static shapes:
  auto weight = make_tensor(w.data(), make_shape(5_c, 3_c));  // the plan is a type
  auto target = make_tensor(y.data(), make_shape(4_c));

  float loss = 0;
  std::vector<float> dx(4 * 3), dw(5 * 3);
  flce::FlcePlan plan = flce::forward(input, weight, target, {.label_smoothing = 0.1},
                                      {.loss = make_tensor(&loss, make_shape(1)),
                                       .grad_input = make_tensor(dx.data(), make_shape(4, 3)),
                                       .grad_weight = make_tensor(dw.data(), make_shape(5, 3))},
                                      exec::Auto{});  // the executor (the default): host threads
  // The loop that ran was instantiated with the static plan: the host plan keeps a chunk of logits
  // within 1/8 of them, so chunks of 1 row here; V = 5 and the chunk size are types.
  using Loop = flce::lowered_t<decltype(input), decltype(weight), decltype(target), exec::Auto>;
  static_assert(std::is_same_v<Loop::plan_type, flce::StaticFlcePlan<4, 3, 5, 1>>);
  std::printf("loss %.6f (mean over 3 rows; %ld chunk(s) of %ld rows)\n", loss,
              static_cast<long>(plan.num_chunks), static_cast<long>(plan.chunk_size));
  std::printf("grad_input row 0: % .6f % .6f % .6f\n", dx[0], dx[1], dx[2]);
  std::printf("grad_input row 2: % .6f % .6f % .6f (ignored row)\n", dx[6], dx[7], dx[8]);

  // Llama-3 8B's output layer at 16k tokens: chunking decided at compile time, on a GPU
  // (chunks of at most 1/4 of the batch within a 1 GiB budget) and on the host (at most 1/8 within
  // 64 MiB).
  constexpr auto llama = flce::make_device_plan(16384_c, 4096_c, 128256_c);
  static_assert(decltype(llama)::chunk_size == 2048 && decltype(llama)::num_chunks == 8);
  constexpr auto llama_host = flce::make_host_plan(16384_c, 4096_c, 128256_c);
  static_assert(decltype(llama_host)::chunk_size == 128 && decltype(llama_host)::num_chunks == 128);
  std::printf(
      "BT=16384 H=4096 V=128256: on a GPU %ld chunks of %ld rows, %.1f MiB of bf16 scratch "
      "(the logits would take %.1f GiB); on the host %ld chunks of %ld rows\n",
      static_cast<long>(llama.num_chunks), static_cast<long>(llama.chunk_size),
      static_cast<double>(llama.scratch_bytes(DType::bf16)) / (1 << 20),
      16384.0 * 128256 * 2 / (1 << 30), static_cast<long>(llama_host.num_chunks),
      static_cast<long>(llama_host.chunk_size));
}
