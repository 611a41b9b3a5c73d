"""tessel from Python: fused linear cross-entropy over NumPy arrays and PyTorch CPU tensors.

The loss and its gradients come from tessel's C++ ``flce::forward`` (one pass over row chunks,
never the ``(rows, vocab)`` logits). Arrays are read in place through DLPack / the buffer
protocol; tessel's error sentences arrive as ``ValueError``. See docs/python.md.
"""

import sys
from typing import Any, NamedTuple, Optional

import numpy as np

from . import _tessel, plan

__all__ = ["Block", "EXTRAS", "LinearCrossEntropyOutput", "LinearCrossEntropyResult",
           "linear_cross_entropy", "merge_small_dims", "multi_dim_split", "plan"]

# The outputs linear_cross_entropy computes besides the loss when return_extras names them
# (flce::Outputs' fields of the same names), in LinearCrossEntropyOutput's order.
EXTRAS = ("z_loss", "lse", "target_logprob", "entropy", "argmax", "accuracy")


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


class LinearCrossEntropyOutput(NamedTuple):
    """What linear_cross_entropy returns when ``return_extras`` is given: the loss, each extra
    output named in ``return_extras`` (None for those not asked for: they are not computed) and,
    over NumPy arrays, the gradients (None for PyTorch tensors, whose gradients go through
    autograd).

    ``z_loss`` (the z-loss part of the loss, ``lse_square_scale * lse**2`` over the non-ignored
    rows) and ``accuracy`` (``argmax == target`` over the non-ignored rows, unweighted) are reduced
    like the loss: 0-d for mean (accuracy: the fraction right, 0 when every row is ignored) and sum
    (accuracy: the count right), ``(rows,)`` for none. ``lse`` (the log-sum-exp of the row's
    logits), ``target_logprob`` (the target's log-probability), ``entropy`` (the softmax's) and
    ``argmax`` (the predicted class, ties to the lowest) are ``(rows,)`` whatever the reduction,
    over the logits after temperature and softcap; ignored rows hold 0, and -1 in ``argmax``.
    ``argmax`` is int64; the others are in the type tessel computes in: float64 for float64
    inputs, float32 for float32, float16 and bfloat16 (not rounded to 16 bits). They carry no
    gradient (PyTorch: detached tensors).
    """

    loss: Any
    z_loss: Any = None
    lse: Any = None
    target_logprob: Any = None
    entropy: Any = None
    argmax: Any = None
    accuracy: Any = None
    grad_input: Any = None
    grad_weight: Any = None
    grad_bias: Any = None


