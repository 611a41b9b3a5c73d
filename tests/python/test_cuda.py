"""tessel.linear_cross_entropy over PyTorch CUDA tensors: the same results as tessel's host path
(and so as F.cross_entropy's autograd) for every option, on the current stream, with clear
refusals of mixed devices. Skipped, with the reason, where there is no CUDA device or the module
was built without CUDA (TESSEL_PYTHON_CUDA, docs/python.md)."""

import numpy as np
import pytest
import torch

import tessel
import tessel.torch
from conftest import OPTION_CASES, make_problem, resolve

HAS_DEVICE = torch.cuda.is_available()
HAS_CUDA_BUILD = hasattr(tessel._tessel, "linear_cross_entropy_cuda")
needs_cuda = pytest.mark.skipif(not (HAS_DEVICE and HAS_CUDA_BUILD),
                                reason="needs a CUDA device and a module built with CUDA "
                                       "(TESSEL_PYTHON_CUDA=ON)")

# cuBLAS's products against Eigen's/OpenBLAS's: the same sums in another order (f16/bf16: the
# same rounding of the inputs, f32 accumulation both sides).
TOLERANCE = {torch.float64: dict(rtol=1e-10, atol=1e-11),
             torch.float32: dict(rtol=1e-4, atol=1e-5),
             torch.float16: dict(rtol=2e-2, atol=2e-3),
             torch.bfloat16: dict(rtol=3e-2, atol=3e-3)}


def run(device, dtype, x, weight, target, bias, class_weights, reduction, options, extras=None):
    """Loss, gradients (through autograd, with a non-trivial upstream gradient) and extras of one
    call on `device`, all moved to the host as float64 for comparison."""
    def leaf(a):
        return None if a is None else torch.tensor(a, device=device).to(dtype).requires_grad_()
    xt, wt, bt = leaf(x), leaf(weight), leaf(bias)
    cw = None if class_weights is None else torch.tensor(class_weights, device=device).to(dtype)
    target = torch.tensor(target, device=device)
    result = tessel.linear_cross_entropy(xt, wt, target, bt, reduction=reduction,
                                         class_weights=cw, return_extras=extras, **options)
    loss = result.loss if extras is not None else result
    upstream = torch.linspace(-1.5, 2.0, len(target), device=device, dtype=loss.dtype)
    (loss * upstream).sum().backward() if reduction == "none" else (3.0 * loss).backward()
    values = [loss] + [None if t is None else t.grad for t in (xt, wt, bt)]
    if extras is not None:
        values += [getattr(result, name) for name in extras]
    return [None if v is None else v.detach().cpu().to(torch.float64) for v in values]


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_cuda_matches_the_host(dtype, reduction, case):
    ignore_index = OPTION_CASES[case].get("ignore_index", -100)
    x, weight, target, bias, class_weights = make_problem(np.float64, ignore_index=ignore_index)
    options = resolve(case, bias, class_weights)
    bias, class_weights = options.pop("bias"), options.pop("class_weights")
    host = run("cpu", dtype, x, weight, target, bias, class_weights, reduction, options)
    device = run("cuda", dtype, x, weight, target, bias, class_weights, reduction, options)
    for got, want in zip(device, host):
        if want is None:
            assert got is None
        else:
            torch.testing.assert_close(got, want, **TOLERANCE[dtype])


@needs_cuda
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cuda_extras_match_the_host(reduction):
    x, weight, target, bias, class_weights = make_problem(np.float32)
    options = dict(label_smoothing=0.1, lse_square_scale=1e-2, softcap=4.0)
    host = run("cpu", torch.float32, x, weight, target, bias, class_weights, reduction, options,
               extras=list(tessel.EXTRAS))
    device = run("cuda", torch.float32, x, weight, target, bias, class_weights, reduction, options,
                 extras=list(tessel.EXTRAS))
    for got, want in zip(device, host):
        torch.testing.assert_close(got, want, **TOLERANCE[torch.float32])


@needs_cuda
@pytest.mark.parametrize("chunk_size", [1, 3, 64])
def test_cuda_chunk_sizes_match_the_host(chunk_size):
    x, weight, target, bias, class_weights = make_problem(np.float32)
    options = dict(label_smoothing=0.1, chunk_size=chunk_size)
    host = run("cpu", torch.float32, x, weight, target, bias, class_weights, "none", options)
    device = run("cuda", torch.float32, x, weight, target, bias, class_weights, "none", options)
    for got, want in zip(device, host):
        torch.testing.assert_close(got, want, **TOLERANCE[torch.float32])
    with pytest.raises(ValueError, match=r"chunk_size must be >= 0"):
        tessel.linear_cross_entropy(torch.tensor(x, device="cuda"),
                                    torch.tensor(weight, device="cuda"),
                                    torch.tensor(target, device="cuda"), chunk_size=-2)


