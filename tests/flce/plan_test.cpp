// The FLCE plan: the contract's numbers at compile time and at run time from the same code, the
// chunk heuristic against a brute-force statement of it, the scratch formula, and the errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <type_traits>

#include <tessel/flce/call.hpp>
#include <tessel/flce/plan.hpp>
#include <tessel/flce/plan_print.hpp>

namespace {

using namespace tessel;
using namespace tessel::flce;

// api-contract.md's example, static: the plan is a type whose numbers are template arguments.
constexpr auto llama_plan = make_plan(Int<16384>{}, Int<4096>{}, Int<128256>{});
static_assert(make_plan(Int<16384>{}, Int<4096>{}, Int<128256>{}).chunk_size == 512);
static_assert(decltype(llama_plan)::num_chunks == 32);
static_assert(std::is_same_v<decltype(llama_plan.rows_per_chunk()), Int<512>>);
static_assert(std::is_same_v<Int<decltype(llama_plan)::chunk_size>, Int<512>>);
static_assert(std::is_empty_v<std::remove_cv_t<decltype(llama_plan)>>);
// ... and the same numbers from run-time integers, in a constant expression too.
static_assert(make_plan(16384, 4096, 128256).chunk_size == 512);
static_assert(make_plan(16384, 4096, 128256) == FlcePlan(llama_plan));
static_assert(AnyFlcePlan<decltype(llama_plan)> && AnyFlcePlan<FlcePlan>);
// Mixed static and run-time extents give a run-time plan with the same numbers.
static_assert(std::is_same_v<decltype(make_plan(Int<16384>{}, 4096, Int<128256>{})), FlcePlan>);
// bt <= 0: chunk 1, no chunks.
static_assert(make_plan(Int<0>{}, Int<8>{}, Int<8>{}).chunk_size == 1);
static_assert(make_plan(Int<0>{}, Int<8>{}, Int<8>{}).num_chunks == 0);
// A forced chunk size, static.
static_assert(make_plan(Int<100>{}, Int<8>{}, Int<8>{}, Int<7>{}).num_chunks == 15);
// The scratch size is a constant expression.
static_assert(llama_plan.scratch_bytes(DType::bf16) > 0);

// The contract's formula stated directly: min(2048, next_pow2(ceil(bt / ceil(v / h)))).
index_t contract_chunk(index_t bt, index_t h, index_t v) {
  if (bt <= 0) return 1;
  index_t inc = (v + h - 1) / h;
  index_t rows = (bt + inc - 1) / inc;
  index_t p = 1;
  while (p < rows) p <<= 1;
  return p < 2048 ? p : 2048;
}

TEST(FlcePlan, FollowsTheContractFormulaOverAGridOfShapes) {
  for (index_t bt : {0, 1, 2, 3, 47, 64, 1000, 2048, 4096, 16384, 100000, 1 << 24})
    for (index_t h : {1, 7, 31, 512, 4096})
      for (index_t v : {1, 5, 123, 32000, 128256}) {
        FlcePlan const p = make_plan(bt, h, v);
        ASSERT_EQ(p.chunk_size, contract_chunk(bt, h, v)) << bt << " " << h << " " << v;
        ASSERT_EQ(p.num_chunks, bt <= 0 ? 0 : (bt + p.chunk_size - 1) / p.chunk_size);
        ASSERT_EQ(p.bt, bt);
        ASSERT_EQ(p.hidden, h);
        ASSERT_EQ(p.vocab, v);
      }
}

TEST(FlcePlan, WorkedExamples) {
  // The benchmark shape: ceil(32000 / 512) = 63, ceil(2048 / 63) = 33, next_pow2 = 64.
  EXPECT_EQ(make_plan(2048, 512, 32000).chunk_size, 64);
  EXPECT_EQ(make_plan(2048, 512, 32000).num_chunks, 32);
  // V <= H: one row of logits per input row, capped at 2048.
  EXPECT_EQ(make_plan(100000, 4096, 4096).chunk_size, 2048);
  EXPECT_EQ(make_plan(100000, 4096, 4096).num_chunks, 49);
  EXPECT_EQ(make_plan(47, 40, 5).chunk_size, 64);
  EXPECT_EQ(make_plan(47, 40, 5).buffer_rows(), 47);
  EXPECT_EQ(make_plan(1, 4096, 128256).chunk_size, 1);
  EXPECT_EQ(make_plan(47, 31, 123, 7).num_chunks, 7);
}

index_t aligned(index_t bytes) {
  return (bytes + 255) / 256 * 256;
}

TEST(FlcePlan, ScratchBytesFollowTheDocumentedFormula) {
  FlcePlan const p = make_plan(16384, 4096, 128256);  // R = 512 rows
  index_t const rv = 512 * 128256;
  index_t const rows = aligned(16384 * 4);
  index_t const hits = aligned(16384);  // a byte a row for the accuracy
  // f32: the logits (overwritten by the gradient in place), three per-row terms (cross-entropy,
  // z-loss, soft targets), the per-row hits, the scalars.
  EXPECT_EQ(p.scratch_bytes(DType::f32), aligned(rv * 4) + 3 * rows + hits + 256);
  EXPECT_EQ(p.scratch_bytes(DType::f32, Device::host), p.scratch_bytes(DType::f32));
  EXPECT_EQ(p.scratch_bytes(DType::f64), aligned(rv * 8) + 3 * aligned(16384 * 8) + hits + 256);
  // bf16 on CUDA: f32 logits plus the bf16 gradient the tensor-core GEMMs read.
  EXPECT_EQ(p.scratch_bytes(DType::bf16),
            aligned(rv * 4) + aligned(rv * 2) + 3 * rows + hits + 256);
  EXPECT_EQ(p.scratch_bytes(DType::bf16), 394215680);
  // bf16 on the host: f32 logits, the weight and a chunk of input and grad_input in f32.
  EXPECT_EQ(p.scratch_bytes(DType::f16, Device::host),
            aligned(rv * 4) + aligned(128256 * 4096 * index_t{4}) + 2 * aligned(512 * 4096 * 4) +
                3 * rows + hits + 256);
  // Fewer rows than a chunk: only bt rows are allocated.
  FlcePlan const small = make_plan(3, 1000, 8);
  EXPECT_EQ(small.chunk_size, 4);
  EXPECT_EQ(small.scratch_bytes(DType::f32),
            aligned(3 * 8 * 4) + 3 * aligned(3 * 4) + aligned(3) + 256);
}

TEST(FlcePlan, ScratchLayoutPlacesAlignedDisjointBuffers) {
  ScratchLayout const l = make_plan(47, 31, 123).scratch_layout(DType::bf16, Device::host);
  index_t const offsets[] = {l.logits,   l.gradient, l.weight_f32, l.input_f32,   l.grad_input_f32,
                             l.row_loss, l.row_z,    l.row_soft,   l.row_correct, l.scalars};
  index_t const sizes[] = {l.logits_bytes,    l.gradient_bytes,       l.weight_f32_bytes,
                           l.input_f32_bytes, l.grad_input_f32_bytes, l.row_loss_bytes,
                           l.row_z_bytes,     l.row_soft_bytes,       l.row_correct_bytes,
                           l.scalars_bytes};
  index_t end = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(offsets[i] % scratch_alignment, 0);
    EXPECT_EQ(offsets[i], end);
    end += sizes[i];
  }
  EXPECT_EQ(end, l.total);
  EXPECT_EQ(l.gradient_bytes, 0);  // the host keeps the gradient in f32
  EXPECT_EQ(l.weight_f32_bytes, aligned(123 * 31 * 4));
}