def linear_cross_entropy(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
                         label_smoothing=0.0, lse_square_scale=0.0, softcap=None,
                         class_weights=None, temperature=1.0, entropy_bonus=0.0,
                         shift_sequence_length=0, soft_target_indices=None,
                         soft_target_probs=None, soft_target_weight=1.0, return_extras=None,
                         chunk_size=None):
    """``cross_entropy(x @ weight.T + bias, target)`` without the logits, with its gradients.

    Names and defaults are PyTorch's ``F.cross_entropy`` (``class_weights`` is its ``weight``)
    plus Liger-Kernel's ``lse_square_scale`` (z-loss) and ``softcap``, and a sampling
    ``temperature`` the logits are divided by. ``x`` is ``(rows, hidden)``, ``weight``
    ``(vocab, hidden)``, ``target`` ``(rows,)`` int64 or int32; float32, float64, float16 or
    bfloat16 (PyTorch tensors or DLPack objects), on the host.

    PyTorch tensors give a loss tensor with autograd (tessel.torch.linear_cross_entropy); anything
    else (NumPy arrays, DLPack objects) gives a LinearCrossEntropyResult.

    ``entropy_bonus`` (PPO's entropy coefficient beta): each non-ignored row's loss gets
    ``-beta * H``, H its softmax's entropy (after temperature and softcap), reduced like the
    cross-entropy (mean: over the sum of the non-ignored targets' class weights).
    ``shift_sequence_length`` S > 0: the causal-LM label shift within sequences of S rows (rows
    divisible by S): row ``i`` is scored against ``target[i + 1]`` and each sequence's last row is
    ignored (``labels[..., 1:]`` without the copy); 0: none.
    ``soft_target_indices`` ``(rows, K)`` int64 classes and ``soft_target_probs`` ``(rows, K)``
    probabilities (float64 for float64 inputs, float32 for the others), given together: a
    teacher's top-k. Each non-ignored row's loss is ``(1 - soft_target_weight)`` times its
    cross-entropy with ``target`` plus ``soft_target_weight`` times PyTorch's cross-entropy with
    the probability target they describe (label smoothing and class weights included); mean
    divides the soft part by the non-ignored rows. Rows ignored by ``target`` stay ignored, and
    the shift moves ``target`` only. ``soft_target_weight`` lies in [0, 1]; setting it without
    soft targets is an error. No gradient flows to the soft targets.

    ``chunk_size``: rows of logits per chunk, the memory the call holds (``chunk_size * vocab``
    values, in float32 for 16-bit inputs); None (or 0) takes the plan's heuristic
    (``tessel.plan.flce``). The results agree whatever the chunk, to rounding.

    ``return_extras``: names from ``EXTRAS`` ("z_loss", "lse", "target_logprob", "entropy",
    "argmax", "accuracy"; one name alone may be a string). When given (even empty), the call
    returns a LinearCrossEntropyOutput with the loss, the extras asked for and, for NumPy, the
    gradients; only those extras are computed (entropy costs a multiply-add per logit, the others
    nothing). An unknown name is a ValueError.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        from . import torch as tessel_torch

        return tessel_torch.linear_cross_entropy(
            x, weight, target, bias, reduction=reduction, ignore_index=ignore_index,
            label_smoothing=label_smoothing, lse_square_scale=lse_square_scale, softcap=softcap,
            class_weights=class_weights, temperature=temperature, entropy_bonus=entropy_bonus,
            shift_sequence_length=shift_sequence_length, soft_target_indices=soft_target_indices,
            soft_target_probs=soft_target_probs, soft_target_weight=soft_target_weight,
            return_extras=return_extras, chunk_size=chunk_size)
    names = _extra_names(return_extras)
    loss, grad_input, grad_weight, grad_bias, extras = _tessel.linear_cross_entropy(
        x, weight, target, bias, class_weights=class_weights, grad_output_rows=None,
        soft_target_indices=soft_target_indices, soft_target_probs=soft_target_probs,
        grad_input=True, grad_weight=True, grad_bias=True, extras=names or [],
        options=_options(reduction, ignore_index, label_smoothing, lse_square_scale, softcap,
                         temperature, entropy_bonus, shift_sequence_length, soft_target_weight,
                         chunk_size))
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
    if names is None:
        return LinearCrossEntropyResult(loss, grad_input, grad_weight, grad_bias)
    # The extras stay in the computation's type (float32 for 16-bit storage), argmax int64.
    return LinearCrossEntropyOutput(loss, **extras, grad_input=grad_input,
                                    grad_weight=grad_weight, grad_bias=grad_bias)


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


def _options(reduction, ignore_index, label_smoothing, lse_square_scale, softcap, temperature,
             entropy_bonus, shift_sequence_length, soft_target_weight, chunk_size):
    """The bindings' scalar options, one dict with every key (module.cpp's parse_scalars); tessel
    validates their values."""
    # A float length would be a TypeError from the binding; a sentence as for every bad option.
    if isinstance(shift_sequence_length, bool) or not isinstance(shift_sequence_length,
                                                                 (int, np.integer)):
        raise ValueError(f"shift_sequence_length must be an integer (0: no shift), got "
                         f"{shift_sequence_length!r}.")
    # softcap=None is Liger-Kernel's "off", tessel's 0.
    return dict(reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing,
                lse_square_scale=lse_square_scale, softcap=0.0 if softcap is None else softcap,
                temperature=temperature, entropy_bonus=entropy_bonus,
                shift_sequence_length=int(shift_sequence_length),
                soft_target_weight=soft_target_weight,
                # None is the plan's heuristic, tessel's 0.
                chunk_size=0 if chunk_size is None else chunk_size)


def _extra_names(return_extras):
    """return_extras as a list of names (None: not given). The binding refuses unknown names."""
    if return_extras is None:
        return None
    if isinstance(return_extras, str):
        return [return_extras]
    if isinstance(return_extras, bool) or not hasattr(return_extras, "__iter__"):
        raise ValueError(f"return_extras takes names of extra outputs (a string or a sequence of "
                         f"them, from {', '.join(EXTRAS)}), got {return_extras!r}.")
    names = list(return_extras)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"return_extras holds {name!r}, which is not a name; the extras are "
                             f"{', '.join(EXTRAS)}.")
    return names