@needs_cuda
def test_cuda_results_live_on_the_input_device_in_pytorch_dtypes():
    x, weight, target, bias, _ = make_problem(np.float32)
    xt = torch.tensor(x, device="cuda").bfloat16().requires_grad_()
    wt = torch.tensor(weight, device="cuda").bfloat16().requires_grad_()
    loss = tessel.linear_cross_entropy(xt, wt, torch.tensor(target, device="cuda"))
    loss.backward()
    for t in (loss, xt.grad, wt.grad):
        assert t.device == xt.device and t.dtype == torch.bfloat16


@needs_cuda
def test_cuda_runs_on_the_current_stream():
    # Inputs made on a side stream and used there without synchronizing with the default stream:
    # correct results show tessel queued its work on the current stream, after them.
    x, weight, target, _, _ = make_problem(np.float32, rows=512, hidden=64, vocab=2000, ignored=())
    want = run("cpu", torch.float32, x, weight, target, None, None, "mean", {})
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        xt = torch.tensor(x, device="cuda").requires_grad_()
        wt = torch.tensor(weight, device="cuda").requires_grad_()
        loss = tessel.linear_cross_entropy(xt, wt, torch.tensor(target, device="cuda"))
        (3.0 * loss).backward()
    side.synchronize()
    got = [loss, xt.grad, wt.grad]
    for g, w in zip(got, want):
        torch.testing.assert_close(g.detach().cpu().double(), w, **TOLERANCE[torch.float32])


@needs_cuda
def test_cuda_arrays_on_other_devices_are_refused_not_copied():
    x, weight, target, bias, _ = make_problem(np.float32)
    xt, wt = torch.tensor(x, device="cuda"), torch.tensor(weight, device="cuda")
    yt = torch.tensor(target, device="cuda")
    with pytest.raises(ValueError, match=r"weight lives on DLPack device type 1 id 0 but the input "
                                         r"on CUDA device 0 \(type 2\); every array of the call "
                                         r"must be on the input's device"):
        tessel.linear_cross_entropy(xt, torch.tensor(weight), yt)
    with pytest.raises(ValueError, match=r"target lives on DLPack device type 1"):
        tessel.linear_cross_entropy(xt, wt, torch.tensor(target))
    with pytest.raises(ValueError, match=r"bias lives on DLPack device type 1"):
        tessel.linear_cross_entropy(xt, wt, yt, torch.tensor(bias))
    # A host call with one CUDA array: the host binding's sentence.
    with pytest.raises(ValueError, match=r"weight lives on a device \(DLPack device type 2\) but "
                                         r"this call takes host memory"):
        tessel.linear_cross_entropy(torch.tensor(x), wt, torch.tensor(target))


@needs_cuda
def test_cuda_refusals_carry_tessel_sentences():
    x, weight, target, _, _ = make_problem(np.float32)
    xt, wt = torch.tensor(x, device="cuda"), torch.tensor(weight, device="cuda")
    with pytest.raises(ValueError,
                       match=r"class indices on CUDA must be i64 \(int64\): \.long\(\)"):
        tessel.linear_cross_entropy(xt, wt, torch.tensor(target, device="cuda").int())
    bad = torch.tensor(target, device="cuda")
    bad[2] = 99
    with pytest.raises(ValueError, match=r"target 99 at row 2 is outside \[0, 11\)"):
        tessel.linear_cross_entropy(xt, wt, bad)
    with pytest.raises(ValueError, match=r"weight has shape \(11,5\) but input has hidden size 8"):
        tessel.linear_cross_entropy(xt, wt[:, :5].contiguous(), torch.tensor(target, device="cuda"))


@pytest.mark.skipif(not HAS_DEVICE or HAS_CUDA_BUILD,
                    reason="needs a CUDA device and a module built without CUDA")
def test_cuda_tensors_without_a_cuda_build_are_refused_not_copied():
    x, weight, target, _, _ = make_problem(np.float32)
    with pytest.raises(ValueError, match=r"x lives on cuda:0 but this tessel module was built "
                                         r"without CUDA: reinstall it with"):
        tessel.linear_cross_entropy(torch.tensor(x).cuda(), torch.tensor(weight).cuda(),
                                    torch.tensor(target).cuda())
