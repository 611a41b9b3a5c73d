// Shampoo state files: the state dictionary as a safetensors file, each tensor named by its
// flattened key path (["0","block_1","shampoo","factor_matrices","0"]), so Python's safetensors
// reads it (json.loads(name) gives the path back). Saving is atomic and loading round-trips bit
// for bit. Loading reads and checks the whole file, then the state, before the optimizer is
// touched: a truncated or corrupted file, or a state that does not fit, changes nothing.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "../../io/safetensors.hpp"
#include "../optimizer.hpp"
#include "keys.hpp"
#include "state_dict.hpp"

namespace tessel::shampoo {

// The metadata every state file carries.
inline constexpr char const* state_file_format = "tessel.shampoo.state/1";

inline SafetensorsFile to_safetensors(StateDict const& state,
                                      std::map<std::string, std::string> metadata = {}) {
  SafetensorsFile file;
  file.metadata = std::move(metadata);
  file.metadata["format"] = state_file_format;
  for (auto const& [key, tensor] : state)
    file.tensors.push_back(
        SafetensorsEntry{flatten_state_key(key), tensor.dtype, tensor.shape, tensor.data});
  return file;
}

// The state held by a safetensors file; tessel::Error when a tensor name is not a key path or two
// names give the same path.
inline StateDict from_safetensors(SafetensorsFile const& file) {
  StateDict state;
  for (auto const& t : file.tensors) {
    StateKey key = parse_state_key(t.name);
    if (state.contains(key))
      tessel::detail::throw_error(tessel::detail::sentence(
          "the state file names the key ", state_key_text(key), " twice (as \"", t.name, "\")."));
    state.emplace(std::move(key), StateTensor{t.dtype, t.shape, t.data});
  }
  return state;
}

inline void save_state(std::filesystem::path const& path, StateDict const& state,
                       std::map<std::string, std::string> metadata = {}) {
  write_safetensors(path, to_safetensors(state, std::move(metadata)));
}

inline StateDict load_state(std::filesystem::path const& path) {
  return from_safetensors(read_safetensors(path));
}

// The optimizer's state in a safetensors file, with its step in the metadata: any Shampoo, its
// family named or chosen at run time, its plan static or not, on any executor.
template <class T, class F, class P, class X>
void save_checkpoint(BasicShampoo<T, F, P, X> const& optimizer, std::filesystem::path const& path) {
  save_state(path, optimizer.state_dict(), {{"step", std::to_string(optimizer.step_count())}});
}

// Loads a file written by save_checkpoint into an optimizer built with the same plan and options.
// @post on any error the optimizer is unchanged
template <class T, class F, class P, class X>
void load_checkpoint(BasicShampoo<T, F, P, X>& optimizer, std::filesystem::path const& path) {
  optimizer.load_state_dict(load_state(path));
}

}  // namespace tessel::shampoo