// The host plan, stated directly: the largest power of two of rows <= bt / 8 and <= 2048 whose
// f32 logits fit in the budget (1 if none).
index_t host_chunk(index_t bt, index_t v, index_t budget, index_t parts = 8) {
  index_t best = 1;
  for (index_t p = 1; p <= 2048; p <<= 1)
    if (p <= bt / parts && p * v * 4 <= budget) best = p;
  return best;
}

// Static and run-time shapes give one plan; it is Liger's for no shape that reaches the budget.
constexpr auto host_llama = make_host_plan(Int<16384>{}, Int<4096>{}, Int<128256>{});
static_assert(std::is_same_v<std::remove_cvref_t<decltype(host_llama)>,
                             StaticFlcePlan<16384, 4096, 128256, 128>>);
static_assert(make_host_plan(16384, 4096, 128256) == FlcePlan(host_llama));
static_assert(make_host_plan(Int<2048>{}, Int<512>{}, Int<32000>{}).chunk_size == 256);
static_assert(make_host_plan(Int<2048>{}, Int<512>{}, Int<32000>{}, Int<16 << 20>{}).chunk_size ==
              128);
static_assert(std::is_same_v<decltype(make_host_plan(Int<64>{}, 8, Int<8>{})), FlcePlan>);

TEST(FlceHostPlan, FollowsItsFormulaOverAGridOfShapesAndBudgets) {
  for (index_t bt : {0, 1, 7, 8, 47, 64, 1000, 2048, 4096, 16384, 100000, 1 << 24})
    for (index_t v : {1, 5, 123, 32000, 128256})
      for (index_t budget : {index_t{0}, index_t{1} << 20, host_chunk_budget, index_t{1} << 34}) {
        FlcePlan const p = make_host_plan(bt, 16, v, budget);
        ASSERT_EQ(p.chunk_size, host_chunk(bt, v, budget)) << bt << " " << v << " " << budget;
        ASSERT_EQ(p.num_chunks, bt <= 0 ? 0 : (bt + p.chunk_size - 1) / p.chunk_size);
        // The chunk's logits stay within 1/8 of the whole logits whenever a chunk can.
        if (bt >= 8) {
          ASSERT_LE(p.chunk_size * 8, bt);
        }
      }
  EXPECT_EQ(make_host_plan(2048, 512, 32000), make_host_plan(2048, 512, 32000, host_chunk_budget));
  EXPECT_EQ(make_host_plan(2048, 512, 32000).num_chunks, 8);
  EXPECT_EQ(make_host_plan(4096, 2048, 32000).chunk_size, 512);
  EXPECT_EQ(make_host_plan(100000, 4096, 4096).chunk_size, 2048);
}

