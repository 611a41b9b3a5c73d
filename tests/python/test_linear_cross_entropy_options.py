"""tessel.linear_cross_entropy's soft targets, entropy bonus and causal shift
(soft_target_indices, soft_target_probs, soft_target_weight, entropy_bonus,
shift_sequence_length) against PyTorch on the explicit float64 logits: loss and gradients, both
entry points (PyTorch tensors through autograd, NumPy arrays), every reduction and storage dtype,
gradcheck, and every refusal as a ValueError with tessel's sentence.

The reference follows flce::Options (include/tessel/flce/options.hpp): the shift is
``labels[..., 1:]`` within sequences of S rows (each sequence's last row ignored); the soft
targets are a dense probability target for F.cross_entropy (repeated classes added, smoothing and
class weights included), weighted alpha against the hard cross-entropy's 1 - alpha, belong to the
rows as given (not shifted), are dropped on ignored rows, and their mean divides by the
non-ignored rows; the entropy bonus subtracts beta * H per non-ignored row, reduced like the
cross-entropy (mean: over the non-ignored targets' class-weight sum).
"""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tessel
from conftest import TOLERANCE, make_problem

ROWS, VOCAB, K = 12, 11, 4
STORAGE = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

CASES = {
    "soft": dict(soft=True),
    "soft_mixed_smoothing_weights_bias": dict(soft=True, soft_target_weight=0.6,
                                              label_smoothing=0.1, class_weights=True, bias=True),
    "entropy_bonus": dict(entropy_bonus=0.3),
    "entropy_bonus_weights_temperature_softcap": dict(entropy_bonus=0.25, class_weights=True,
                                                      temperature=0.7, softcap=2.5),
    "shift": dict(shift_sequence_length=4),
    "shift_one_sequence_weights": dict(shift_sequence_length=ROWS, class_weights=True),
    "everything": dict(soft=True, soft_target_weight=0.3, entropy_bonus=0.2,
                       shift_sequence_length=3, label_smoothing=0.05, class_weights=True,
                       bias=True, lse_square_scale=1e-2, softcap=3.0, temperature=0.8),
}


def soft_targets(rows=ROWS, seed=1):
    """(rows, K) int64 classes (row 0 names one class twice) and float64 probabilities that do not
    sum to 1."""
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, VOCAB, (rows, K)).astype(np.int64)
    indices[0, 1] = indices[0, 0]
    probs = rng.uniform(0.0, 0.5, (rows, K))
    return indices, probs


def shifted(target, sequence_length, ignore_index):
    """labels[..., 1:] within each sequence, the last position ignored."""
    if not sequence_length:
        return target
    seqs = target.reshape(-1, sequence_length)
    pad = torch.full((seqs.shape[0], 1), ignore_index, dtype=target.dtype)
    return torch.cat([seqs[:, 1:], pad], dim=1).reshape(-1)


def reference(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
              label_smoothing=0.0, lse_square_scale=0.0, softcap=None, class_weights=None,
              temperature=1.0, entropy_bonus=0.0, shift_sequence_length=0,
              soft_target_indices=None, soft_target_probs=None, soft_target_weight=1.0):
    """The loss from the explicit logits, torch float64 tensors in and out (differentiable)."""
    logits = x @ weight.T
    if bias is not None:
        logits = logits + bias
    logits = logits / temperature
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    y = shifted(target, shift_sequence_length, ignore_index)
    kept = y != ignore_index
    keptf = kept.to(logits.dtype)

    def reduce(per_row, divisor):
        return {"none": per_row, "sum": per_row.sum(), "mean": per_row.sum() / divisor}[reduction]

    loss = F.cross_entropy(logits, y, weight=class_weights, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    target_weight = (class_weights[y.clamp(min=0)] * keptf if class_weights is not None
                     else keptf).sum()
    if soft_target_indices is not None:
        q = torch.zeros_like(logits).scatter_add_(1, soft_target_indices, soft_target_probs)
        rows = F.cross_entropy(logits, q, weight=class_weights, reduction="none",
                               label_smoothing=label_smoothing) * keptf
        loss = (1 - soft_target_weight) * loss + soft_target_weight * reduce(rows, keptf.sum())
    if entropy_bonus:
        entropy = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1) * keptf
        loss = loss - entropy_bonus * reduce(entropy, target_weight)
    if lse_square_scale:
        z = lse_square_scale * torch.logsumexp(logits, -1) ** 2 * keptf
        loss = loss + reduce(z, keptf.sum())
    return loss


