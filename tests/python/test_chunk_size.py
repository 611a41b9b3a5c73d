"""tessel.linear_cross_entropy's chunk_size (flce::Options::chunk_size): every chunk of rows gives
the heuristic plan's results to rounding, through both entry points; None and 0 are the
heuristic. Its refusals (negative: tessel's ValueError; not an integer: a TypeError naming the
option) are with the others in test_errors.py."""

import numpy as np
import pytest
import torch

import tessel
from conftest import make_problem

ROWS = 13  # a prime: most chunk sizes leave a short last chunk


def numpy_call(dtype, chunk_size, reduction):
    x, weight, target, bias, class_weights = make_problem(dtype, rows=ROWS)
    return tessel.linear_cross_entropy(x, weight, target, bias, reduction=reduction,
                                       class_weights=class_weights, label_smoothing=0.1,
                                       chunk_size=chunk_size)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk_size", [1, 2, 5, ROWS, ROWS + 7, 0])
def test_numpy_results_agree_with_the_heuristic_plan(chunk_size, reduction):
    heuristic = numpy_call(np.float64, None, reduction)
    chunked = numpy_call(np.float64, chunk_size, reduction)
    for name, want, got in zip(heuristic._fields, heuristic, chunked):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_autograd_results_agree_with_the_heuristic_plan(dtype):
    x, weight, target, bias, _ = make_problem(np.float32, rows=ROWS)

    def run(chunk_size):
        leaves = [torch.tensor(a).to(dtype).requires_grad_() for a in (x, weight, bias)]
        loss = tessel.linear_cross_entropy(*leaves[:2], torch.tensor(target), leaves[2],
                                           reduction="none", chunk_size=chunk_size)
        (loss * torch.linspace(-1.0, 2.0, ROWS, dtype=loss.dtype)).sum().backward()
        return [loss.detach().double()] + [leaf.grad.double() for leaf in leaves]

    tolerance = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-2,
                                                                                 atol=1e-3)
    for want, got in zip(run(None), run(3)):
        torch.testing.assert_close(got, want, **tolerance)
