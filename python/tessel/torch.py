"""tessel's fused linear cross-entropy as a ``torch.autograd.Function`` over CPU tensors.

The forward calls tessel once and gets the loss and the gradients together (no logits are kept);
the backward multiplies the saved gradients by the incoming gradient. For ``reduction="none"``
the incoming gradient differs per row, and rows are already summed into ``grad_weight``, so the
backward calls tessel again with it as ``grad_output_rows`` (a recompute, as Liger-Kernel and Cut
Cross-Entropy do) and the forward computes the loss alone. Tensors cross through DLPack without
copies; the gradients come back as NumPy-owned memory viewed by ``torch.from_numpy``.
"""

import torch

from . import _tessel
from . import _options

__all__ = ["linear_cross_entropy"]


def _array(tensor):
    # DLPack refuses tensors that require grad; detach() shares their storage.
    return None if tensor is None else tensor.detach()


_NO_GRADIENTS = dict(grad_input=False, grad_weight=False, grad_bias=False)


def _wanted(ctx):
    # apply's arguments: x, weight, target, bias, class_weights, options.
    needs = ctx.needs_input_grad
    return dict(grad_input=needs[0], grad_weight=needs[1], grad_bias=needs[3])


class LinearCrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, target, bias, class_weights, options):
        per_row = options["reduction"] == "none"
        # Only what requires grad (a frozen head needs no grad_weight); none yet for reduction
        # none, whose backward computes them.
        wanted = _wanted(ctx) if not per_row else _NO_GRADIENTS
        loss, grad_input, grad_weight, grad_bias = _tessel.linear_cross_entropy(
            _array(x), _array(weight), target, _array(bias), class_weights=_array(class_weights),
            grad_output_rows=None, **wanted, **options)
        ctx.options = options
        if per_row:
            ctx.save_for_backward(x, weight, target, bias, class_weights)
        else:
            ctx.gradients = tuple(None if g is None else torch.from_numpy(g)
                                  for g in (grad_input, grad_weight, grad_bias))
        return torch.from_numpy(loss)

    @staticmethod
    def backward(ctx, grad_loss):
        if ctx.options["reduction"] == "none":
            x, weight, target, bias, class_weights = ctx.saved_tensors
            _, grad_input, grad_weight, grad_bias = _tessel.linear_cross_entropy(
                _array(x), _array(weight), target, _array(bias),
                class_weights=_array(class_weights), grad_output_rows=grad_loss.detach(),
                **_wanted(ctx), **ctx.options)
            gradients = tuple(None if g is None else torch.from_numpy(g)
                              for g in (grad_input, grad_weight, grad_bias))
        else:
            gradients = tuple(None if g is None else g * grad_loss for g in ctx.gradients)
        grad_input, grad_weight, grad_bias = gradients
        return grad_input, grad_weight, None, grad_bias, None, None


def linear_cross_entropy(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
                         label_smoothing=0.0, lse_square_scale=0.0, softcap=None,
                         class_weights=None, temperature=1.0):
    """``F.cross_entropy(x @ weight.T + bias, target, ...)`` computed by tessel, differentiable in
    ``x``, ``weight`` and ``bias``; see tessel.linear_cross_entropy for the arguments."""
    options = _options(reduction, ignore_index, label_smoothing, lse_square_scale, softcap,
                       temperature)
    if not torch.is_grad_enabled():
        # An evaluation pass (torch.no_grad()): the loss alone, no gradient work.
        loss, *_ = _tessel.linear_cross_entropy(
            _array(x), _array(weight), target, _array(bias), class_weights=_array(class_weights),
            grad_output_rows=None, **_NO_GRADIENTS, **options)
        return torch.from_numpy(loss)
    return LinearCrossEntropyFunction.apply(x, weight, target, bias, class_weights, options)
