// A Shampoo optimizer's state as a flat dictionary: each tensor under a key path that follows
// Distributed Shampoo's state_dict nesting, e.g. ["0", "block_1", "shampoo", "factor_matrices",
// "0"] (parameter 0, its block 1, the first Kronecker factor). Keys flatten to JSON arrays of
// strings (the tensor names of a state file, see state_keys.hpp).
#pragma once

#include <cstddef>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"

namespace tessel::shampoo {

// One tensor of the state: C order, host byte order.
struct StateTensor {
  DType dtype = DType::f32;
  std::vector<index_t> shape;
  std::vector<std::byte> data;  // numel * dtype_size(dtype) bytes

  index_t numel() const {
    index_t n = 1;
    for (index_t e : shape) n *= e;
    return n;
  }

  friend bool operator==(StateTensor const&, StateTensor const&) = default;
};

template <class T>
requires HasDType<T> StateTensor make_state_tensor(std::vector<index_t> shape,
                                                   std::span<T const> values) {
  StateTensor t{dtype_of_v<T>, std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

using StateKey = std::vector<std::string>;
using StateDict = std::map<StateKey, StateTensor>;

// ["0","block_1",...] for error sentences: the same text as flatten_state_key (state_keys.hpp)
// gives for keys without control characters.
inline std::string state_key_text(StateKey const& key) {
  std::string out = "[";
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : key[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "]";
}

}  // namespace tessel::shampoo
