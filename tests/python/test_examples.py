"""The Python example of docs/python.md runs, and its model learns."""

import pathlib
import re
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "python" / "tiny_lm.py"


def test_tiny_lm_trains_and_agrees_with_pytorch():
    output = subprocess.run([sys.executable, str(EXAMPLE)], check=True, capture_output=True,
                            text=True).stdout
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", output)]
    assert losses[-1] < 0.5 * losses[0], output
    ours, theirs = map(float, re.search(r"tessel (\S+), \S+ (\S+)", output).groups())
    assert abs(ours - theirs) < 1e-5, output
