"""Every bad input is a ValueError with tessel's sentence, never a crash."""

import numpy as np
import pytest
import torch

import tessel
from conftest import make_problem


@pytest.fixture
def problem():
    return make_problem(np.float32)


def with_target(target, row, value):
    changed = target.copy()
    changed[row] = value
    return changed


def call(x, weight, target, **options):
    return tessel.linear_cross_entropy(x, weight, target, **options)


@pytest.mark.parametrize("make_call, message", [
    # shapes that disagree (tessel's validation)
    (lambda x, w, y, b, c: call(x, w[:, :5], y),
     r"weight has shape \(11,5\) but input has hidden size 8\."),
    (lambda x, w, y, b, c: call(x, w, y[:4]), r"target has 4 elements but input has 13 rows\."),
    (lambda x, w, y, b, c: call(x, w, y, bias=b[:3]),
     r"bias has 3 elements but the vocabulary size \(weight's rows\) is 11\."),
    (lambda x, w, y, b, c: call(x, w, y, class_weights=c[:3]),
     r"class_weights has 3 elements but the vocabulary size"),
    # targets out of range
    (lambda x, w, y, b, c: call(x, w, with_target(y, 0, 11)),
     r"target 11 at row 0 is outside \[0, 11\) and is not ignore_index \(-100\)\."),
    (lambda x, w, y, b, c: call(x, w, with_target(y, 5, -1)),
     r"target -1 at row 5 is outside \[0, 11\)"),
    # options
    (lambda x, w, y, b, c: call(x, w, y, reduction="avg"),
     r'unknown reduction "avg"; valid reductions are mean, sum and none\.'),
    (lambda x, w, y, b, c: call(x, w, y, label_smoothing=1.5),
     r"label_smoothing must lie in \[0, 1\], got 1\.5\."),
    (lambda x, w, y, b, c: call(x, w, y, lse_square_scale=-1.0),
     r"lse_square_scale must be finite and >= 0, got -1\."),
    (lambda x, w, y, b, c: call(x, w, y, softcap=-2.0), r"softcap must be finite and >= 0"),
    (lambda x, w, y, b, c: call(x, w, y, temperature=0.0),
     r"temperature must be finite and > 0, got 0\."),
    (lambda x, w, y, b, c: call(x, w, y, chunk_size=-4),
     r"chunk_size must be >= 0 \(0 takes the plan's heuristic\), got -4\."),
    # dtypes and ranks (checked by the binding on the Python objects)
    (lambda x, w, y, b, c: call(x, w.astype(np.float64), y),
     r"weight has dtype f64 but must have input's dtype f32\."),
    (lambda x, w, y, b, c: call(x, w, y, bias=b.astype(np.float64)),
     r"bias has dtype f64 but must have input's dtype f32\."),
    (lambda x, w, y, b, c: call(x.astype(np.float16), w, y),
     r"weight has dtype f32 but must have input's dtype f16\."),
    (lambda x, w, y, b, c: call(x.astype(np.float16), w.astype(np.float16), y, bias=b),
     r"bias has dtype f32 but must have input's dtype f16\."),
    (lambda x, w, y, b, c: call(x.astype(np.float16), w.astype(np.float16), y, class_weights=c),
     r"class_weights has dtype f32 but must have input's dtype f16\."),
    (lambda x, w, y, b, c: call(x, w, y.astype(np.int16)),
     r"target has dtype i16 but class indices must be i64 \(int64\) or i32 \(int32\)\."),
    (lambda x, w, y, b, c: call(x, w, y.astype(np.float32)), r"target has dtype f32 but"),
    (lambda x, w, y, b, c: call(x.astype(np.int64), w, y),
     r"input has dtype i64; tessel's FLCE computes on f32 \(float32\), f64 \(float64\), f16 "
     r"\(float16\) and bf16 \(bfloat16\)\."),
    (lambda x, w, y, b, c: call(x.astype(np.complex64), w, y),
     r"input has dtype DLPack type code 5 of 64 bits; tessel's FLCE computes on f32"),
    (lambda x, w, y, b, c: call(x[None], w, y),
     r"input must have 2 dimensions \(rows, hidden\), got 3\."),
    (lambda x, w, y, b, c: call(x, w, y[:, None]),
     r"target must have 1 dimension \(rows\), got 2\."),
    (lambda x, w, y, b, c: call(x, w[0], y),
     r"weight must have 2 dimensions \(vocab, hidden\), got 1\."),
    # layouts
    (lambda x, w, y, b, c: call(np.asfortranarray(x), w, y),
     r"input must be contiguous along its last mode \(stride 1\), got stride 13\."),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_input_raises_value_error_with_tessel_sentence(problem, make_call, message):
    with pytest.raises(ValueError, match=message):
        make_call(*problem)


def test_same_errors_through_torch(problem):
    x, weight, target, _, _ = problem
    xt = torch.tensor(x, requires_grad=True)
    with pytest.raises(ValueError, match=r"target has 4 elements but input has 13 rows\."):
        tessel.linear_cross_entropy(xt, torch.tensor(weight), torch.tensor(target[:4]))
    with pytest.raises(ValueError, match=r"weight has dtype bf16 but must have input's dtype f32"):
        tessel.linear_cross_entropy(xt, torch.tensor(weight).bfloat16(), torch.tensor(target))
    # Mixed 16-bit dtypes name both.
    bf16 = xt.detach().bfloat16().requires_grad_()
    with pytest.raises(ValueError, match=r"weight has dtype f16 but must have input's dtype bf16"):
        tessel.linear_cross_entropy(bf16, torch.tensor(weight).half(), torch.tensor(target))
    with pytest.raises(ValueError, match=r"bias has dtype f32 but must have input's dtype bf16"):
        tessel.linear_cross_entropy(bf16, torch.tensor(weight).bfloat16(), torch.tensor(target),
                                    torch.zeros(weight.shape[0]))
    with pytest.raises(ValueError,
                       match=r"class_weights has dtype f32 but must have input's dtype bf16"):
        tessel.linear_cross_entropy(bf16, torch.tensor(weight).bfloat16(), torch.tensor(target),
                                    class_weights=torch.ones(weight.shape[0]))
    with pytest.raises(ValueError, match=r"chunk_size must be >= 0 .*got -1\."):
        tessel.linear_cross_entropy(xt, torch.tensor(weight), torch.tensor(target), chunk_size=-1)


def test_objects_that_are_not_arrays_are_a_type_error(problem):
    x, weight, target, _, _ = problem
    with pytest.raises(TypeError):
        tessel.linear_cross_entropy(x.tolist(), weight, target)


@pytest.mark.parametrize("as_torch", [False, True])
@pytest.mark.parametrize("options, message", [
    (dict(label_smoothing="0.1"), r"the option label_smoothing cannot be '0\.1'\."),
    (dict(ignore_index=1.5), r"the option ignore_index cannot be 1\.5\."),
    (dict(reduction=None), r"the option reduction cannot be None\."),
    (dict(temperature=[1.0]), r"the option temperature cannot be \[1\.0\]\."),
    (dict(chunk_size=2.5), r"the option chunk_size cannot be 2\.5\."),
    (dict(chunk_size="8"), r"the option chunk_size cannot be '8'\."),
])
def test_options_of_the_wrong_type_are_a_type_error_naming_them(problem, as_torch, options,
                                                                   message):
    x, weight, target, _, _ = problem
    if as_torch:
        x, weight, target = (torch.from_numpy(a) for a in (x, weight, target))
    with pytest.raises(TypeError, match=message):
        tessel.linear_cross_entropy(x, weight, target, **options)


@pytest.mark.parametrize("arguments, message", [
    ((-1, 4, 8), r"an FLCE plan needs a row count \(bt\) >= 0, got -1\."),
    ((16, 0, 8), r"hidden"),
    ((16, 4, 0), r"vocab"),
    ((16, 4, 8, "complex"), r'unknown dtype "complex"'),
    ((16, 4, 8, "int32"), r"FLCE computes on f32, f64, f16 or bf16 storage, not i32\."),
])
def test_bad_plan_arguments_raise_value_error(arguments, message):
    with pytest.raises(ValueError, match=message):
        tessel.plan.flce(*arguments)
