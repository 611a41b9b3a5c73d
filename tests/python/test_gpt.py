"""examples/gpt's transformer against the PyTorch GPT-2 of tools/bench/gpt2/gpt2_reference.py,
from the same weights (a safetensors file under GPT-2's names): the loss and every parameter's
gradient after one forward and backward, within 1e-10 of each tensor's largest magnitude in
float64 and 1e-5 in float32. The configuration is gpt_check's (2 layers, 2 heads of 4, vocabulary 11, context 8;
2 sequences of 5 tokens, not a multiple of the attention tiles); `gpt_check IN OUT` is the C++
side. The program is looked for under $TESSEL_BUILD_DIR/bin, else build/default/bin and
build/host/bin; without it the test skips, saying how to build it."""

import subprocess
import sys

import pytest
import torch
from conftest import ROOT, built_program

sys.path.insert(0, str(ROOT / "tools" / "bench" / "gpt2"))
import gpt2_reference as ref  # noqa: E402


def program():
    return built_program("bin/gpt_check")


pytestmark = pytest.mark.skipif(
    program() is None,
    reason="gpt_check is not built: run `cmake --preset host && cmake --build --preset host "
           "--target gpt_check` (or set TESSEL_BUILD_DIR to a build directory with bin/gpt_check)")


@pytest.mark.parametrize("dtype,bound", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_loss_and_every_gradient_agree_with_pytorch(tmp_path, dtype, bound):
    config = ref.GPTConfig(n_layer=2, n_head=2, n_embd=8, vocab_size=11, block_size=8)
    model = ref.make_model(config, seed=3, dtype=dtype)
    # Weights of order 0.3 (GPT-2's 0.02 would leave the nonlinearities nearly linear), LayerNorm
    # gains near 1, drawn in float64 and rounded: both dtypes start from the same values.
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.3
            p.copy_((noise + (1.0 if ".ln_" in name or name.startswith("ln_f") else 0.0)
                     * name.endswith(".weight")).to(dtype))
    tokens = torch.randint(0, 11, (2, 5), generator=gen)
    targets = torch.randint(0, 11, (2, 5), generator=gen)
    inputs = dict(model.state_dict())
    inputs["tokens"], inputs["targets"] = tokens, targets
    ref.save_safetensors(tmp_path / "in.safetensors", inputs)

    subprocess.run([str(program()), str(tmp_path / "in.safetensors"),
                    str(tmp_path / "out.safetensors")], check=True)
    ours = ref.load_safetensors(tmp_path / "out.safetensors")

    loss, grads = ref.loss_and_gradients(model, tokens, targets)
    assert abs(ours["loss"].item() - loss) <= bound * abs(loss)
    worst = 0.0
    for name, g in grads.items():
        scale = g.abs().max().item()
        error = (ours["grad." + name].double() - g.double()).abs().max().item()
        worst = max(worst, error / max(scale, 1e-300))
        assert error <= bound * max(scale, 1e-300), (name, error, scale)
    print(f"{dtype}: loss {loss:.15f}, worst relative gradient error {worst:.1e} over "
          f"{len(grads)} tensors")
