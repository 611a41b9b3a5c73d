// RMSNorm over the last mode of a (rows, features) tensor, forward and backward, with PyTorch's
// semantics (torch.nn.functional.rms_norm over the last dimension, with a weight):
// y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps), eps by default the machine epsilon of
// x's element type (torch.finfo(x.dtype).eps, what eps=None means). The forward saves rstd for
// the backward. The row pass is LayerNorm's without the centring (detail/norm_rows.hpp).
#pragma once

#include <limits>
#include <optional>
#include <type_traits>

#include "../core/float16.hpp"
#include "../exec/executors.hpp"
#include "../tensor/tensor.hpp"
#include "detail/norm.hpp"

namespace tessel::nn {

struct RmsNormOptions {
  std::optional<double> eps;  // none: torch.finfo(x.dtype).eps, as torch's eps=None
};

// torch.finfo(T).eps: 2^-52 (f64), 2^-23 (f32), 2^-10 (f16), 2^-7 (bf16).
template <class T>
constexpr double machine_epsilon() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, half>)
    return 0.0009765625;
  else if constexpr (std::is_same_v<U, bfloat16>)
    return 0.0078125;
  else
    return static_cast<double>(std::numeric_limits<U>::epsilon());
}

// y = x * rstd * weight per row; saves rstd.
// @pre x, y: (N, D); weight: (D); rstd: (N) — else tessel::Error naming both shapes, before
//      anything is written
template <TensorType Y, TensorType Rstd, TensorType X, TensorType W, exec::Executor Ex = exec::Auto>
void rms_norm(Y const& y, Rstd const& rstd, X const& x, W const& weight,
              RmsNormOptions const& options = {}, Ex const& executor = {}) {
  double const eps =
      options.eps ? *options.eps : machine_epsilon<typename std::remove_cvref_t<X>::value_type>();
  detail::norm_forward<false>(executor, "rms_norm", x, y, weight, detail::Absent{},
                              detail::Absent{}, rstd, eps);
}

// dx and dweight from dy and what rms_norm saved; dweight is written (not added to).
// @pre dx, dy, x: (N, D); weight, dweight: (D); rstd: (N)
template <TensorType DX, TensorType DW, TensorType DY, TensorType X, TensorType W, TensorType Rstd,
          exec::Executor Ex = exec::Auto>
void rms_norm_backward(DX const& dx, DW const& dweight, DY const& dy, X const& x, W const& weight,
                       Rstd const& rstd, Ex const& executor = {}) {
  detail::norm_backward<false>(executor, "rms_norm_backward", dx, dweight, detail::Absent{}, dy, x,
                               weight, detail::Absent{}, rstd);
}

}  // namespace tessel::nn
