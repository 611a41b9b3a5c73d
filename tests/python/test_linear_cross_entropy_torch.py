"""tessel.linear_cross_entropy over PyTorch CPU tensors: autograd against F.cross_entropy's."""

import numpy as np
import pytest
import torch

import tessel
import tessel.torch
from conftest import OPTION_CASES, TOLERANCE, make_problem, reference_loss, resolve

DTYPES = {np.float32: torch.float32, np.float64: torch.float64}


def leaves(x, weight, bias):
    """Fresh leaf tensors that require grad (bias may be None)."""
    return [None if a is None else torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_autograd_matches_pytorch(dtype, reduction, case):
    ignore_index = OPTION_CASES[case].get("ignore_index", -100)
    x, weight, target, bias, class_weights = make_problem(dtype, ignore_index=ignore_index)
    options = resolve(case, bias, class_weights)
    bias, class_weights = options.pop("bias"), options.pop("class_weights")
    class_weights = None if class_weights is None else torch.tensor(class_weights)
    target = torch.tensor(target)
    # A non-trivial upstream gradient, so that backward's scaling is tested too.
    upstream = torch.linspace(-1.5, 2.0, len(target), dtype=DTYPES[dtype])
    results = []
    for loss_function in (tessel.linear_cross_entropy, reference_loss):
        xt, wt, bt = leaves(x, weight, bias)
        loss = loss_function(xt, wt, target, bt, reduction=reduction,
                             class_weights=class_weights, **options)
        (loss * upstream).sum().backward() if reduction == "none" else (3.0 * loss).backward()
        results.append([loss.detach()] + [None if t is None else t.grad for t in (xt, wt, bt)])
    for got, want in zip(*results):
        if want is None:
            assert got is None
        else:
            assert got.dtype == want.dtype
            torch.testing.assert_close(got, want, **TOLERANCE[dtype])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gradcheck_in_float64(reduction):
    x, weight, target, bias, class_weights = make_problem(np.float64, rows=4, hidden=3, vocab=5,
                                                          ignored=(1,))
    xt, wt, bt = leaves(x, weight, bias)

    def loss(x, weight, bias):
        return tessel.torch.linear_cross_entropy(
            x, weight, torch.tensor(target), bias, reduction=reduction, label_smoothing=0.1,
            lse_square_scale=1e-2, softcap=4.0, class_weights=torch.tensor(class_weights))

    assert torch.autograd.gradcheck(loss, (xt, wt, bt))


def test_only_what_requires_grad_gets_a_gradient():
    x, weight, target, _, _ = make_problem(np.float32)
    xt = torch.tensor(x)
    wt = torch.tensor(weight, requires_grad=True)
    tessel.linear_cross_entropy(xt, wt, torch.tensor(target)).backward()
    assert xt.grad is None and wt.grad is not None


def test_a_model_trains():
    torch.manual_seed(0)
    x, _, target, _, _ = make_problem(np.float32, rows=64, ignored=())
    x, target = torch.tensor(x), torch.tensor(target)
    head = torch.nn.Linear(x.shape[1], 11)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.5)
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = tessel.linear_cross_entropy(x, head.weight, target, head.bias)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_no_grad_gives_the_same_loss_without_a_graph(reduction):
    x, weight, target, bias, _ = make_problem(np.float64)
    tensors = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    target = torch.tensor(target)
    with torch.no_grad():
        evaluated = tessel.linear_cross_entropy(*tensors[:2], target, tensors[2],
                                                reduction=reduction)
    trained = tessel.linear_cross_entropy(*tensors[:2], target, tensors[2], reduction=reduction)
    assert evaluated.grad_fn is None and trained.grad_fn is not None
    torch.testing.assert_close(evaluated, trained.detach(), rtol=0, atol=0)


def test_per_row_loss_summed_has_the_gradients_of_sum():
    # loss.sum() hands backward a stride-0 (expanded) gradient: read in place as grad_output_rows.
    x, weight, target, bias, _ = make_problem(np.float64)
    target = torch.tensor(target)
    gradients = []
    for reduction in ("none", "sum"):
        xt, wt, bt = leaves(x, weight, bias)
        tessel.linear_cross_entropy(xt, wt, target, bt, reduction=reduction).sum().backward()
        gradients.append([xt.grad, wt.grad, bt.grad])
    for per_row, summed in zip(*gradients):
        torch.testing.assert_close(per_row, summed, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_a_frozen_head_gets_no_weight_gradient_and_the_same_input_gradient(reduction):
    # tessel is asked only for what requires grad: no (vocab, hidden) grad_weight is computed.
    x, weight, target, bias, _ = make_problem(np.float64)
    target = torch.tensor(target)
    results = []
    for frozen in (True, False):
        xt, wt, bt = leaves(x, weight, bias)
        wt.requires_grad_(not frozen)
        bt.requires_grad_(not frozen)
        tessel.linear_cross_entropy(xt, wt, target, bt, reduction=reduction).sum().backward()
        results.append((xt.grad, wt.grad, bt.grad))
    (frozen_x, frozen_w, frozen_b), (full_x, _, _) = results
    assert frozen_w is None and frozen_b is None
    torch.testing.assert_close(frozen_x, full_x, rtol=0, atol=0)
