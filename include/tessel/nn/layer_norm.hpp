// LayerNorm over the last mode of a (rows, features) tensor, forward and backward, with PyTorch's
// semantics (torch.nn.functional.layer_norm over the last dimension, elementwise affine): biased
// variance, eps inside the square root (default 1e-5), the forward saving each row's mean and
// rstd = 1 / sqrt(var + eps) for the backward, as torch.native_layer_norm does. Statistics and
// gradients are computed in the compute type (float for half / bfloat16). One row pass per
// direction (detail/norm_rows.hpp), through the executor; see docs/nn.md.
#pragma once

#include "../exec/executors.hpp"
#include "../tensor/tensor.hpp"
#include "detail/norm.hpp"

namespace tessel::nn {

struct LayerNormOptions {
  double eps = 1e-5;  // torch.nn.LayerNorm's default
};

// y = (x - mean) * rstd * weight + bias per row; saves mean and rstd.
// @pre x, y: (N, D); weight, bias: (D); mean, rstd: (N) — else tessel::Error naming both shapes,
//      before anything is written
template <TensorType Y, TensorType Mean, TensorType Rstd, TensorType X, TensorType W, TensorType B,
          exec::Executor Ex = exec::Auto>
void layer_norm(Y const& y, Mean const& mean, Rstd const& rstd, X const& x, W const& weight,
                B const& bias, LayerNormOptions const& options = {}, Ex const& executor = {}) {
  detail::check_spaces<Ex, Mean, B>();
  detail::check_writable<Mean>();
  detail::norm_forward<true>(executor, "layer_norm", x, y, weight, bias, mean, rstd, options.eps);
}

// dx, dweight, dbias from dy and what layer_norm saved. dweight and dbias are written (not added
// to): sums over the rows of dy * xhat and dy.
// @pre dx, dy, x: (N, D); weight, dweight, dbias: (D); mean, rstd: (N)
template <TensorType DX, TensorType DW, TensorType DB, TensorType DY, TensorType X, TensorType W,
          TensorType Mean, TensorType Rstd, exec::Executor Ex = exec::Auto>
void layer_norm_backward(DX const& dx, DW const& dweight, DB const& dbias, DY const& dy, X const& x,
                         W const& weight, Mean const& mean, Rstd const& rstd,
                         Ex const& executor = {}) {
  detail::check_spaces<Ex, DB, Mean>();
  detail::check_writable<DB>();
  detail::norm_backward<true>(executor, "layer_norm_backward", dx, dweight, dbias, dy, x, weight,
                              mean, rstd);
}

}  // namespace tessel::nn
