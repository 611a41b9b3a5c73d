// The tensors of an attention call, grouped: AttentionSaved (what the forward reads and writes
// and the backward reads again) and AttentionGrads (what the backward writes). Each keeps views
// of the tensors it is made from, owning or not, so the kernel bodies copy them by value.
#pragma once

#include <utility>

#include "../tensor/tensor.hpp"

namespace tessel::nn {

// The tensors of an attention call: queries, keys and values (B, T, heads, head_dim), the output
// (B, T, heads, head_dim) and each row's log-sum-exp (B, heads, T). Made from tensors (owning or
// views, as the caller has them), it keeps views, which the kernel bodies copy by value.
template <TensorType Q, TensorType K, TensorType V, TensorType O, TensorType L>
struct AttentionSaved {
  decltype(std::declval<Q const&>().view()) q;
  decltype(std::declval<K const&>().view()) k;
  decltype(std::declval<V const&>().view()) v;
  decltype(std::declval<O const&>().view()) out;
  decltype(std::declval<L const&>().view()) lse;

  AttentionSaved(Q const& q_, K const& k_, V const& v_, O const& out_, L const& lse_)
      : q(q_.view()), k(k_.view()), v(v_.view()), out(out_.view()), lse(lse_.view()) {}
};

// The gradients a backward call writes, each (B, T, heads, head_dim); views, like AttentionSaved.
template <TensorType DQ, TensorType DK, TensorType DV>
struct AttentionGrads {
  decltype(std::declval<DQ const&>().view()) q;
  decltype(std::declval<DK const&>().view()) k;
  decltype(std::declval<DV const&>().view()) v;

  AttentionGrads(DQ const& q_, DK const& k_, DV const& v_)
      : q(q_.view()), k(k_.view()), v(v_.view()) {}
};

}  // namespace tessel::nn