def problem(case, dtype=torch.float64, *, rows=ROWS):
    """Torch inputs in `dtype` (soft probabilities in the computation's dtype), the case's keyword
    arguments for tessel, and the same in float64 for the reference (16-bit values widened
    exactly)."""
    options = dict(CASES[case])
    x, weight, target, bias, class_weights = make_problem(np.float64, rows=rows, vocab=VOCAB,
                                                          ignored=(3, 8))
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    x, weight = torch.tensor(x).to(dtype), torch.tensor(weight).to(dtype)
    options["bias"] = torch.tensor(bias).to(dtype) if options.pop("bias", False) else None
    options["class_weights"] = (torch.tensor(class_weights).to(dtype)
                                if options.pop("class_weights", False) else None)
    if options.pop("soft", False):
        indices, probs = soft_targets(rows)
        options["soft_target_indices"] = torch.tensor(indices)
        options["soft_target_probs"] = torch.tensor(probs).to(compute)
    wide = {k: (v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point()
                else v) for k, v in options.items()}
    return x, weight, torch.tensor(target), options, wide


def tolerances(dtype):
    """Loss and gradients: float64's tolerance for float64, float32's for float32; 16-bit results
    are computed in float32 and rounded once or twice to the storage type (the forward rounds,
    the backward multiplies by the upstream gradient): rtol 2u on top of float32's, as in
    test_linear_cross_entropy_16bit.py."""
    if dtype == torch.float64:
        return TOLERANCE[np.float64]
    unit = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}.get(dtype, 0.0)
    base = TOLERANCE[np.float32]
    return dict(rtol=2 * unit + base["rtol"], atol=base["atol"])


def reference_with_gradients(x, weight, target, wide, reduction, upstream=None):
    """The reference loss and its gradients for x, weight and bias (None without a bias)."""
    xr = x.detach().to(torch.float64).requires_grad_()
    wr = weight.detach().to(torch.float64).requires_grad_()
    br = wide["bias"].detach().clone().requires_grad_() if wide["bias"] is not None else None
    options = {k: v for k, v in wide.items() if k != "bias"}
    loss = reference(xr, wr, target, br, reduction=reduction, **options)
    loss.backward(upstream if reduction == "none" else None)
    return loss.detach(), xr.grad, wr.grad, None if br is None else br.grad


