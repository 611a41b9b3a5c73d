// Registration functions of the CLI's command families (one source file each).
#pragma once

#include <CLI/CLI.hpp>

namespace tessel::cli {

// `tessel plan ...`: layout plans as JSON.
void add_plan_commands(CLI::App& app);

// `tessel plan attention` (under the existing `plan`, so after add_plan_commands).
void add_attention_commands(CLI::App& app);
// `tessel plan flce` (under the existing `plan`, so after add_plan_commands) and `tessel flce`.
void add_flce_commands(CLI::App& app);
// `tessel plan shampoo`, `tessel plan distribute` and `tessel shampoo ...` (after
// add_plan_commands: it adds to the plan family).
void add_shampoo_commands(CLI::App& app);

}  // namespace tessel::cli
