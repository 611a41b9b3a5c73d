"""Shared inputs and the PyTorch reference for tessel's Python tests."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]


def built_program(relative):
    """A program of the C++ build at `relative` (e.g. "bin/gpt_check") under $TESSEL_BUILD_DIR,
    else build/default or build/host; None when it is not built (the tests then skip, saying how
    to build it)."""
    dirs = ([Path(os.environ["TESSEL_BUILD_DIR"])] if os.environ.get("TESSEL_BUILD_DIR")
            else [ROOT / "build/default", ROOT / "build/host"])
    for d in dirs:
        if (d / relative).is_file():
            return d / relative
    return None


ROWS, HIDDEN, VOCAB = 13, 8, 11
TOLERANCE = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-11, atol=1e-12)}


def make_problem(dtype, *, rows=ROWS, hidden=HIDDEN, vocab=VOCAB, seed=0, ignored=(3, 7),
                 ignore_index=-100):
    """x (rows, hidden), weight (vocab, hidden), target (rows,) int64 with ignore_index at `ignored`,
    bias and class weights (vocab,), all NumPy."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, hidden)).astype(dtype)
    weight = (0.5 * rng.standard_normal((vocab, hidden))).astype(dtype)
    target = rng.integers(0, vocab, rows).astype(np.int64)
    target[list(ignored)] = ignore_index
    bias = (0.1 * rng.standard_normal(vocab)).astype(dtype)
    class_weights = rng.uniform(0.5, 2.0, vocab).astype(dtype)
    return x, weight, target, bias, class_weights


def reference_loss(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
                   label_smoothing=0.0, lse_square_scale=0.0, softcap=None, class_weights=None):
    """PyTorch's F.cross_entropy on materialized logits, plus Liger-Kernel's softcap and z-loss
    (divided by the non-ignored rows for mean, as tessel and Liger do). Torch tensors in and out."""
    logits = x @ weight.T
    if bias is not None:
        logits = logits + bias
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    loss = F.cross_entropy(logits, target, weight=class_weights, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    if lse_square_scale:
        kept = (target != ignore_index).to(logits.dtype)
        z_loss = lse_square_scale * torch.logsumexp(logits, dim=-1) ** 2 * kept
        loss = loss + {"none": z_loss, "sum": z_loss.sum(),
                       "mean": z_loss.sum() / kept.sum()}[reduction]
    return loss


# Each case names a set of options; "bias" and "class_weights" take the problem's arrays.
OPTION_CASES = {
    "plain": {},
    "ignore_index_minus_one": dict(ignore_index=-1),
    "ignore_index_inside_vocab": dict(ignore_index=2),  # also ignores every target 2
    "label_smoothing": dict(label_smoothing=0.1),
    "bias": dict(bias=True),
    "class_weights": dict(class_weights=True),
    "weights_smoothing_bias": dict(class_weights=True, label_smoothing=0.2, bias=True),
    "z_loss_softcap": dict(lse_square_scale=1e-2, softcap=3.0),
}


def resolve(case, bias, class_weights):
    """The keyword arguments of a case, with its arrays filled in."""
    options = dict(OPTION_CASES[case])
    options["bias"] = bias if options.pop("bias", False) else None
    options["class_weights"] = class_weights if options.pop("class_weights", False) else None
    return options


@pytest.fixture(autouse=True)
def _torch_threads():
    # Reference results do not depend on it; keeps the suite quiet on a shared machine.
    torch.set_num_threads(1)
