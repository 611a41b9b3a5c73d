"""tessel.linear_cross_entropy over NumPy arrays against PyTorch's autograd."""

import numpy as np
import pytest
import torch

import tessel
from conftest import OPTION_CASES, TOLERANCE, make_problem, reference_loss, resolve


def reference(x, weight, target, options):
    """Loss and gradients (upstream gradient 1 per loss element) from PyTorch's autograd."""
    tensors = {k: (None if v is None else torch.tensor(v)) for k, v in
               dict(bias=options.pop("bias"), class_weights=options.pop("class_weights")).items()}
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(weight, requires_grad=True)
    bt = None if tensors["bias"] is None else tensors["bias"].requires_grad_()
    loss = reference_loss(xt, wt, torch.tensor(target), bt,
                          class_weights=tensors["class_weights"], **options)
    loss.sum().backward()
    return (loss.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(),
            None if bt is None else bt.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_loss_and_gradients_match_pytorch(dtype, reduction, case):
    ignore_index = OPTION_CASES[case].get("ignore_index", -100)
    x, weight, target, bias, class_weights = make_problem(dtype, ignore_index=ignore_index)
    options = resolve(case, bias, class_weights)
    result = tessel.linear_cross_entropy(x, weight, target, reduction=reduction, **options)
    expected = reference(x, weight, target, dict(options, reduction=reduction))
    assert result.loss.dtype == dtype and result.grad_input.dtype == dtype
    assert result.loss.shape == (() if reduction != "none" else (len(target),))
    for got, want in zip(result, expected):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, **TOLERANCE[dtype])


def test_result_is_a_tuple_of_loss_and_three_gradients():
    x, weight, target, bias, _ = make_problem(np.float64)
    loss, grad_input, grad_weight, grad_bias = tessel.linear_cross_entropy(x, weight, target, bias)
    assert grad_input.shape == x.shape and grad_weight.shape == weight.shape
    assert grad_bias.shape == bias.shape
    assert tessel.linear_cross_entropy(x, weight, target).grad_bias is None


def test_every_row_ignored_gives_zero_loss_and_gradients_not_nan():
    # tessel's documented difference: PyTorch's mean over no rows is NaN.
    x, weight, target, _, _ = make_problem(np.float64)
    target[:] = -100
    result = tessel.linear_cross_entropy(x, weight, target)
    assert result.loss == 0.0
    assert not result.grad_input.any() and not result.grad_weight.any()


def test_temperature_divides_the_logits():
    x, weight, target, _, _ = make_problem(np.float64)
    hot = tessel.linear_cross_entropy(x, weight, target, temperature=2.0)
    scaled = tessel.linear_cross_entropy(x, weight / 2.0, target)
    np.testing.assert_allclose(hot.loss, scaled.loss, rtol=1e-12)
    np.testing.assert_allclose(hot.grad_input, scaled.grad_input, rtol=1e-10, atol=1e-14)
