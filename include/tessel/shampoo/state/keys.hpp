// State keys as text: a key path flattens to a compact JSON array of strings, the tensor name in a
// state file (["0","block_1","shampoo","factor_matrices","0"]), and parses back with checks.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../../core/error.hpp"
#include "state_dict.hpp"

namespace tessel::shampoo {

// ["0", "block_1", "shampoo", "factor_matrices", "0"]: the key as compact JSON.
inline std::string flatten_state_key(StateKey const& key) {
  return nlohmann::json(key).dump();
}

// The key path written by flatten_state_key; tessel::Error naming the text when it is not a
// non-empty JSON array of strings.
inline StateKey parse_state_key(std::string_view text) {
  auto bad = [&] {
    tessel::detail::throw_error(tessel::detail::sentence(
        "the state key \"", text, "\" is not a JSON array of strings such as [\"0\",\"step\"]."));
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty()) bad();
  StateKey key;
  for (auto const& item : j) {
    if (!item.is_string()) bad();
    key.push_back(item.get<std::string>());
  }
  return key;
}

}  // namespace tessel::shampoo
