"""tessel.linear_cross_entropy on float16 and bfloat16 storage, and int32 targets.

tessel computes in float32 on 16-bit inputs (widened exactly) and rounds the results to the
inputs' dtype, the dtype PyTorch returns. The reference is therefore PyTorch's autograd in float32
on the same 16-bit values, and the tolerance is the storage's rounding on top of float32's: with
unit roundoff u (2^-8 for bfloat16, 2^-11 for float16), a result rounded once is within u of
tessel's float32 value, and a gradient rounded in the forward and then multiplied by a 16-bit
upstream gradient in the backward (mean and sum) is rounded twice, hence rtol 2u. float16's
subnormals (below 2^-14) round to a multiple of 2^-24, far inside float32's atol.
"""

import numpy as np
import pytest
import torch

import tessel
from conftest import OPTION_CASES, TOLERANCE, make_problem, reference_loss, resolve

UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}


def tolerance(dtype):
    f32 = TOLERANCE[np.float32]
    return dict(rtol=2 * UNIT_ROUNDOFF[dtype] + f32["rtol"], atol=f32["atol"])


def run(loss_function, x, weight, target, bias, class_weights, reduction, options, storage):
    """The loss and the gradients of x, weight and bias (fresh leaves) for a non-trivial upstream
    gradient with values of the `storage` dtype."""
    xt, wt, bt = (None if t is None else t.detach().clone().requires_grad_()
                  for t in (x, weight, bias))
    loss = loss_function(xt, wt, target, bt, reduction=reduction, class_weights=class_weights,
                         **options)
    if reduction == "none":
        upstream = torch.linspace(-1.5, 2.0, len(target)).to(storage).to(loss.dtype)
        (loss * upstream).sum().backward()
    else:
        (3.0 * loss).backward()
    return [loss.detach()] + [None if t is None else t.grad for t in (xt, wt, bt)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_autograd_matches_pytorch_in_float32_on_the_same_values(dtype, reduction, case):
    ignore_index = OPTION_CASES[case].get("ignore_index", -100)
    x, weight, target, bias, class_weights = make_problem(np.float32, ignore_index=ignore_index)
    options = resolve(case, bias, class_weights)
    bias, class_weights = options.pop("bias"), options.pop("class_weights")
    x, weight = torch.tensor(x).to(dtype), torch.tensor(weight).to(dtype)
    bias = None if bias is None else torch.tensor(bias).to(dtype)
    class_weights = None if class_weights is None else torch.tensor(class_weights).to(dtype)
    target = torch.tensor(target)

    got = run(tessel.linear_cross_entropy, x, weight, target, bias, class_weights, reduction,
              options, dtype)
    # PyTorch in float32 on the 16-bit values, and in the 16-bit dtype for the result dtypes.
    widen = [None if t is None else t.float() for t in (x, weight, bias, class_weights)]
    want = run(reference_loss, *widen[:2], target, widen[2], widen[3], reduction, options, dtype)
    dtypes = run(reference_loss, x, weight, target, bias, class_weights, reduction, options,
                 dtype)
    for g, w, d in zip(got, want, dtypes):
        if w is None:
            assert g is None
        else:
            assert g.dtype == d.dtype == dtype
            torch.testing.assert_close(g.float(), w, **tolerance(dtype))


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_numpy_float16_matches_pytorch_in_float32(reduction):
    x, weight, target, bias, class_weights = make_problem(np.float16)
    result = tessel.linear_cross_entropy(x, weight, target, bias, reduction=reduction,
                                         class_weights=class_weights, label_smoothing=0.1)
    assert all(a.dtype == np.float16 for a in result)
    tensors = [torch.tensor(a.astype(np.float32), requires_grad=True) for a in (x, weight, bias)]
    loss = reference_loss(*tensors[:2], torch.tensor(target), tensors[2], reduction=reduction,
                          class_weights=torch.tensor(class_weights.astype(np.float32)),
                          label_smoothing=0.1)
    loss.sum().backward()
    # Rounded once each (no upstream multiplication): u.
    u = UNIT_ROUNDOFF[torch.float16]
    for got, want in zip(result, [loss.detach()] + [t.grad for t in tensors]):
        np.testing.assert_allclose(got.astype(np.float32), want.numpy(), rtol=u + 2e-5, atol=2e-6)


class DLPackOnly:
    """A bfloat16 array that is not a torch tensor (as JAX's): only the DLPack protocol."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_bfloat16_through_the_numpy_function_gives_float32():
    # NumPy has no bfloat16: the results are what tessel computes (float32), grad_input widened
    # exactly from its bfloat16 values, which are torch's.
    x, weight, target, bias, _ = make_problem(np.float32)
    x, weight, bias = (torch.tensor(a).bfloat16() for a in (x, weight, bias))
    result = tessel.linear_cross_entropy(DLPackOnly(x), DLPackOnly(weight), target,
                                         DLPackOnly(bias))
    assert all(a.dtype == np.float32 for a in result)
    xt, wt, bt = (t.clone().requires_grad_() for t in (x, weight, bias))
    loss = tessel.linear_cross_entropy(xt, wt, torch.tensor(target), bt)
    loss.backward()
    assert torch.tensor(result.loss).bfloat16() == loss.detach()
    torch.testing.assert_close(torch.tensor(result.grad_input), xt.grad.float(), rtol=0, atol=0)
    for got, want in ((result.grad_weight, wt.grad), (result.grad_bias, bt.grad)):
        torch.testing.assert_close(torch.tensor(got).bfloat16(), want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_int32_targets_give_the_int64_results(dtype):
    x, weight, target, bias, _ = make_problem(dtype)
    wide = tessel.linear_cross_entropy(x, weight, target, bias)
    narrow = tessel.linear_cross_entropy(x, weight, target.astype(np.int32), bias)
    for a, b in zip(wide, narrow):
        np.testing.assert_array_equal(a, b)


def test_int32_targets_through_torch_in_bfloat16():
    x, weight, target, _, _ = make_problem(np.float32)
    x, weight = torch.tensor(x).bfloat16(), torch.tensor(weight).bfloat16()
    results = []
    for t in (torch.tensor(target), torch.tensor(target).int()):
        xt, wt = x.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = tessel.linear_cross_entropy(xt, wt, t, reduction="none")
        loss.sum().backward()
        results.append((loss.detach(), xt.grad, wt.grad))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_no_grad_gives_a_bfloat16_loss():
    x, weight, target, _, _ = make_problem(np.float32)
    x, weight = torch.tensor(x).bfloat16(), torch.tensor(weight).bfloat16()
    with torch.no_grad():
        loss = tessel.linear_cross_entropy(x, weight, torch.tensor(target))
    assert loss.dtype == torch.bfloat16 and loss.grad_fn is None