@pytest.mark.parametrize("dtype", STORAGE, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", CASES)
def test_autograd_matches_pytorch_on_explicit_logits(dtype, reduction, case):
    x, weight, target, options, wide = problem(case, dtype)
    x.requires_grad_()
    weight.requires_grad_()
    if options["bias"] is not None:
        options["bias"].requires_grad_()
    # Exact in every storage dtype (the backward receives it in the loss's dtype).
    upstream = torch.arange(ROWS, dtype=torch.float64) * 0.25 - 1.0
    loss = tessel.linear_cross_entropy(x, weight, target, reduction=reduction, **options)
    assert loss.dtype == dtype
    loss.backward(upstream.to(dtype) if reduction == "none" else None)
    expected = reference_with_gradients(x, weight, target, wide, reduction, upstream)
    got = (loss, x.grad, weight.grad, None if options["bias"] is None else options["bias"].grad)
    tol = tolerances(dtype)
    for name, g, e in zip(("loss", "grad_input", "grad_weight", "grad_bias"), got, expected):
        if e is None:
            assert g is None, name
            continue
        torch.testing.assert_close(g.detach().to(torch.float64), e, **tol, msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", CASES)
def test_numpy_matches_pytorch_on_explicit_logits(dtype, reduction, case):
    torch_dtype = torch.float64 if dtype == np.float64 else torch.float32
    x, weight, target, options, wide = problem(case, torch_dtype)
    arrays = {k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in options.items()}
    result = tessel.linear_cross_entropy(x.numpy(), weight.numpy(), target.numpy(),
                                         reduction=reduction, **arrays)
    # NumPy's gradients are for an upstream gradient of 1 (the sum for reduction none).
    expected = reference_with_gradients(x, weight, target, wide, reduction,
                                        torch.ones(ROWS, dtype=torch.float64))
    tol = tolerances(torch_dtype)
    for g, e in zip(result, expected):
        if e is None:
            assert g is None
            continue
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e.numpy(), **tol)


def test_plain_soft_targets_are_the_top_k_cross_entropy():
    """alpha = 1, no smoothing or weights: row i's loss is -sum_k p_k log_softmax(z_i)[c_k],
    written out by hand (not through F.cross_entropy's probability targets); ignored rows 0."""
    x, weight, target, options, _ = problem("soft")
    indices, probs = options["soft_target_indices"], options["soft_target_probs"]
    logp = torch.log_softmax(x @ weight.T, -1)
    rows = -(probs * logp.gather(1, indices)).sum(-1) * (target != -100)
    loss = tessel.linear_cross_entropy(x, weight, target, reduction="none",
                                       soft_target_indices=indices, soft_target_probs=probs)
    torch.testing.assert_close(loss, rows, rtol=1e-12, atol=1e-12)
    assert loss[3] == 0 and loss[8] == 0
    mean = tessel.linear_cross_entropy(x, weight, target, soft_target_indices=indices,
                                       soft_target_probs=probs)
    # The mean divides by the non-ignored rows (10), not all 12 as PyTorch's probability targets.
    torch.testing.assert_close(mean, rows.sum() / 10, rtol=1e-12, atol=1e-12)


def test_one_hot_soft_target_on_the_hard_target_is_the_hard_loss():
    x, weight, target, _, _ = problem("soft")
    indices = target.clamp(min=0)[:, None]
    probs = torch.ones(ROWS, 1, dtype=torch.float64)
    for alpha in (1.0, 0.4):
        soft = tessel.linear_cross_entropy(x, weight, target, label_smoothing=0.1,
                                           soft_target_indices=indices, soft_target_probs=probs,
                                           soft_target_weight=alpha)
        hard = tessel.linear_cross_entropy(x, weight, target, label_smoothing=0.1)
        torch.testing.assert_close(soft, hard, rtol=1e-12, atol=1e-12)


def test_options_change_the_loss():
    """Each option moves the loss on this problem, so that the comparisons above cannot pass
    with an option the binding silently dropped."""
    x, weight, target, _, _ = problem("everything")
    indices, probs = soft_targets()
    base = tessel.linear_cross_entropy(x, weight, target, reduction="none")
    for options in (dict(entropy_bonus=0.5), dict(shift_sequence_length=4),
                    dict(soft_target_indices=torch.tensor(indices),
                         soft_target_probs=torch.tensor(probs))):
        changed = tessel.linear_cross_entropy(x, weight, target, reduction="none", **options)
        assert not torch.allclose(changed, base), options


def test_shift_ignores_each_sequences_last_row_and_scores_the_next_target():
    x, weight, target, _, _ = problem("shift")
    loss = tessel.linear_cross_entropy(x, weight, target, reduction="none",
                                       shift_sequence_length=4)
    logp = torch.log_softmax(x @ weight.T, -1)
    for i in range(ROWS):
        if (i + 1) % 4 == 0 or target[i + 1] == -100:
            assert loss[i] == 0, i
        else:
            torch.testing.assert_close(loss[i], -logp[i, target[i + 1]], rtol=1e-12, atol=1e-12)


def test_soft_targets_of_ignored_rows_are_not_read():
    """Row 3 is ignored by its target and, under the shift, row 3 (a sequence's last row) too:
    invalid soft targets there are not an error and change nothing."""
    x, weight, target, _, _ = problem("soft")
    indices, probs = soft_targets()
    bad_indices, bad_probs = indices.copy(), probs.copy()
    bad_indices[3, 0], bad_probs[3, 1] = VOCAB + 5, np.nan
    for shift in (0, 4):
        args = dict(reduction="none", shift_sequence_length=shift)
        good = tessel.linear_cross_entropy(x, weight, target, soft_target_indices=indices,
                                           soft_target_probs=probs, **args)
        bad = tessel.linear_cross_entropy(x, weight, target, soft_target_indices=bad_indices,
                                          soft_target_probs=bad_probs, **args)
        torch.testing.assert_close(bad, good, rtol=0, atol=0)


def test_soft_targets_are_not_shifted():
    """Under the shift the soft targets stay with their rows: moving them one row changes the
    loss, and the reference (which does not shift them) agrees."""
    x, weight, target, _, _ = problem("soft")
    indices, probs = soft_targets()
    options = dict(reduction="none", shift_sequence_length=4, soft_target_weight=0.5)
    loss = tessel.linear_cross_entropy(x, weight, target, soft_target_indices=indices,
                                       soft_target_probs=probs, **options)
    expected = reference(x, weight, target, soft_target_indices=torch.tensor(indices),
                         soft_target_probs=torch.tensor(probs), **options)
    torch.testing.assert_close(loss, expected, rtol=1e-11, atol=1e-12)
    moved = tessel.linear_cross_entropy(x, weight, target,
                                        soft_target_indices=np.roll(indices, -1, 0),
                                        soft_target_probs=np.roll(probs, -1, 0), **options)
    assert not torch.allclose(moved, loss)


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("shift", [0, 3])
def test_gradcheck_in_float64_with_soft_targets_and_entropy_bonus(reduction, shift):
    rows = 6
    x, weight, target, bias, class_weights = make_problem(np.float64, rows=rows, hidden=3,
                                                          vocab=5, ignored=(2,))
    indices = torch.tensor([[0, 4], [1, 1], [2, 3], [4, 0], [3, 2], [1, 0]])
    probs = torch.tensor([[0.7, 0.3], [0.5, 0.25], [0.1, 0.9], [1.0, 0.0], [0.2, 0.2],
                          [0.6, 0.4]], dtype=torch.float64)
    x, weight, bias = (torch.tensor(a, requires_grad=True) for a in (x, weight, bias))
    target, class_weights = torch.tensor(target), torch.tensor(class_weights)

    def loss(x, weight, bias):
        return tessel.linear_cross_entropy(
            x, weight, target, bias, reduction=reduction, label_smoothing=0.1,
            class_weights=class_weights, entropy_bonus=0.3, soft_target_indices=indices,
            soft_target_probs=probs, soft_target_weight=0.7, shift_sequence_length=shift)

    assert torch.autograd.gradcheck(loss, (x, weight, bias), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_numpy_and_torch_entry_points_agree():
    x, weight, target, options, _ = problem("everything")
    torch_loss = tessel.linear_cross_entropy(x, weight, target, **options)
    arrays = {k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in options.items()}
    numpy_loss = tessel.linear_cross_entropy(x.numpy(), weight.numpy(), target.numpy(),
                                             **arrays).loss
    assert float(torch_loss) == float(numpy_loss)


def test_no_grad_gives_the_same_loss():
    x, weight, target, options, _ = problem("everything")
    x.requires_grad_()
    loss = tessel.linear_cross_entropy(x, weight, target, **options)
    with torch.no_grad():
        evaluated = tessel.linear_cross_entropy(x, weight, target, **options)
    assert evaluated.grad_fn is None
    torch.testing.assert_close(evaluated, loss.detach(), rtol=1e-12, atol=1e-12)


# ---- refusals ----

def call_numpy(x, weight, target, **options):
    return tessel.linear_cross_entropy(x, weight, target, **options)


def call_torch(x, weight, target, **options):
    """The same call with every array as a PyTorch tensor (the autograd entry point)."""
    as_tensor = lambda a: torch.from_numpy(a) if isinstance(a, np.ndarray) else a
    return tessel.linear_cross_entropy(
        as_tensor(x), as_tensor(weight), as_tensor(target),
        **{k: as_tensor(v) for k, v in options.items()})


def numpy_problem(dtype=np.float32):
    x, weight, target, _, _ = make_problem(dtype, rows=ROWS, vocab=VOCAB, ignored=(3,))
    indices, probs = soft_targets()
    compute = np.float64 if dtype == np.float64 else np.float32
    return x, weight, target, indices, probs.astype(compute)


def with_value(a, index, value):
    changed = a.copy()
    changed[index] = value
    return changed


@pytest.mark.parametrize("make_call, message", [
    # soft targets: shapes, ranks, dtypes (the binding), pairing and values (tessel)
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i[:5], soft_target_probs=p[:5]),
     r"soft_target_indices has shape \(5,4\) but needs \(rows, K\) with input's 12 rows and "
     r"K >= 1\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i, soft_target_probs=p[:, :3]),
     r"soft_target_probs has shape \(12,3\) but soft_target_indices has shape \(12,4\)\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i),
     r"soft_target_indices and soft_target_probs go together, but only soft_target_indices was "
     r"given\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_probs=p),
     r"but only soft_target_probs was given\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i[:, 0], soft_target_probs=p),
     r"soft_target_indices must have 2 dimensions \(rows, K\), got 1\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i, soft_target_probs=p[None]),
     r"soft_target_probs must have 2 dimensions \(rows, K\), got 3\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i.astype(np.int32),
                                soft_target_probs=p),
     r"soft_target_indices has dtype i32 but must have the class indices' dtype i64\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i,
                                soft_target_probs=p.astype(np.float64)),
     r"soft_target_probs has dtype f64 but must have the computation's dtype f32\."),
    (lambda c, x, w, y, i, p: c(x.astype(np.float16), w.astype(np.float16), y,
                                soft_target_indices=i, soft_target_probs=p.astype(np.float16)),
     r"soft_target_probs has dtype f16 but must have the computation's dtype f32\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=with_value(i, (2, 1), VOCAB),
                                soft_target_probs=p),
     r"soft target 1 of row 2 names class 11, outside \[0, 11\)\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=with_value(i, (5, 0), -1),
                                soft_target_probs=p),
     r"soft target 0 of row 5 names class -1, outside \[0, 11\)\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i,
                                soft_target_probs=with_value(p, (4, 2), -0.5)),
     r"soft target 2 of row 4 has probability -0\.5; probabilities must be finite and >= 0\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i,
                                soft_target_probs=with_value(p, (0, 3), np.inf)),
     r"soft target 3 of row 0 has probability inf; probabilities must be finite"),
    # soft_target_weight
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i, soft_target_probs=p,
                                soft_target_weight=1.5),
     r"soft_target_weight must lie in \[0, 1\], got 1\.5\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i, soft_target_probs=p,
                                soft_target_weight=-0.1),
     r"soft_target_weight must lie in \[0, 1\], got -0\.1\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i, soft_target_probs=p,
                                soft_target_weight=float("nan")),
     r"soft_target_weight must lie in \[0, 1\], got nan\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_weight=0.5),
     r"soft_target_weight is 0\.5 but no soft targets are given: it would change nothing\."),
    (lambda c, x, w, y, i, p: c(x, w, y, soft_target_indices=i, soft_target_probs=p,
                                soft_target_weight=0.0),
     r"soft targets were given with soft_target_weight 0: they would change nothing\."),
    # entropy_bonus
    (lambda c, x, w, y, i, p: c(x, w, y, entropy_bonus=float("inf")),
     r"entropy_bonus must be finite, got inf\."),
    (lambda c, x, w, y, i, p: c(x, w, y, entropy_bonus=float("nan")),
     r"entropy_bonus must be finite, got nan\."),
    # shift_sequence_length
    (lambda c, x, w, y, i, p: c(x, w, y, shift_sequence_length=5),
     r"shift_sequence_length must be 0 \(no shift\) or divide input's 12 rows into whole "
     r"sequences, got 5\."),
    (lambda c, x, w, y, i, p: c(x, w, y, shift_sequence_length=-4),
     r"shift_sequence_length must be 0 \(no shift\) or divide input's 12 rows into whole "
     r"sequences, got -4\."),
    (lambda c, x, w, y, i, p: c(x, w, y, shift_sequence_length=2.0),
     r"shift_sequence_length must be an integer \(0: no shift\), got 2\.0\."),
    (lambda c, x, w, y, i, p: c(x, w, y, shift_sequence_length=True),
     r"shift_sequence_length must be an integer \(0: no shift\), got True\."),
    (lambda c, x, w, y, i, p: c(x, w, with_value(y, 5, 99), shift_sequence_length=4),
     r"target 99 at row 5 \(what row 4 predicts under shift_sequence_length 4\) is outside "
     r"\[0, 11\) and is not ignore_index \(-100\)\."),
], ids=lambda v: v if isinstance(v, str) else None)
@pytest.mark.parametrize("entry", [call_numpy, call_torch], ids=["numpy", "torch"])
def test_bad_options_raise_value_error_with_tessel_sentence(make_call, message, entry):
    with pytest.raises(ValueError, match=message):
        make_call(entry, *numpy_problem())


def test_soft_target_probs_requiring_grad_are_refused():
    x, weight, target, indices, probs = (torch.from_numpy(a) for a in numpy_problem(np.float64))
    probs.requires_grad_()
    with pytest.raises(ValueError, match=r"soft_target_probs requires grad, but tessel computes "
                                         r"no gradient for the soft targets; pass "
                                         r"soft_target_probs\.detach\(\)\."):
        tessel.linear_cross_entropy(x, weight, target, soft_target_indices=indices,
                                    soft_target_probs=probs)
    # Without autograd there is no gradient to lose: the same call evaluates.
    with torch.no_grad():
        tessel.linear_cross_entropy(x, weight, target, soft_target_indices=indices,
                                    soft_target_probs=probs)


def test_the_docs_example_prints_what_the_docs_show():
    """docs/python.md's example of these options, run as written."""
    docs = (pathlib.Path(__file__).parents[2] / "docs" / "python.md").read_text()
    section = docs.split("### Soft targets, entropy bonus, causal shift", 1)[1]
    code, printed = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    output = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True).stdout
    assert output == printed
