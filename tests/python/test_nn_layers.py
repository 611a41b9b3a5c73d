"""tessel::nn against torch autograd: every layer kernel's forward and backward (LayerNorm,
RMSNorm, embedding, GELU tanh, SwiGLU) on random inputs, through the C++ driver
tessel_nn_reference (tests/nn/nn_reference_main.cpp), which reads the inputs from a safetensors
file and writes its outputs and gradients to another. float64 agrees within 1e-10 relative,
float32 within 1e-5 (both relative to the result's scale as well, where float32 cancels).

The driver is looked for under $TESSEL_BUILD_DIR/tests, else build/default/tests and
build/host/tests; without it the tests skip, saying how to build it."""

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import built_program

DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.int64: "I64"}
NUMPY = {"F64": np.float64, "F32": np.float32, "I64": np.int64}
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}


def driver():
    return built_program("tests/tessel_nn_reference")


pytestmark = pytest.mark.skipif(
    driver() is None,
    reason="tessel_nn_reference is not built: run `cmake --preset host && cmake --build --preset "
           "host --target tessel_nn_reference` (or set TESSEL_BUILD_DIR to a build directory "
           "that has tests/tessel_nn_reference)")


def write_safetensors(path, tensors, metadata):
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def read_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        array = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype=NUMPY[e["dtype"]])
        out[name] = torch.from_numpy(array.copy()).reshape(e["shape"])
    return out


def torch_reference(inputs, ln_eps, rms_eps):
    """What tessel_nn_reference computes, by torch autograd."""
    x, dy = inputs["x"], inputs["dy"]
    d = x.shape[1]
    out = {}

    def grads(y, *leaves):
        return torch.autograd.grad(y, leaves, dy)

    xs, w, b = (t.clone().requires_grad_() for t in (x, inputs["ln_weight"], inputs["ln_bias"]))
    y, mean, rstd = torch.ops.aten.native_layer_norm(xs, [d], w, b, ln_eps)
    out.update(ln_y=y, ln_mean=mean.reshape(-1), ln_rstd=rstd.reshape(-1))
    out["ln_dx"], out["ln_dweight"], out["ln_dbias"] = grads(y, xs, w, b)

    xs, w = (t.clone().requires_grad_() for t in (x, inputs["rms_weight"]))
    y = F.rms_norm(xs, [d], w, eps=rms_eps)
    eps = torch.finfo(x.dtype).eps if rms_eps is None else rms_eps
    out.update(rms_y=y, rms_rstd=torch.rsqrt(x.pow(2).mean(-1) + eps))
    out["rms_dx"], out["rms_dweight"] = grads(y, xs, w)

    table = inputs["table"].clone().requires_grad_()
    y = F.embedding(inputs["ids"], table)
    out["emb_out"] = y
    (out["emb_dtable"],) = grads(y, table)

    xs = x.clone().requires_grad_()
    y = F.gelu(xs, approximate="tanh")
    out["gelu_y"] = y
    (out["gelu_dx"],) = grads(y, xs)

    a, bb = (t.clone().requires_grad_() for t in (inputs["a"], inputs["b"]))
    y = F.silu(a) * bb
    out["swiglu_y"] = y
    out["swiglu_da"], out["swiglu_db"] = grads(y, a, bb)
    return {k: v.detach() for k, v in out.items()}


def make_inputs(dtype, n, d, vocab, seed):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, mean=0.0, std=1.0):
        return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)

    ids = torch.randint(0, vocab, (n,), generator=g)
    ids[: min(3, n)] = ids[0]  # repeated ids: the scatter-add sums several tokens into one row
    return dict(x=randn(n, d, mean=1.0, std=2.0), dy=randn(n, d), ln_weight=randn(d, mean=1.0),
                ln_bias=randn(d), rms_weight=randn(d, mean=1.0), table=randn(vocab, d), ids=ids,
                a=randn(n, d, std=3.0), b=randn(n, d))


# (name, dtype, rows, features, vocabulary, RMSNorm's eps). Two features only in float64: there
# LayerNorm's dx is the difference of two nearly equal terms (xhat is +-1), so float32 keeps
# about three digits in both tessel and torch, each as far from the float64 answer as from the
# other.
CASES = [(f"{name}-{tag}", dtype, *shape)
         for name, shape in [("odd", (13, 24, 11, None)), ("wider", (64, 96, 50, 1e-5)),
                             ("two_features", (5, 2, 3, 1e-6))]
         for dtype, tag in [(torch.float64, "f64"), (torch.float32, "f32")]
         if not (name == "two_features" and dtype == torch.float32)]


@pytest.mark.parametrize("dtype,n,d,vocab,rms_eps", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_every_layer_matches_torch_autograd(tmp_path, dtype, n, d, vocab, rms_eps):
    torch.set_num_threads(1)
    inputs = make_inputs(dtype, n, d, vocab, seed=n * 1000 + d)
    ln_eps = 1e-5
    metadata = {"ln_eps": repr(ln_eps)}
    if rms_eps is not None:
        metadata["rms_eps"] = repr(rms_eps)
    write_safetensors(tmp_path / "in.safetensors", inputs, metadata)
    run = subprocess.run([str(driver()), str(tmp_path / "in.safetensors"),
                          str(tmp_path / "out.safetensors")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got = read_safetensors(tmp_path / "out.safetensors")
    want = torch_reference(inputs, ln_eps, rms_eps)
    assert sorted(got) == sorted(want)
    tol = TOLERANCE[dtype]
    for name, w in want.items():
        g = got[name]
        assert g.dtype == w.dtype and g.shape == w.shape, name
        scale = w.abs().max().item() if w.numel() else 0.0
        torch.testing.assert_close(g, w, rtol=tol, atol=tol * scale, msg=lambda m: f"{name}: {m}")


def test_a_bad_id_is_one_sentence_and_no_output(tmp_path):
    inputs = make_inputs(torch.float64, 4, 3, 5, seed=1)
    inputs["ids"][2] = 5
    write_safetensors(tmp_path / "in.safetensors", inputs, {"ln_eps": "1e-5"})
    run = subprocess.run([str(driver()), str(tmp_path / "in.safetensors"),
                          str(tmp_path / "out.safetensors")], capture_output=True, text=True)
    assert run.returncode == 1
    assert "embedding: token ids range over [" in run.stderr
    assert "but the table has 5 rows; every id needs 0 <= id < 5." in run.stderr
    assert not (tmp_path / "out.safetensors").exists()
