"""tessel.linear_cross_entropy's extra outputs (return_extras): z_loss, lse, target_logprob,
entropy, argmax and accuracy, against PyTorch on the explicit logits, for every storage dtype,
both entry points (PyTorch tensors and NumPy arrays), every reduction and ignored rows.

The reference computes in float64 on the inputs' values (widened exactly from 16-bit storage), so
tessel's float32 computation is held to float32's tolerance for float32, float16 and bfloat16
inputs alike: the extras are not rounded to 16 bits.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tessel
from conftest import TOLERANCE, make_problem

STORAGE = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
FLOAT_EXTRAS = ("z_loss", "lse", "target_logprob", "entropy", "accuracy")

# Options the extras depend on (the logits they are taken over: bias, temperature, softcap;
# ignore_index), and options they must not depend on (smoothing, class weights).
CASES = {
    "plain": {},
    "ignore_index_inside_vocab": dict(ignore_index=2),  # also ignores every target 2
    "temperature_softcap_z_loss": dict(temperature=0.7, softcap=2.5, lse_square_scale=1e-2),
    "bias_smoothing_class_weights_z_loss": dict(bias=True, label_smoothing=0.2,
                                                class_weights=True, lse_square_scale=3e-2),
}


def computation_dtype(storage):
    return torch.float64 if storage == torch.float64 else torch.float32


def tolerance(storage):
    return TOLERANCE[np.float64 if storage == torch.float64 else np.float32]


def rounded_tolerance(storage):
    """For results rounded to the storage dtype (the loss, the gradients): asking for entropy or
    argmax takes another row pass, which may round differently, then once or twice more to 16
    bits (test_linear_cross_entropy_16bit.py)."""
    unit = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}.get(storage, 0.0)
    base = tolerance(storage)
    return dict(rtol=2 * unit + base["rtol"], atol=base["atol"])


def problem(storage, case, *, rows=13):
    """Torch inputs of the storage dtype and the case's keyword arguments."""
    options = dict(CASES[case])
    ignore_index = options.get("ignore_index", -100)
    x, weight, target, bias, class_weights = make_problem(np.float64, rows=rows,
                                                          ignore_index=ignore_index)
    x, weight = torch.tensor(x).to(storage), torch.tensor(weight).to(storage)
    options["bias"] = torch.tensor(bias).to(storage) if options.pop("bias", False) else None
    options["class_weights"] = (torch.tensor(class_weights).to(storage)
                                if options.pop("class_weights", False) else None)
    return x, weight, torch.tensor(target), options


def reference_extras(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
                     lse_square_scale=0.0, softcap=None, temperature=1.0, **_):
    """Every extra from the explicit logits ``(x @ weight.T + bias) / temperature``, softcapped,
    in float64: ignored rows hold 0 (argmax -1); z_loss and accuracy reduced like the loss (mean:
    over the non-ignored rows)."""
    logits = x.double() @ weight.double().T
    if bias is not None:
        logits = logits + bias.double()
    logits = logits / temperature
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    kept = target != ignore_index
    logp = torch.log_softmax(logits, dim=-1)
    lse = torch.logsumexp(logits, dim=-1)
    target_logprob = logp.gather(1, torch.where(kept, target, 0)[:, None])[:, 0]
    entropy = -(logp.exp() * logp).sum(dim=-1)
    argmax = torch.argmax(logits, dim=-1)
    zero = torch.zeros((), dtype=torch.float64)
    correct = ((argmax == target) & kept).double()

    def reduce(per_row):
        if reduction == "none":
            return per_row
        if reduction == "sum":
            return per_row.sum()
        return per_row.sum() / kept.sum() if kept.any() else zero

    return dict(z_loss=reduce(torch.where(kept, lse_square_scale * lse**2, zero)),
                lse=torch.where(kept, lse, zero),
                target_logprob=torch.where(kept, target_logprob, zero),
                entropy=torch.where(kept, entropy, zero),
                argmax=torch.where(kept, argmax, -1),
                accuracy=reduce(correct))


