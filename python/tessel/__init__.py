"""tessel from Python: fused linear cross-entropy over NumPy arrays and PyTorch CPU tensors.

The loss and its gradients come from tessel's C++ ``flce::forward`` (one pass over row chunks,
never the ``(rows, vocab)`` logits). Arrays are read in place through DLPack / the buffer
protocol; tessel's error sentences arrive as ``ValueError``. See docs/python.md.
"""

import sys
from typing import NamedTuple, Optional

import numpy as np

from . import _tessel, plan

__all__ = ["Block", "LinearCrossEntropyResult", "linear_cross_entropy", "merge_small_dims",
           "multi_dim_split", "plan"]


class LinearCrossEntropyResult(NamedTuple):
    """What linear_cross_entropy returns over NumPy arrays.

    ``loss`` is a 0-d array for mean and sum, ``(rows,)`` for none; the gradients are fresh arrays
    (``grad_input`` like ``x``, ``grad_weight`` like ``weight``, ``grad_bias`` ``(vocab,)`` or None
    without a bias), for an upstream gradient of 1, all in the input's dtype (float32 for
    bfloat16 inputs, which NumPy cannot hold).
    """

    loss: np.ndarray
    grad_input: np.ndarray
    grad_weight: np.ndarray
    grad_bias: Optional[np.ndarray]


def linear_cross_entropy(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
                         label_smoothing=0.0, lse_square_scale=0.0, softcap=None,
                         class_weights=None, temperature=1.0):
    """``cross_entropy(x @ weight.T + bias, target)`` without the logits, with its gradients.

    Names and defaults are PyTorch's ``F.cross_entropy`` (``class_weights`` is its ``weight``)
    plus Liger-Kernel's ``lse_square_scale`` (z-loss) and ``softcap``, and a sampling
    ``temperature`` the logits are divided by. ``x`` is ``(rows, hidden)``, ``weight``
    ``(vocab, hidden)``, ``target`` ``(rows,)`` int64 or int32; float32, float64, float16 or
    bfloat16 (PyTorch tensors or DLPack objects), on the host.

    PyTorch tensors give a loss tensor with autograd (tessel.torch.linear_cross_entropy); anything
    else (NumPy arrays, DLPack objects) gives a LinearCrossEntropyResult.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        from . import torch as tessel_torch

        return tessel_torch.linear_cross_entropy(
            x, weight, target, bias, reduction=reduction, ignore_index=ignore_index,
            label_smoothing=label_smoothing, lse_square_scale=lse_square_scale, softcap=softcap,
            class_weights=class_weights, temperature=temperature)
    loss, grad_input, grad_weight, grad_bias = _tessel.linear_cross_entropy(
        x, weight, target, bias, class_weights=class_weights, grad_output_rows=None,
        grad_input=True, grad_weight=True, grad_bias=True,
        **_options(reduction, ignore_index, label_smoothing, lse_square_scale, softcap,
                   temperature))
    # 16-bit storage: tessel computes the loss, grad_weight and grad_bias in float32 and writes
    # grad_input in the storage type.
    if grad_input.dtype == np.float16:
        # float16, as PyTorch returns them for float16 inputs: rounded once.
        loss, grad_weight, grad_bias = (None if a is None else a.astype(np.float16)
                                        for a in (loss, grad_weight, grad_bias))
    elif grad_input.dtype == np.uint16:
        # bfloat16 (its bits: NumPy has no bfloat16): every result float32, grad_input widened
        # exactly.
        grad_input = (grad_input.astype(np.uint32) << 16).view(np.float32)
    return LinearCrossEntropyResult(loss, grad_input, grad_weight, grad_bias)


def merge_small_dims(shape, threshold, target_dims=1):
    """Distributed Shampoo's ``merge_small_dims``: drop extents of 1 and, from the last extent
    back, multiply neighbours while the product stays ``<= threshold`` and the result still has
    more than ``target_dims`` extents; ``(0,)`` for an empty shape, ``shape`` itself for
    ``target_dims=math.inf``. ``merge_small_dims((32, 3, 64, 64), 8192) == (96, 4096)``."""
    return tuple(_tessel.merge_small_dims(tuple(shape), threshold, plan._dim(target_dims)))


class Block(NamedTuple):
    """One block of multi_dim_split: where it starts and its extents."""

    offset: tuple
    shape: tuple


def multi_dim_split(shape, split_size):
    """Distributed Shampoo's ``multi_dim_split`` on a shape: blocks of at most ``split_size`` per
    mode (math.inf: one block), in row-major block order."""
    return [Block(tuple(o), tuple(s))
            for o, s in _tessel.multi_dim_split(tuple(shape), plan._dim(split_size))]


def _options(reduction, ignore_index, label_smoothing, lse_square_scale, softcap, temperature):
    # softcap=None is Liger-Kernel's "off", tessel's 0.
    return dict(reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing,
                lse_square_scale=lse_square_scale, softcap=0.0 if softcap is None else softcap,
                temperature=temperature)
