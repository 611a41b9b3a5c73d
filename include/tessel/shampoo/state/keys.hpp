// State keys as text: a key path flattens to a compact JSON array of strings, the tensor name in a
// state file (["0","block_1","shampoo","factor_matrices","0"]), and parses back with checks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "../../core/error.hpp"
#include "../../io/json.hpp"
#include "state_dict.hpp"

namespace tessel::shampoo {

// ["0", "block_1", "shampoo", "factor_matrices", "0"]: the key as compact JSON, escaped as
// nlohmann's dump() escaped it, so the names in state files written before are the same bytes.
// Bytes that are not UTF-8 are kept: writing the name to a safetensors file then fails with a
// sentence naming it.
inline std::string flatten_state_key(StateKey const& key) {
  std::string out = "[";
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (i > 0) out += ',';
    tessel::detail::json::write_string(out, key[i]);
  }
  return out + "]";
}

// The key path written by flatten_state_key; tessel::Error naming the text when it is not a
// non-empty JSON array of strings.
inline StateKey parse_state_key(std::string_view text) {
  auto bad = [&] {
    tessel::detail::throw_error(tessel::detail::sentence(
        "the state key \"", text, "\" is not a JSON array of strings such as [\"0\",\"step\"]."));
  };
  // One array: nothing nests inside it.
  tessel::detail::json::Parsed const parsed = tessel::detail::json::parse(text, 1);
  if (!parsed.value || !parsed.value->is_array() || parsed.value->items().empty()) bad();
  StateKey key;
  for (auto const& item : parsed.value->items()) {
    if (!item.is_string()) bad();
    key.push_back(item.string());
  }
  return key;
}

}  // namespace tessel::shampoo