def check_extras(got, want, storage, names=tessel.EXTRAS):
    for name in tessel.EXTRAS:
        value = getattr(got, name)
        if name not in names:
            assert value is None, name
            continue
        value = torch.as_tensor(value)
        assert value.shape == want[name].shape, name
        if name == "argmax":
            assert value.dtype == torch.int64
            assert torch.equal(value, want[name])
        else:
            assert value.dtype == computation_dtype(storage), name
            torch.testing.assert_close(value.double(), want[name], **tolerance(storage),
                                       msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("storage", STORAGE, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(CASES))
def test_torch_extras_match_pytorch(storage, reduction, case):
    x, weight, target, options = problem(storage, case)
    want = reference_extras(x, weight, target, reduction=reduction, **options)
    xt = x.clone().requires_grad_()
    got = tessel.linear_cross_entropy(xt, weight, target, reduction=reduction,
                                      return_extras=tessel.EXTRAS, **options)
    assert isinstance(got, tessel.LinearCrossEntropyOutput)
    check_extras(got, want, storage)
    assert got.grad_input is None and got.grad_weight is None and got.grad_bias is None
    for name in tessel.EXTRAS:
        assert not getattr(got, name).requires_grad, name

    # The loss is the default call's, with the same gradient.
    xd = x.clone().requires_grad_()
    default = tessel.linear_cross_entropy(xd, weight, target, reduction=reduction, **options)
    assert got.loss.dtype == default.dtype == storage
    torch.testing.assert_close(got.loss.detach(), default.detach(), **rounded_tolerance(storage))
    upstream = torch.linspace(-1.5, 2.0, len(target)).to(storage)
    for loss in (got.loss, default):
        (loss * upstream).sum().backward() if reduction == "none" else (3.0 * loss).backward()
    torch.testing.assert_close(xt.grad, xd.grad, **rounded_tolerance(storage))


@pytest.mark.parametrize("storage", [torch.float32, torch.float64, torch.float16], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(CASES))
def test_numpy_extras_match_pytorch(storage, reduction, case):
    x, weight, target, options = problem(storage, case)
    want = reference_extras(x, weight, target, reduction=reduction, **options)
    arrays = {k: None if v is None else v.numpy() for k, v in options.items()
              if isinstance(v, torch.Tensor) or v is None}
    scalars = {k: v for k, v in options.items() if k not in arrays}
    got = tessel.linear_cross_entropy(x.numpy(), weight.numpy(), target.numpy(),
                                      reduction=reduction, return_extras=tessel.EXTRAS,
                                      **arrays, **scalars)
    assert isinstance(got, tessel.LinearCrossEntropyOutput)
    for name in tessel.EXTRAS:
        assert isinstance(getattr(got, name), np.ndarray), name
    check_extras(got, want, storage)
    # Loss and gradients are the default call's.
    default = tessel.linear_cross_entropy(x.numpy(), weight.numpy(), target.numpy(),
                                          reduction=reduction, **arrays, **scalars)
    assert isinstance(default, tessel.LinearCrossEntropyResult)
    for field in default._fields:
        a, b = getattr(default, field), getattr(got, field)
        if a is None:
            assert b is None, field
        else:
            assert a.dtype == b.dtype, field
            torch.testing.assert_close(torch.from_numpy(b), torch.from_numpy(a),
                                       **rounded_tolerance(storage), msg=field)


@pytest.mark.parametrize("storage", STORAGE, ids=str)
def test_int32_targets_give_the_extras_of_int64(storage):
    x, weight, target, options = problem(storage, "temperature_softcap_z_loss")
    results = [tessel.linear_cross_entropy(x, weight, t, reduction="none",
                                           return_extras=tessel.EXTRAS, **options)
               for t in (target, target.to(torch.int32))]
    for name in ("loss",) + tessel.EXTRAS:
        assert torch.equal(getattr(results[0], name), getattr(results[1], name)), name


@pytest.mark.parametrize("names", [("lse",), ("argmax", "z_loss"), ("entropy", "entropy"), ()],
                         ids=str)
def test_only_the_extras_asked_for_are_returned(names):
    x, weight, target, options = problem(torch.float64, "temperature_softcap_z_loss")
    want = reference_extras(x, weight, target, **options)
    for with_grad in (True, False):
        with torch.set_grad_enabled(with_grad):
            got = tessel.linear_cross_entropy(x.clone().requires_grad_(), weight, target,
                                              return_extras=names, **options)
        check_extras(got, want, torch.float64, names)
        assert got.loss.requires_grad == with_grad
    got = tessel.linear_cross_entropy(x.numpy(), weight.numpy(), target.numpy(),
                                      return_extras=names, **options)
    check_extras(got, want, torch.float64, names)


def test_a_single_name_may_be_a_string():
    x, weight, target, _ = problem(torch.float64, "plain")
    got = tessel.linear_cross_entropy(x, weight, target, return_extras="target_logprob")
    assert got.lse is None
    torch.testing.assert_close(got.target_logprob, reference_extras(x, weight, target)[
        "target_logprob"], **tolerance(torch.float64))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_every_row_ignored(reduction):
    x, weight, target, _ = problem(torch.float32, "plain", rows=8)
    target[:] = -100
    got = tessel.linear_cross_entropy(x, weight, target, reduction=reduction,
                                      lse_square_scale=0.1, return_extras=tessel.EXTRAS)
    for name in ("z_loss", "accuracy", "lse", "target_logprob", "entropy"):
        assert torch.count_nonzero(getattr(got, name)) == 0, name
    assert torch.equal(got.argmax, torch.full((8,), -1))


def test_accuracy_counts_the_rows_predicted_right():
    # Targets set to the predicted class on some rows: accuracy must see exactly those.
    x, weight, target, _ = problem(torch.float64, "plain")
    predicted = torch.argmax(x @ weight.T, dim=-1)
    target = torch.where(torch.arange(len(target)) % 3 == 0, predicted, (predicted + 1) % 11)
    target[5] = -100  # row 5 (not a multiple of 3) is ignored
    right = int((torch.arange(len(target)) % 3 == 0).sum())
    sums = tessel.linear_cross_entropy(x, weight, target, reduction="sum",
                                       return_extras="accuracy")
    means = tessel.linear_cross_entropy(x, weight, target, return_extras="accuracy")
    assert sums.accuracy.item() == right
    assert means.accuracy.item() == pytest.approx(right / (len(target) - 1), rel=1e-15)


def test_target_logprob_differentiably_is_minus_the_per_row_loss():
    # What the docs say to use instead of the (detached) target_logprob extra.
    x, weight, target, options = problem(torch.float64, "temperature_softcap_z_loss")
    options["lse_square_scale"] = 0.0
    advantages = torch.linspace(-1.0, 1.0, len(target), dtype=torch.float64)
    xt, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
    got = tessel.linear_cross_entropy(xt, weight, target, reduction="none",
                                      return_extras="target_logprob", **options)
    torch.testing.assert_close(-got.loss.detach(), got.target_logprob, rtol=1e-12, atol=1e-13)
    (-got.loss * advantages).sum().backward()
    logits = options["softcap"] * torch.tanh(xr @ weight.T / options["temperature"]
                                             / options["softcap"])
    kept = target != -100
    logp = F.log_softmax(logits, -1).gather(1, torch.where(kept, target, 0)[:, None])[:, 0]
    (logp * kept * advantages).sum().backward()
    torch.testing.assert_close(xt.grad, xr.grad, rtol=1e-11, atol=1e-12)


BAD_EXTRAS = [
    ("logits", r"return_extras names 'logits', which is not an output of tessel's FLCE; the "
               r"extras are z_loss, lse, target_logprob, entropy, argmax and accuracy\."),
    (["lse", "token_accuracy"], r"return_extras names 'token_accuracy'"),
    (True, r"return_extras takes names of extra outputs .* got True\."),
    (3, r"return_extras takes names of extra outputs .* got 3\."),
    (["lse", 1], r"return_extras holds 1, which is not a name"),
]


@pytest.mark.parametrize("return_extras, message", BAD_EXTRAS, ids=str)
@pytest.mark.parametrize("entry", ["torch", "torch_no_grad", "numpy"])
def test_bad_return_extras_are_refused(return_extras, message, entry):
    x, weight, target, _ = problem(torch.float32, "plain")
    if entry == "numpy":
        x, weight, target = x.numpy(), weight.numpy(), target.numpy()
    else:
        x.requires_grad_(entry == "torch")
    with torch.set_grad_enabled(entry == "torch"), pytest.raises(ValueError, match=message):
        tessel.linear_cross_entropy(x, weight, target, return_extras=return_extras)