// The device plan: the same rule within 1/4 of the logits and a 1 GiB budget. At the shapes
// measured on an H200 (docs/benchmarks.md, "CUDA FLCE") it takes 1024 rows at BT 4096 and 2048 at
// BT 16384, where Liger-Kernel's rule (make_plan) takes 128 and 512.
constexpr auto device_llama = make_device_plan(Int<16384>{}, Int<4096>{}, Int<128256>{});
static_assert(std::is_same_v<std::remove_cvref_t<decltype(device_llama)>,
                             StaticFlcePlan<16384, 4096, 128256, 2048>>);
static_assert(make_device_plan(16384, 4096, 128256) == FlcePlan(device_llama));
static_assert(make_device_plan(Int<4096>{}, Int<4096>{}, Int<128256>{}).chunk_size == 1024);
static_assert(make_plan(Int<4096>{}, Int<4096>{}, Int<128256>{}).chunk_size == 128);
static_assert(
    make_device_plan(Int<4096>{}, Int<4096>{}, Int<128256>{}, Int<256 << 20>{}).chunk_size == 512);
static_assert(std::is_same_v<decltype(make_device_plan(Int<64>{}, 8, Int<8>{})), FlcePlan>);
static_assert(std::is_same_v<
              call_plan_t<decltype(make_device_tensor(static_cast<float const*>(nullptr),
                                                      make_shape(Int<4096>{}, Int<4096>{}))),
                          decltype(make_device_tensor(static_cast<float const*>(nullptr),
                                                      make_shape(Int<128256>{}, Int<4096>{})))>,
              StaticFlcePlan<4096, 4096, 128256, 1024>>);

