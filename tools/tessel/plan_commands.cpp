// `tessel plan merge-dims` and `tessel plan split`: the core's plans for a shape given on the
// command line, as JSON.
#include <iostream>
#include <string>

#include <tessel/core/merge_small_dims.hpp>
#include <tessel/core/multi_dim_split.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace tessel::cli {

namespace {

struct MergeDimsOptions {
  std::string shape;
  std::string threshold = "1024";
  std::string target = "1";
};

struct SplitOptions {
  std::string shape;
  std::string split;
};

void run_merge_dims(MergeDimsOptions const& o) {
  auto shape = to_dyn_rank(parse_extents(o.shape, "--shape"), "--shape");
  auto threshold = parse_integer(o.threshold, "--threshold");
  auto target = parse_integer(o.target, "--target");
  if (target < 1)
    detail::throw_error(detail::sentence("--target must be >= 1, got ", target, "."));
  auto merged = merge_small_dims(shape, threshold, target);
  std::cout << json_line({{"shape", to_vector(merged)}}) << '\n';
}

void run_split(SplitOptions const& o) {
  auto shape = to_dyn_rank(parse_extents(o.shape, "--shape"), "--shape");
  auto split = parse_integer(o.split, "--split");
  if (split <= 0) detail::throw_error(detail::sentence("--split must be > 0, got ", split, "."));
  nlohmann::json blocks = nlohmann::json::array();
  for (auto const& b : multi_dim_split(shape, split))
    blocks.push_back({{"offset", to_vector(b.offset)}, {"shape", to_vector(b.shape)}});
  std::cout << json_line({{"blocks", blocks}}) << '\n';
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  auto* plan = app.add_subcommand("plan", "Print a plan computed from shapes, as JSON.");
  plan->require_subcommand(1);

  auto merge = std::make_shared<MergeDimsOptions>();
  auto* merge_cmd = plan->add_subcommand(
      "merge-dims", "Merge small adjacent extents (Distributed Shampoo's merge_small_dims).");
  merge_cmd->add_option("--shape", merge->shape, "Extents, comma-separated, e.g. 32,3,64,64")->required();
  merge_cmd->add_option("--threshold", merge->threshold, "Largest merged extent")->capture_default_str();
  merge_cmd->add_option("--target", merge->target, "Target number of dimensions")->capture_default_str();
  merge_cmd->callback([merge] { run_merge_dims(*merge); });

  auto split = std::make_shared<SplitOptions>();
  auto* split_cmd = plan->add_subcommand(
      "split", "Cut a shape into blocks of at most --split per mode, in row-major block order.");
  split_cmd->add_option("--shape", split->shape, "Extents, comma-separated, e.g. 5,3")->required();
  split_cmd->add_option("--split", split->split, "Largest block extent")->required();
  split_cmd->callback([split] { run_split(*split); });
}

}  // namespace tessel::cli
