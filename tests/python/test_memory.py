"""What tessel promises about memory: inputs are read in place (never copied or converted),
outputs are fresh arrays the caller owns."""

import tracemalloc

import numpy as np
import pytest
import torch

import tessel
from conftest import make_problem


def test_inputs_are_not_copied():
    # NumPy reports its allocations to tracemalloc; the extension's own outputs (C++ new) and
    # tessel's scratch are not NumPy's. A copy of x (2 MiB) would show.
    x, weight, target, _, _ = make_problem(np.float64, rows=1024, hidden=256, ignored=())
    tessel.linear_cross_entropy(x, weight, target)  # warm up (imports, caches)
    tracemalloc.start()
    tessel.linear_cross_entropy(x, weight, target)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < x.nbytes // 8


def test_a_view_with_padded_rows_is_read_in_place():
    x, weight, target, _, _ = make_problem(np.float32)
    padded = np.zeros((x.shape[0], x.shape[1] + 5), np.float32)
    padded[:, : x.shape[1]] = x
    view = padded[:, : x.shape[1]]  # row stride 13, not contiguous as a whole
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(tessel.linear_cross_entropy(view, weight, target).grad_input,
                                  tessel.linear_cross_entropy(x, weight, target).grad_input)


def test_strided_columns_are_refused_not_copied():
    x, weight, target, _, _ = make_problem(np.float32)
    with pytest.raises(ValueError, match=r"input must be contiguous along its last mode \(stride "
                                         r"1\), got stride 2\."):
        tessel.linear_cross_entropy(np.repeat(x, 2, axis=1)[:, ::2], weight, target)
    with pytest.raises(ValueError, match=r"weight must be contiguous along its last mode"):
        tessel.linear_cross_entropy(torch.tensor(x), torch.tensor(weight.T.copy()).T,
                                    torch.tensor(target))


def test_read_only_inputs_are_accepted_and_left_unchanged():
    x, weight, target, bias, class_weights = make_problem(np.float64)
    copies = [a.copy() for a in (x, weight, target, bias, class_weights)]
    for a in (x, weight, target, bias, class_weights):
        a.setflags(write=False)
    tessel.linear_cross_entropy(x, weight, target, bias, class_weights=class_weights)
    for a, before in zip((x, weight, target, bias, class_weights), copies):
        np.testing.assert_array_equal(a, before)


def test_outputs_are_fresh_writable_contiguous_arrays():
    x, weight, target, bias, _ = make_problem(np.float32)
    result = tessel.linear_cross_entropy(x, weight, target, bias)
    for output in result:
        assert output.flags.c_contiguous and output.flags.writeable
        for given in (x, weight, target, bias):
            assert not np.shares_memory(output, given)
    again = tessel.linear_cross_entropy(x, weight, target, bias)
    assert not np.shares_memory(result.grad_weight, again.grad_weight)


def test_torch_gradients_view_the_binding_arrays_without_a_copy():
    # The loss and gradients are torch.from_numpy views: a CPU tensor of the input's dtype.
    x, weight, target, _, _ = make_problem(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    loss = tessel.linear_cross_entropy(xt, torch.tensor(weight), torch.tensor(target))
    loss.backward()
    assert loss.dtype == torch.float32 and xt.grad.dtype == torch.float32
    assert xt.grad.is_contiguous() and xt.grad.data_ptr() != xt.data_ptr()


def test_a_strided_target_is_read_in_place():
    x, weight, target, _, _ = make_problem(np.float64)
    every_other = np.repeat(target, 2)[::2]  # stride 2
    assert not every_other.flags.c_contiguous
    np.testing.assert_array_equal(tessel.linear_cross_entropy(x, weight, every_other).loss,
                                  tessel.linear_cross_entropy(x, weight, target).loss)