TEST(FlceDevicePlan, FollowsItsFormulaOverAGridOfShapesAndBudgets) {
  for (index_t bt : {0, 1, 3, 4, 47, 64, 1000, 2048, 4096, 16384, 100000, 1 << 24})
    for (index_t v : {1, 5, 123, 32000, 128256})
      for (index_t budget : {index_t{0}, index_t{1} << 20, device_chunk_budget, index_t{1} << 34}) {
        FlcePlan const p = make_device_plan(bt, 16, v, budget);
        ASSERT_EQ(p.chunk_size, host_chunk(bt, v, budget, 4)) << bt << " " << v << " " << budget;
        ASSERT_EQ(p.num_chunks, bt <= 0 ? 0 : (bt + p.chunk_size - 1) / p.chunk_size);
        if (bt >= 4) {
          ASSERT_LE(p.chunk_size * 4, bt);
        }
      }
  EXPECT_EQ(make_device_plan(4096, 4096, 128256),
            make_device_plan(4096, 4096, 128256, device_chunk_budget));
  EXPECT_EQ(make_device_plan(16384, 4096, 128256).num_chunks, 8);
  EXPECT_EQ(make_device_plan(16384, 4096, 128256).scratch_bytes(DType::bf16, Device::cuda),
            FlcePlan(device_llama).scratch_bytes(DType::bf16, Device::cuda));
}

TEST(FlcePlan, RejectsImpossibleShapesWithASentence) {
  auto message = [](auto f) -> std::string {
    try {
      f();
    } catch (Error const& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message([] { make_plan(5, 0, 7); }), "an FLCE plan needs a hidden size >= 1, got 0.");
  EXPECT_EQ(message([] { make_plan(5, 3, 0); }),
            "an FLCE plan needs a vocabulary size >= 1, got 0.");
  EXPECT_EQ(message([] { make_plan(-2, 3, 4); }),
            "an FLCE plan needs a row count (bt) >= 0, got -2.");
  EXPECT_EQ(message([] { make_plan(5, 3, 4, 0); }), "an FLCE chunk size must be >= 1, got 0.");
  EXPECT_EQ(message([] { make_host_plan(5, 3, 4, -1); }),
            "an FLCE scratch budget must be >= 0 bytes, got -1.");
  EXPECT_EQ(message([] { make_host_plan(5, 0, 4); }),
            "an FLCE plan needs a hidden size >= 1, got 0.");
  EXPECT_EQ(message([] { make_plan(5, 3, 4).scratch_bytes(DType::i64); }),
            "FLCE computes on f32, f64, f16 or bf16 storage, not i64.");
  EXPECT_EQ(message([] { make_plan(5, 3, index_t{1} << 61).scratch_bytes(DType::f64); }),
            "the FLCE scratch buffer of 1 x 2305843009213693952 x 8 bytes does not fit in a "
            "64-bit size.");
}

TEST(FlcePlanPrint, ShowsExtentsAndChunks) {
  std::ostringstream run_time, compile_time, one;
  run_time << make_plan(16384, 4096, 128256);
  compile_time << make_plan(Int<16384>{}, Int<4096>{}, Int<128256>{});
  one << make_plan(1, 8, 16);
  EXPECT_EQ(run_time.str(), "FLCE plan: BT 16384, H 4096, V 128256; 32 chunks of 512 rows");
  EXPECT_EQ(compile_time.str(), run_time.str() + " (static)");
  EXPECT_EQ(one.str(), "FLCE plan: BT 1, H 8, V 16; 1 chunk of 1 row");
}

}  // namespace
