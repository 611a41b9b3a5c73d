"""tessel.plan.flce: flce::make_host_plan as a plain Python object."""

import tessel


def test_llama_3_8b_head_at_16k_tokens():
    # docs/flce.md: on the host 128 chunks of 128 rows (static_assert'ed in the C++ quickstart).
    plan = tessel.plan.flce(16384, 4096, 128256)
    assert (plan.chunk_size, plan.num_chunks) == (128, 128)
    assert (plan.bt, plan.hidden, plan.vocab) == (16384, 4096, 128256)
    # The chunk's f32 logits are most of the scratch, and within the 64 MiB host budget.
    assert 128 * 128256 * 4 <= plan.scratch_bytes <= 64 * 2**20 + 2**20


def test_scratch_depends_on_the_storage_dtype():
    f32 = tessel.plan.flce(512, 128, 256)
    assert tessel.plan.flce(512, 128, 256, "float64").scratch_bytes > f32.scratch_bytes
    # bf16 on the host widens the weight and input chunks to f32 in scratch.
    assert tessel.plan.flce(512, 128, 256, "bf16").scratch_bytes > f32.scratch_bytes


def test_no_rows():
    plan = tessel.plan.flce(0, 4, 8)
    assert plan.num_chunks == 0
