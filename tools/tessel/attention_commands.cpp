// `tessel plan attention`: the attention tiling plan (nn/attention_plan.hpp) for a shape given on
// the command line, as one line of JSON (flat, like `plan flce`'s) or as the library prints it
// (--format table: std::cout << plan).
#include <iostream>
#include <string>
#include <type_traits>

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>
#include <tessel/nn/attention_plan.hpp>
#include <tessel/nn/attention_plan_print.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace tessel::cli {

namespace {

using tessel::detail::sentence;
using tessel::detail::throw_error;

struct PlanAttentionOptions {
  std::string batch, heads, seq_len, head_dim;
  std::string dtype = "f32";
  std::string budget = std::to_string(nn::default_attention_tile_budget);
  std::string format = "json";
};

// The plan for the dtype named on the command line: make_attention_plan of its C++ type, through
// the one dispatch from a DType to a type.
nn::AttentionPlan plan_for(DType dtype, index_t b, index_t heads, index_t t, index_t d,
                           index_t budget) {
  return visit_dtype(dtype, [&](auto type) -> nn::AttentionPlan {
    using T = typename decltype(type)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      return nn::make_attention_plan<T>(b, heads, t, d, budget);
    else
      throw_error(
          sentence("--dtype: attention computes on f32 or f64, not ", dtype_name(dtype), "."));
  });
}

void run_plan_attention(PlanAttentionOptions const& o) {
  auto const b = parse_integer(o.batch, "--batch");
  auto const heads = parse_integer(o.heads, "--heads");
  auto const t = parse_integer(o.seq_len, "--seq-len");
  auto const d = parse_integer(o.head_dim, "--head-dim");
  auto const budget = parse_integer(o.budget, "--budget");
  DType const dtype = parse_dtype(o.dtype);
  if (o.format != "json" && o.format != "table")
    throw_error(sentence("--format must be json or table, got \"", o.format, "\"."));
  nn::AttentionPlan const plan = plan_for(dtype, b, heads, t, d, budget);
  if (o.format == "table") {
    std::cout << plan << '\n';
    return;
  }
  nlohmann::json const out = {{"batch", plan.batch},
                              {"heads", plan.heads},
                              {"seq_len", plan.seq_len},
                              {"head_dim", plan.head_dim},
                              {"dtype", std::string(dtype_name(dtype))},
                              {"q_tile", plan.q_tile},
                              {"kv_tile", plan.kv_tile},
                              {"num_q_tiles", plan.num_q_tiles},
                              {"num_kv_tiles", plan.num_kv_tiles},
                              {"tile_bytes", plan.tile_bytes},
                              {"tile_budget", budget},
                              {"scratch_bytes", plan.scratch_bytes}};
  std::cout << json_line(out) << '\n';
}

}  // namespace

void add_attention_commands(CLI::App& app) {
  auto* plan = app.get_subcommand("plan");
  auto o = std::make_shared<PlanAttentionOptions>();
  auto* cmd = plan->add_subcommand(
      "attention",
      "Causal attention's tiling plan: query and key/value tiles, their counts, the bytes a work "
      "item keeps hot and the backward's scratch.");
  cmd->add_option("--batch", o->batch, "Batch size B")->required();
  cmd->add_option("--heads", o->heads, "Number of heads")->required();
  cmd->add_option("--seq-len", o->seq_len, "Sequence length T")->required();
  cmd->add_option("--head-dim", o->head_dim, "Head dimension")->required();
  cmd->add_option("--dtype", o->dtype, "Element type: f32 or f64")->capture_default_str();
  cmd->add_option("--budget", o->budget, "Bytes one work item may keep hot (the tile budget)")
      ->capture_default_str();
  cmd->add_option("--format", o->format,
                  "json (one line) or table (the plan as std::cout << plan prints it)")
      ->capture_default_str();
  cmd->callback([o] { run_plan_attention(*o); });
}

}  // namespace tessel::cli
