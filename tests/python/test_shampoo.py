"""tessel.torch.Shampoo: steps against an independent NumPy float64 Shampoo, parameter groups,
the state dict's round trip, memory, and every error as a ValueError with a sentence."""

import io
import math
import os
import pathlib
import subprocess
import warnings

import numpy as np
import pytest
import torch

import tessel
import tessel.torch


def inverse_root(factor, root, epsilon):
    """(F + epsilon I)^(-1/root) by eigh, with Distributed Shampoo's perturbation: a spectrum whose
    smallest eigenvalue is below epsilon is shifted so that it becomes epsilon."""
    lam, q = np.linalg.eigh(factor + epsilon * np.eye(len(factor)))
    if lam.min() < epsilon:
        lam = lam - lam.min() + epsilon
    return (q * lam ** (-1.0 / root)) @ q.T


def reference_shampoo(w, grads, *, lr=0.1, beta1=0.9, epsilon=1e-12, grafting="none",
                      grafting_epsilon=1e-10, momentum=0.0, use_nesterov=False, weight_decay=0.0,
                      weight_decay_type="decoupled"):
    """Distributed Shampoo's step written out for one block (the whole parameter, every mode
    preconditioned): beta2 1, bias correction, roots every step."""
    w = w.astype(np.float64)
    factors = [np.zeros((d, d)) for d in w.shape]
    filtered, accumulator, buffer = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        if weight_decay_type == "l2":
            g = g + weight_decay * w
        for k, d in enumerate(w.shape):
            rows = np.moveaxis(g, k, 0).reshape(d, -1)
            factors[k] += rows @ rows.T
        accumulator += g * g
        filtered = beta1 * filtered + (1 - beta1) * g
        x = filtered / (1 - beta1 ** t)
        p = x
        for factor in factors:  # each contraction moves the contracted mode to the end
            p = np.tensordot(p, inverse_root(factor, 2 * w.ndim, epsilon), axes=([0], [0]))
        if grafting != "none":
            direction = x if grafting == "sgd" else x / (np.sqrt(accumulator) + grafting_epsilon)
            p = p * np.linalg.norm(direction) / (np.linalg.norm(p) + 1e-16)
        if weight_decay_type == "decoupled":
            p = p + weight_decay * w
        if momentum:
            buffer = momentum * buffer + p
            p = p + momentum * buffer if use_nesterov else buffer
        w = w - lr * p
    return w


def run_tessel(w, grads, dtype=torch.float64, **options):
    param = torch.nn.Parameter(torch.tensor(w, dtype=dtype))
    # Factors in float64 too (Distributed Shampoo's default, and tessel's, is float32).
    optimizer = tessel.torch.Shampoo([param], factor_matrix_dtype=torch.float64, **options)
    for g in grads:
        param.grad = torch.tensor(g, dtype=dtype)
        optimizer.step()
    return param.detach().numpy()


def problem(shape, steps=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), [rng.standard_normal(shape) for _ in range(steps)]


# A (4, 3) weight kept 2-D (exponents 1/4, Shampoo proper) and a 1-D block (full-matrix AdaGrad,
# exponent 1/2): the (2, 3) weight merged to (6) by the default target dimensionality 1.
SHAPES = {"matrix": ((4, 3), dict(target_parameter_dimensionality=2)),
          "merged_vector": ((2, 3), {})}
CASES = {
    "plain": {},
    "adagrad_grafting": dict(grafting="adagrad"),
    "sgd_grafting_momentum": dict(grafting="sgd", momentum=0.5),
    "nesterov_decoupled_decay": dict(momentum=0.9, use_nesterov=True, weight_decay=0.01,
                                     grafting="adagrad"),
    "l2_decay_beta1_0": dict(weight_decay=0.05, weight_decay_type="l2", beta1=0.0),
}


@pytest.mark.parametrize("shape_case", list(SHAPES))
@pytest.mark.parametrize("case", list(CASES))
def test_steps_match_a_numpy_float64_shampoo(shape_case, case):
    shape, plan_options = SHAPES[shape_case]
    w, grads = problem(shape)
    # Three gradients leave the factors rank-deficient; epsilon 1e-6 (not 1e-12) keeps their
    # null space from amplifying two eigensolvers' rounding differences beyond 1e-9.
    options = dict(CASES[case], lr=0.1, epsilon=1e-6)
    beta1 = options.pop("beta1", 0.9)
    ours = run_tessel(w, grads, betas=(beta1, 1.0), **options, **plan_options)
    block = tessel.plan.shampoo([shape], **plan_options).params[0].merged_shape
    theirs = reference_shampoo(w.reshape(block), [g.reshape(block) for g in grads], beta1=beta1,
                               **options).reshape(shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11)


def test_float32_steps_follow_the_float64_ones():
    # Kept 2-D, the factors are full rank after two steps (a merged (20) block's would not be,
    # and its null space would magnify float32's rounding).
    w, grads = problem((5, 4))
    options = dict(grafting="adam", momentum=0.5, target_parameter_dimensionality=2,
                   epsilon=1e-6)
    f64 = run_tessel(w, grads, **options)
    f32 = run_tessel(w, grads, dtype=torch.float32, **options)
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, f64, rtol=1e-4, atol=1e-5)


def test_blocks_of_a_split_parameter_are_preconditioned_apart():
    # (6, 4) with max_preconditioner_dim 4: blocks (4, 4) and (2, 4), each stepped as a
    # parameter of its own.
    w, grads = problem((6, 4))
    ours = run_tessel(w, grads, max_preconditioner_dim=4, target_parameter_dimensionality=2,
                      grafting="adagrad", epsilon=1e-6)
    halves = [reference_shampoo(w[r:r + 4], [g[r:r + 4] for g in grads], grafting="adagrad",
                                lr=0.01, epsilon=1e-6) for r in (0, 4)]
    np.testing.assert_allclose(ours, np.concatenate(halves), rtol=1e-9, atol=1e-11)


def model_and_grads(dtype=torch.float32, steps=5, seed=1):
    rng = np.random.default_rng(seed)
    shapes = [(5, 3), (4,), (2, 3, 2)]
    params = [torch.nn.Parameter(torch.tensor(rng.standard_normal(s), dtype=dtype))
              for s in shapes]
    grads = [[torch.tensor(rng.standard_normal(s), dtype=dtype) for s in shapes]
             for _ in range(steps)]
    return params, grads


def take_steps(optimizer, params, grads):
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        optimizer.step()


ROUND_TRIP_OPTIONS = dict(lr=0.05, grafting="adam", momentum=0.9, use_nesterov=True,
                          weight_decay=1e-3, max_preconditioner_dim=4, precondition_frequency=2,
                          factor_matrix_dtype=torch.bfloat16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_saved_state_resumes_bit_for_bit(dtype):
    params, grads = model_and_grads(dtype)
    uninterrupted = tessel.torch.Shampoo(params, **ROUND_TRIP_OPTIONS)
    take_steps(uninterrupted, params, grads[:3])
    saved_params = [p.detach().clone() for p in params]
    buffer = io.BytesIO()
    torch.save(uninterrupted.state_dict(), buffer)
    take_steps(uninterrupted, params, grads[3:])

    resumed_params = [torch.nn.Parameter(p) for p in saved_params]
    resumed = tessel.torch.Shampoo(resumed_params, **ROUND_TRIP_OPTIONS)
    buffer.seek(0)
    resumed.load_state_dict(torch.load(buffer))
    take_steps(resumed, resumed_params, grads[3:])
    for a, b in zip(params, resumed_params):
        assert torch.equal(a, b)
    assert resumed.state_dict()["state"][0]["step"].item() == 5


def test_state_dict_is_keyed_like_distributed_shampoo():
    params, grads = model_and_grads()
    optimizer = tessel.torch.Shampoo(params, grafting="adagrad", max_preconditioner_dim=4)
    take_steps(optimizer, params, grads[:1])
    state = optimizer.state_dict()
    assert sorted(state["state"]) == [0, 1, 2]
    # (5, 3) stays (5, 3) (15 > 4): blocks (4, 3) and (1, 3), one factor per mode.
    keys = state["state"][0]
    assert sorted(keys) == ["block_0", "block_1", "step"]
    assert sorted(keys["block_1"]) == ["adagrad", "filtered_grad", "shampoo"]
    assert "0" in keys["block_0"]["shampoo"]["factor_matrices"]
    assert "1" in keys["block_1"]["shampoo"]["inv_factor_matrices"]
    assert keys["block_1"]["shampoo"]["factor_matrices"]["0"].shape == (1, 1)
    assert keys["block_1"]["shampoo"]["factor_matrices"]["1"].shape == (3, 3)
    assert keys["step"].dtype == torch.int64 and keys["step"].item() == 1
    assert state["param_groups"][0]["params"] == [0, 1, 2]
    assert state["param_groups"][0]["grafting"] == "adagrad"


def test_parameters_are_updated_in_place_without_a_copy():
    params, grads = model_and_grads()
    pointers = [p.data_ptr() for p in params]
    views = [p.detach().numpy() for p in params]  # the same memory, seen by NumPy
    before = [v.copy() for v in views]
    optimizer = tessel.torch.Shampoo(params, lr=0.1)
    take_steps(optimizer, params, grads[:1])
    assert [p.data_ptr() for p in params] == pointers
    for view, old, p in zip(views, before, params):
        assert not np.array_equal(view, old)
        np.testing.assert_array_equal(view, p.detach().numpy())


def test_parameter_groups_step_as_separate_optimizers():
    params, grads = model_and_grads(torch.float64)
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    grouped = tessel.torch.Shampoo([{"params": params[:2], "grafting": "adagrad"},
                                    {"params": params[2:], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    apart = [tessel.torch.Shampoo(copies[:2], lr=0.1, grafting="adagrad"),
             tessel.torch.Shampoo(copies[2:], lr=0.5, momentum=0.9)]
    take_steps(grouped, params, grads)
    for step_grads in grads:
        for p, g in zip(copies, step_grads):
            p.grad = g.clone()
        for optimizer in apart:
            optimizer.step()
    for a, b in zip(params, copies):
        assert torch.equal(a, b)


def test_lr_follows_the_param_group_between_steps():
    params, grads = model_and_grads()
    optimizer = tessel.torch.Shampoo(params)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.0 if step else 1.0)
    take_steps(optimizer, params, grads[:1])
    scheduler.step()  # lr 0 from now on
    frozen = [p.detach().clone() for p in params]
    take_steps(optimizer, params, grads[1:2])
    for a, b in zip(frozen, params):
        assert torch.equal(a, b)


def test_a_closure_is_called_and_its_loss_returned():
    w = torch.nn.Parameter(torch.ones(3))
    optimizer = tessel.torch.Shampoo([w], lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert optimizer.step(closure).item() == 3.0
    assert (w < 1).all()


def flat_entries(state, index):
    """Parameter `index`'s tensors in a state_dict()["state"], but its step."""
    out = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(prefix + (k,), v)
        elif prefix != ("step",):
            out[prefix] = value
    walk((), state[index])
    return out


def test_a_step_without_any_gradient_only_counts():
    # As Distributed Shampoo: the step count advances (bias correction, precondition_frequency),
    # nothing else changes.
    params, grads = model_and_grads()
    optimizer = tessel.torch.Shampoo(params, **ROUND_TRIP_OPTIONS)
    take_steps(optimizer, params, grads[:1])
    before = [p.detach().clone() for p in params]
    state = optimizer.state_dict()["state"]
    for p in params:
        p.grad = None
    optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(before, params))
    after = optimizer.state_dict()["state"]
    assert after[0]["step"].item() == 2
    for i in state:
        entries, now = flat_entries(state, i), flat_entries(after, i)
        assert entries.keys() == now.keys() and len(entries) > 0
        assert all(torch.equal(entries[k], now[k]) for k in entries)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_parameter_without_a_gradient_is_skipped(dtype):
    # Parameter 1 has no gradient at steps 2 and 3 (roots are computed at step 2): its value and
    # state stay; the others step exactly as an optimizer without it.
    params, grads = model_and_grads(dtype)
    others = [torch.nn.Parameter(params[i].detach().clone()) for i in (0, 2)]
    optimizer = tessel.torch.Shampoo(params, **ROUND_TRIP_OPTIONS)
    reference = tessel.torch.Shampoo(others, **ROUND_TRIP_OPTIONS)
    for t, step_grads in enumerate(grads):
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        if t in (1, 2):
            params[1].grad = None
        before = params[1].detach().clone()
        state = flat_entries(optimizer.state_dict()["state"], 1)
        optimizer.step()
        if t in (1, 2):
            assert torch.equal(params[1], before)
            after = flat_entries(optimizer.state_dict()["state"], 1)
            assert state.keys() == after.keys() and len(state) > 0
            assert all(torch.equal(state[k], after[k]) for k in state)
        else:
            assert not torch.equal(params[1], before)
        for p, i in zip(others, (0, 2)):
            p.grad = step_grads[i].clone()
        reference.step()
    assert torch.equal(params[0], others[0]) and torch.equal(params[2], others[1])
    assert optimizer.state_dict()["state"][1]["step"].item() == 5


# ---- errors ----

def shampoo(*params, **options):
    return tessel.torch.Shampoo(list(params), **options)


@pytest.mark.parametrize("options, message", [
    (dict(betas=(1.0, 1.0)), r"beta1 must be in \[0, 1\), got 1\."),
    (dict(betas=(0.9, 1.5)), r"beta2 must be in \[0, 1\], got 1\.5\."),
    (dict(betas=(0.9,)), r"betas must be a pair \(beta1, beta2\), got \(0\.9,\)\."),
    (dict(epsilon=-1.0), r"epsilon"),
    (dict(lr=-0.1), r"lr"),
    (dict(momentum=1.5), r"momentum"),
    (dict(precondition_frequency=0), r"precondition_frequency"),
    (dict(grafting="adamw"), r'unknown grafting "adamw"; valid values are none, sgd, adagrad, '
                             r'rmsprop and adam\.'),
    (dict(weight_decay_type="L3"), r'unknown weight_decay_type "L3"; valid values are '
                                   r'decoupled, l2, corrected and independent\.'),
    (dict(preconditioner="muon"), r'unknown preconditioner "muon"; valid values are shampoo, '
                                  r'eigendecomposed, eigenvalue_corrected, spectral_descent and '
                                  r'sign_descent\.'),
    (dict(factor_matrix_dtype="complex64"), r'unknown dtype "complex64"'),
    (dict(factor_matrix_dtype=torch.int32), r"factor"),
    (dict(max_preconditioner_dim=2.5), r"a dimension limit is an integer or math\.inf, got 2\.5"),
    (dict(max_preconditioner_dim=0), r"max_preconditioner_dim"),
    (dict(preconditioner="spectral_descent"), r"2-D"),
])
def test_bad_options_raise_value_error(options, message):
    with pytest.raises(ValueError, match=message):
        shampoo(torch.nn.Parameter(torch.zeros(3)), **options)


def test_an_option_switched_off_by_another_is_a_warning():
    with pytest.warns(UserWarning, match=r"use_nesterov has no effect with momentum 0\."):
        shampoo(torch.nn.Parameter(torch.zeros(3)), use_nesterov=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match=r"use_nesterov"):
            shampoo(torch.nn.Parameter(torch.zeros(3)), use_nesterov=True)


def test_bad_parameters_raise_value_error():
    with pytest.raises(ValueError, match=r"parameter 0 has dtype torch\.float16; tessel's "
                                         r"Shampoo steps float32 and float64 parameters\."):
        shampoo(torch.nn.Parameter(torch.zeros(3, dtype=torch.float16)))
    with pytest.raises(ValueError, match=r"parameter 1 has dtype torch\.float64 but parameter 0 "
                                         r"has torch\.float32; one tessel Shampoo steps one "
                                         r"dtype"):
        shampoo(torch.nn.Parameter(torch.zeros(3)),
                torch.nn.Parameter(torch.zeros(3, dtype=torch.float64)))
    transposed = torch.nn.Parameter(torch.zeros(4, 3).t())
    optimizer = shampoo(transposed)
    transposed.grad = torch.zeros(4, 3).t()
    with pytest.raises(ValueError, match=r"parameter 0 is not contiguous \(shape \(3,4\), "
                                         r"strides \(1,3\)\); tessel's Shampoo reads and writes "
                                         r"row-major memory in place\."):
        optimizer.step()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_parameters_are_refused_not_copied():
    with pytest.raises(ValueError, match=r"parameter 0 lives on cuda:0; tessel.torch.Shampoo "
                                         r"steps CPU parameters \(the device step is C\+\+ only "
                                         r"for now\)\."):
        shampoo(torch.nn.Parameter(torch.zeros(3, device="cuda")))


def test_iterate_averaging_needs_every_gradient_on_the_first_step():
    params, grads = model_and_grads()
    optimizer = tessel.torch.Shampoo(params, iterate_averaging="generalized_primal")
    params[0].grad = grads[0][0]
    params[2].grad = grads[0][2]
    before = [p.detach().clone() for p in params]
    with pytest.raises(ValueError, match=r"with iterate averaging the first step needs the "
                                         r"gradient of every parameter \(it starts each block's "
                                         r"sequence z at the parameter's values\), but parameter "
                                         r"1 has none\."):
        optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(before, params))
    params[1].grad = grads[0][1]
    optimizer.step()
    params[1].grad = None
    optimizer.step()  # later steps may skip
    assert optimizer.state_dict()["state"][0]["step"].item() == 2


def test_gradients_tessel_refuses():
    w = torch.nn.Parameter(torch.zeros(3))
    optimizer = shampoo(w)
    w.grad = torch.tensor([0.0, math.nan, 1.0])
    with pytest.raises(ValueError, match=r"the gradient of parameter 0 has the value nan at "
                                         r"element 1; gradients must be finite\."):
        optimizer.step()
    w.grad = torch.zeros(3).to_sparse()
    with pytest.raises(ValueError, match=r"the gradient of parameter 0 is torch\.sparse_coo"):
        optimizer.step()


def test_the_binding_checks_what_torch_cannot():
    # torch itself refuses a .grad of another shape or dtype; the extension's own checks.
    optimizer = tessel.torch.Shampoo([torch.nn.Parameter(torch.zeros(2, 3))])
    native = optimizer._tessel
    w = np.zeros((2, 3), np.float32)
    for grad, message in [
        (np.zeros((3, 2), np.float32),
         r"the gradient of parameter 0 has shape \(3,2\) but the parameter has shape \(2,3\)\."),
        (np.zeros((2, 3), np.float64),
         r"the gradient of parameter 0 has dtype f64 but the optimizer steps f32 parameters"),
        (np.zeros((2, 6), np.float32)[:, ::2], r"the gradient of parameter 0 is not contiguous"),
    ]:
        with pytest.raises(ValueError, match=message):
            native.step([w], [grad])
    with pytest.raises(ValueError, match=r"step got 2 parameters and 1 gradients but the "
                                         r"optimizer has 1 parameters\."):
        native.step([w, w], [w])


def test_groups_cannot_be_added_after_construction():
    optimizer = shampoo(torch.nn.Parameter(torch.zeros(3)))
    with pytest.raises(ValueError, match=r"parameter groups cannot be added afterwards"):
        optimizer.add_param_group({"params": [torch.nn.Parameter(torch.zeros(2))]})


def test_bad_states_are_refused_and_change_nothing():
    params, grads = model_and_grads()
    optimizer = tessel.torch.Shampoo(params, grafting="adagrad")
    take_steps(optimizer, params, grads[:2])
    good = optimizer.state_dict()
    other = tessel.torch.Shampoo(params, grafting="adam")
    with pytest.raises(ValueError, match=r"parameter group 0 of the state has grafting='adagrad' "
                                         r"but the optimizer was built with grafting='adam'; "
                                         r"only lr may differ\."):
        other.load_state_dict(good)

    def changed(edit):
        state = optimizer.state_dict()
        edit(state["state"])
        return state

    fresh = tessel.torch.Shampoo(params, grafting="adagrad")
    cases = [
        (lambda s: s[0]["block_0"].pop("adagrad"), r'\["0","block_0","adagrad"\]'),
        (lambda s: s[1]["block_0"].update({"adagrad": torch.zeros(5)}), r"shape"),
        (lambda s: s[1]["block_0"].update({"adagrad": [1.0, 2.0]}),
         r"block_0/adagrad of parameter 1 is not a tensor"),
        (lambda s: s[1].update({"step": torch.tensor(7)}), r"step"),
    ]
    for edit, message in cases:
        with pytest.raises(ValueError, match=message):
            fresh.load_state_dict(changed(edit))
    assert fresh.state_dict()["state"][0]["step"].item() == 0


# ---- plans ----

@pytest.mark.parametrize("shape, threshold, target, merged", [
    ((1, 2, 5, 1), 10, 1, (10,)),  # Distributed Shampoo's docstring examples
    ((1, 2, 5, 1), 1, 1, (2, 5)),
    ((32, 3, 64, 64), 8192, 1, (96, 4096)),
    ((32, 3, 64, 64), 1_000_000, 2, (32, 12288)),
    ((32, 3, 64, 64), 1024, 2, (32, 192, 64)),  # api-contract.md's CLI example
    ((4, 0, 3), 10, 1, (0,)),
    ((), 10, 1, (1,)),
    ((1, 1), 10, 1, (1,)),
    ((3, 1, 4), 2, math.inf, (3, 1, 4)),
])
def test_merge_small_dims(shape, threshold, target, merged):
    assert tessel.merge_small_dims(shape, threshold, target) == merged


def test_multi_dim_split():
    blocks = tessel.multi_dim_split((5, 3), 2)
    assert [b.offset for b in blocks] == [(0, 0), (0, 2), (2, 0), (2, 2), (4, 0), (4, 2)]
    assert [b.shape for b in blocks] == [(2, 2), (2, 1), (2, 2), (2, 1), (1, 2), (1, 1)]
    assert tessel.multi_dim_split((5, 2), 3) == [((0, 0), (3, 2)), ((3, 0), (2, 2))]
    assert tessel.multi_dim_split((5, 3), 5) == [((0, 0), (5, 3))]
    assert tessel.multi_dim_split((5, 3), math.inf) == [((0, 0), (5, 3))]


def test_shampoo_plan_of_the_docs_examples():
    plan = tessel.plan.shampoo([(32, 3, 64, 64), (1, 5)], max_preconditioner_dim=8192)
    conv, row = plan.params
    assert (conv.shape, conv.merged_shape) == ((32, 3, 64, 64), (96, 4096))
    (block,) = conv.blocks
    assert (block.index, block.offset, block.shape, block.bytes) == (0, (0, 0), (96, 4096), 1572864)
    assert block.factor_shapes == ((96, 96), (4096, 4096))
    assert row.merged_shape == (5,) and row.blocks[0].bytes == 20
    assert plan.rank_bytes == (1572864 + 64,) and plan.num_blocks == 2

    # examples/shampoo_mlp: blocks of at most 24 per mode, two ranks.
    plan = tessel.plan.shampoo([(32, 17), (4, 33)], 24, 2, group_size=2)
    assert [(b.offset, b.shape) for p in plan.params for b in p.blocks] == [
        ((0, 0), (24, 17)), ((24, 0), (8, 17)), ((0, 0), (4, 24)), ((0, 24), (4, 9))]
    assert [b.rank for p in plan.params for b in p.blocks] == [0, 1, 1, 1]
    assert plan.num_groups == 4
    assert tessel.plan.shampoo([(16, 8)]).params[0].blocks[0].shape == (128,)


@pytest.mark.parametrize("call, message", [
    (lambda: tessel.multi_dim_split((5, 3), 0),
     r"multi_dim_split needs a split size > 0, got 0 for shape \(5,3\)\."),
    (lambda: tessel.merge_small_dims((2, -1), 10), r"shape \(2,-1\)"),
    (lambda: tessel.merge_small_dims((2,) * 9, 10), r"shape \(2,2,2,2,2,2,2,2,2\) has 9 "
                                                    r"dimensions; tessel takes at most 8\."),
    (lambda: tessel.merge_small_dims((2, 3), 10, 0),
     r"target_dims must be >= 1 or math\.inf, got 0\."),
    (lambda: tessel.plan.shampoo([(2, 3)], 0), r"max_preconditioner_dim"),
    (lambda: tessel.plan.shampoo([(2, 3)], group_size=0), r"group"),
    (lambda: tessel.plan.shampoo([(2, 3)], dtype="complex"), r'unknown dtype "complex"'),
])
def test_bad_plan_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()



def test_an_option_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"the option lr cannot be 'fast'\."):
        shampoo(torch.nn.Parameter(torch.zeros(3)), lr="fast")


@pytest.mark.parametrize("grafting", ["rmsprop", "adam"])
def test_grafting_beta2_defaults_to_the_methods_and_can_be_set(grafting):
    w, grads = problem((3, 2))
    default = run_tessel(w, grads, grafting=grafting)
    named = run_tessel(w, grads, grafting=grafting,
                       grafting_beta2={"rmsprop": 0.99, "adam": 0.999}[grafting])
    other = run_tessel(w, grads, grafting=grafting, grafting_beta2=0.5)
    np.testing.assert_array_equal(default, named)
    assert not np.array_equal(default, other)


# ---- against the C++ command-line tool, where one is built (not in tools/python-test) ----

def tessel_cli():
    root = pathlib.Path(__file__).parents[2]
    for candidate in (os.environ.get("TESSEL_CLI"), root / "build/default/bin/tessel"):
        if candidate and pathlib.Path(candidate).is_file():
            return str(candidate)
    return None


# The preconditioner configs' settings, each as tessel.torch.Shampoo keywords and as the CLI's
# flags (docs/shampoo.md maps both to Distributed Shampoo's names).
CONFIG_SETTINGS = [
    ({}, []),
    (dict(preconditioner="eigenvalue_corrected", ignored_basis_change_dims={2: [0], 1: [0]},
          target_parameter_dimensionality=2),
     ["--preconditioner", "eigenvalue-corrected", "--ignored-basis-change-dims", "2=0",
      "--ignored-basis-change-dims", "1=0", "--target-dims", "2"]),
    (dict(inverse_exponent_override={2: {1: 0.0}, 1: 0.25}, target_parameter_dimensionality=2,
          use_trace_scaling=True, trace_scaling_exponent=0.75),
     ["--inverse-exponent-override", "2:1=0", "--inverse-exponent-override", "1=0.25",
      "--target-dims", "2", "--use-trace-scaling", "--trace-scaling-exponent", "0.75"]),
    # epsilon 1e-4: the 1-D block's factor is rank-deficient for its first steps, and eigenvalue
    # correction would divide the two builds' different rounding in its null space by itself.
    (dict(preconditioner="eigenvalue_corrected", eigendecomposition="qr", qr_max_iterations=2,
          eigendecomposition_tolerance=0.01, epsilon=1e-4),
     ["--preconditioner", "eigenvalue-corrected", "--eigendecomposition", "qr",
      "--qr-max-iterations", "2", "--eigendecomposition-tolerance", "0.01", "--epsilon", "1e-4"]),
    (dict(kl_shampoo=True, drop_weighting_factor_on_gsquare=True, betas=(0.9, 0.95)),
     ["--kl-shampoo", "--drop-weighting-factor-on-gsquare", "--beta2", "0.95"]),
    # Eigenvalue correction's exponent per order (the corrected eigenvalues' power).
    (dict(preconditioner="eigenvalue_corrected", inverse_exponent_override={2: 0.25, 1: 0.4},
          epsilon=1e-4),
     ["--preconditioner", "eigenvalue-corrected", "--inverse-exponent-override", "2=0.25",
      "--inverse-exponent-override", "1=0.4", "--epsilon", "1e-4"]),
]


# The root settings (amortized_computation_config) and the rest, checked against the CLI only:
# several change nothing measurable on these steps (a retry or a tolerated failure happens only
# when a computation fails).
# epsilon 1e-4 for coupled Newton and for perturbation after the decomposition: the 1-D block's
# rank-deficient factor would otherwise divide the two builds' rounding in its null space by about
# 1e-12.
CLI_SETTINGS = [
    # Symmetric packing changes the roots by rounding only (made symmetric from their upper
    # triangles), so it is not among the settings that must change the step.
    (dict(use_symmetric_packing=True), ["--use-symmetric-packing"]),
    # Filtering in the eigenbasis changes the step by rounding only (docs/shampoo.md).
    # (Step 2 refreshes the eigenvectors, step 3 filters in the eigenbasis.)
    (dict(preconditioner="eigenvalue_corrected", keep_rotated_filtered_grad=True, epsilon=1e-4),
     ["--preconditioner", "eigenvalue-corrected", "--keep-rotated-filtered-grad",
      "--epsilon", "1e-4"]),
    (dict(root_method="coupled_newton", coupled_newton_max_iterations=40,
          coupled_newton_tolerance=1e-9, epsilon=1e-4),
     ["--root-method", "coupled-newton", "--coupled-newton-max-iterations", "40",
      "--coupled-newton-tolerance", "1e-9", "--epsilon", "1e-4"]),
    (dict(retry_double_precision=False, perturb_before_computation=False, epsilon=1e-4),
     ["--retry-double-precision", "false", "--perturb-before-computation", "false",
      "--epsilon", "1e-4"]),
    (dict(pseudo_inverse=True, epsilon=0.0, rank_atol=1e-8, rank_rtol=1e-6),
     ["--pseudo-inverse", "--epsilon", "0", "--rank-atol", "1e-8", "--rank-rtol", "1e-6"]),
    (dict(grafting_drop_weighting_factor_on_gsquare=True,
          num_tolerated_failed_amortized_computations=1),
     ["--grafting-drop-weighting-factor-on-gsquare",
      "--num-tolerated-failed-amortized-computations", "1"]),
]

# Options that tessel.torch.Shampoo takes as keywords and `tessel shampoo run` as flags.
BASE_OPTIONS = (dict(lr=0.05, grafting="adam", weight_decay=1e-3, max_preconditioner_dim=4,
                     precondition_frequency=2, factor_matrix_dtype=torch.float64),
                ["--lr", "0.05", "--grafting", "adam", "--weight-decay", "1e-3",
                 "--max-preconditioner-dim", "4", "--precondition-frequency", "2",
                 "--factor-dtype", "f64"])
MOMENTUM = (dict(momentum=0.9, use_nesterov=True), ["--momentum", "0.9", "--nesterov"])

needs_cli = pytest.mark.skipif(
    tessel_cli() is None, reason="no tessel CLI (set TESSEL_CLI or build build/default/bin/tessel)")


def cli_steps(tmp_path, start, grads, flags):
    """The parameters `tessel shampoo run` with `flags` gives from `start` through `grads`."""
    command = [tessel_cli(), "shampoo", "run", *flags]
    for i, w in enumerate(start):
        np.save(tmp_path / f"w{i}.npy", w)
        np.save(tmp_path / f"g{i}.npy", np.stack([step[i].numpy() for step in grads]))
        command += ["--param", str(tmp_path / f"w{i}.npy"), "--grads",
                    str(tmp_path / f"g{i}.npy"), "--out", str(tmp_path / f"o{i}.npy")]
    subprocess.run(command, check=True, capture_output=True)
    return [np.load(tmp_path / f"o{i}.npy") for i in range(len(start))]


def assert_steps_match_the_cli(tmp_path, params, grads, options, flags):
    """tessel.torch.Shampoo(params, **options) through `grads` against `tessel shampoo run`."""
    start = [p.detach().numpy().copy() for p in params]
    take_steps(tessel.torch.Shampoo(params, **options), params, grads)
    for p, out in zip(params, cli_steps(tmp_path, start, grads, flags)):
        # The same C++ step, compiled with other flags (-march=native here): rounding apart.
        np.testing.assert_allclose(p.detach().numpy(), out, rtol=1e-12, atol=1e-14)


@needs_cli
@pytest.mark.parametrize("settings,flags", CONFIG_SETTINGS + CLI_SETTINGS)
def test_steps_match_the_tessel_shampoo_run_cli(tmp_path, settings, flags):
    params, grads = model_and_grads(torch.float64, steps=3)
    assert_steps_match_the_cli(tmp_path, params, grads,
                               {**BASE_OPTIONS[0], **MOMENTUM[0], **settings},
                               [*BASE_OPTIONS[1], *MOMENTUM[1], *flags])


@needs_cli
@pytest.mark.parametrize("settings,flags", [
    (dict(iterate_averaging="generalized_primal", eval_interp_coeff=0.7, train_interp_coeff=0.6),
     ["--iterate-averaging", "generalized-primal", "--eval-interp-coeff", "0.7",
      "--train-interp-coeff", "0.6"]),
    (dict(iterate_averaging="schedule_free", train_interp_coeff=0.9, eval_coeff_lr_power=3),
     ["--iterate-averaging", "schedule-free", "--train-interp-coeff", "0.9",
      "--eval-coeff-lr-power", "3"]),
])
def test_iterate_averaging_matches_the_cli(tmp_path, settings, flags):
    # The parameters in train mode are the CLI's output, the training sequence.
    params, grads = model_and_grads(torch.float64, steps=4)
    assert_steps_match_the_cli(tmp_path, params, grads, {**BASE_OPTIONS[0], **settings},
                               [*BASE_OPTIONS[1], *flags])


@needs_cli
def test_newton_schulz_settings_match_the_cli(tmp_path):
    rng = np.random.default_rng(3)
    shapes = [(5, 3), (4, 6)]
    params = [torch.nn.Parameter(torch.tensor(rng.standard_normal(s))) for s in shapes]
    grads = [[torch.tensor(rng.standard_normal(s)) for s in shapes] for _ in range(3)]
    assert_steps_match_the_cli(
        tmp_path, params, grads,
        dict(lr=0.05, momentum=0.9, weight_decay=1e-3, preconditioner="spectral_descent",
             target_parameter_dimensionality=2, newton_schulz_num_iterations=3,
             newton_schulz_coefficients=(3.0, -3.2, 1.2)),
        ["--lr", "0.05", "--momentum", "0.9", "--weight-decay", "1e-3", "--preconditioner",
         "spectral-descent", "--target-dims", "2", "--newton-schulz-iterations", "3",
         "--newton-schulz-coefficients", "3,-3.2,1.2"])


@pytest.mark.parametrize("settings,flags", CONFIG_SETTINGS[1:])
def test_each_config_setting_changes_the_step(settings, flags):
    del flags
    results = []
    for options in ({}, settings):
        params, grads = model_and_grads(torch.float64, steps=3)
        optimizer = tessel.torch.Shampoo(params, lr=0.05, max_preconditioner_dim=4,
                                         factor_matrix_dtype=torch.float64, **options)
        take_steps(optimizer, params, grads)
        results.append(torch.cat([p.detach().reshape(-1) for p in params]))
    assert (results[0] - results[1]).abs().max() > 1e-6


def test_svd_orthogonalization_is_u_v_transposed():
    # Spectral descent with orthogonalization="svd" (SVDOrthogonalizationConfig), beta1 0: one
    # step moves w by lr U V^T of the gradient, and with svd_scale_by_nuclear_norm by lr sum(S)
    # U V^T (NumPy's SVD, independent of tessel's Gram-matrix route).
    rng = np.random.default_rng(5)
    g = rng.standard_normal((6, 4))
    u, s, vt = np.linalg.svd(g, full_matrices=False)
    for nuclear in (False, True):
        w = torch.nn.Parameter(torch.zeros(6, 4, dtype=torch.float64))
        optimizer = tessel.torch.Shampoo([w], lr=0.1, betas=(0.0, 1.0),
                                         preconditioner="spectral_descent",
                                         target_parameter_dimensionality=2,
                                         orthogonalization="svd",
                                         svd_scale_by_nuclear_norm=nuclear)
        w.grad = torch.tensor(g)
        optimizer.step()
        want = -0.1 * (s.sum() if nuclear else 1.0) * (u @ vt)
        np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-10, atol=1e-12)


def test_config_settings_are_checked():
    w = torch.nn.Parameter(torch.zeros(4, 3))
    with pytest.raises(TypeError, match=r"the option inverse_exponent_override cannot be 'a'\."):
        tessel.torch.Shampoo([w], inverse_exponent_override={2: "a"})
    with pytest.raises(ValueError, match=r"ignored_basis_change_dims\[2\] names dimension 5; "
                                         r"dimensions must be in \[0, 1\]\."):
        tessel.torch.Shampoo([w], preconditioner="eigenvalue_corrected",
                             ignored_basis_change_dims={2: [5]})
    with pytest.raises(ValueError, match=r'unknown orthogonalization "polar"'):
        tessel.torch.Shampoo([w], orthogonalization="polar")
    with pytest.warns(UserWarning, match=r"ignored_basis_change_dims has no effect with shampoo"):
        tessel.torch.Shampoo([w], ignored_basis_change_dims={2: [0]})


def spectral_step(shapes, seed=4, **options):
    """Each parameter after one spectral-descent step from 0 (beta1 0: the orthogonalized gradient
    times -lr), float64."""
    rng = np.random.default_rng(seed)
    params = [torch.nn.Parameter(torch.zeros(s, dtype=torch.float64)) for s in shapes]
    optimizer = tessel.torch.Shampoo(params, lr=0.1, betas=(0.0, 1.0),
                                     preconditioner="spectral_descent",
                                     target_parameter_dimensionality=2, **options)
    for p in params:
        p.grad = torch.tensor(rng.standard_normal(p.shape))
    optimizer.step()
    return [p.detach().numpy() for p in params]


@pytest.mark.parametrize("orthogonalization", ["newton_schulz", "svd"])
def test_scale_by_dims_fn_scales_each_block_by_its_dimensions(orthogonalization):
    # Distributed Shampoo's scale_by_dims_fn(d_in, d_out), d_in a block's columns and d_out its
    # rows (Muon's sqrt(max(1, d_out / d_in)) here), for either orthogonalization.
    def muon(d_in, d_out):
        return max(1.0, d_out / d_in) ** 0.5

    shapes = [(6, 4), (3, 5)]
    plain = spectral_step(shapes, orthogonalization=orthogonalization)
    scaled = spectral_step(shapes, orthogonalization=orthogonalization, scale_by_dims_fn=muon)
    for shape, a, b in zip(shapes, plain, scaled):
        np.testing.assert_allclose(b, muon(shape[1], shape[0]) * a, rtol=1e-14, atol=0)
    assert not np.array_equal(plain[0], scaled[0])


def test_newton_schulz_settings_reach_the_step():
    # Zero iterations leave the normalized gradient G / ||G||_F; (a, b, c) = (1, 0, 0) keeps it
    # whatever the count.
    rng = np.random.default_rng(4)
    g = rng.standard_normal((6, 4))
    want = -0.1 * g / np.linalg.norm(g)
    for options in (dict(newton_schulz_num_iterations=0),
                    dict(newton_schulz_coefficients=(1.0, 0.0, 0.0))):
        np.testing.assert_allclose(spectral_step([(6, 4)], **options)[0], want, rtol=1e-13,
                                   atol=0)


def averaging_optimizer(w, **options):
    return tessel.torch.Shampoo([w], lr=0.1, target_parameter_dimensionality=2,
                                iterate_averaging="generalized_primal", train_interp_coeff=0.6,
                                **options)


def test_eval_moves_to_the_averaged_sequence_and_train_back():
    # Distributed Shampoo's eval(): x = y + (1 - 1 / mu_y) (z - y), z the state's weight_buffer;
    # train() returns to y. Both in place; step() is refused in eval mode.
    rng = np.random.default_rng(6)
    w = torch.nn.Parameter(torch.tensor(rng.standard_normal((4, 3))))
    optimizer = averaging_optimizer(w)
    take_steps(optimizer, [w], [[torch.tensor(rng.standard_normal((4, 3)))] for _ in range(3)])
    y = w.detach().clone()
    z = optimizer.state_dict()["state"][0]["block_0"]["weight_buffer"].reshape(4, 3)
    address = w.data_ptr()
    optimizer.eval()
    torch.testing.assert_close(w.detach(), y + (1 - 1 / 0.6) * (z - y), rtol=1e-13, atol=1e-15)
    assert w.data_ptr() == address and not torch.equal(w.detach(), y)
    evaluated = w.detach().clone()
    optimizer.eval()  # already in eval mode: nothing changes
    assert torch.equal(w.detach(), evaluated)
    w.grad = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"step\(\) in eval mode: with iterate averaging the "
                                         r"parameters hold the averaged sequence"):
        optimizer.step()
    assert torch.equal(w.detach(), evaluated)
    optimizer.train()
    torch.testing.assert_close(w.detach(), y, rtol=1e-13, atol=1e-15)


def test_a_state_saved_in_eval_mode_resumes_in_eval_mode():
    rng = np.random.default_rng(7)
    w = torch.nn.Parameter(torch.tensor(rng.standard_normal((4, 3))))
    optimizer = averaging_optimizer(w)
    take_steps(optimizer, [w], [[torch.tensor(rng.standard_normal((4, 3)))] for _ in range(2)])
    optimizer.eval()
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)
    resumed_w = torch.nn.Parameter(w.detach().clone())
    resumed = averaging_optimizer(resumed_w)
    buffer.seek(0)
    resumed.load_state_dict(torch.load(buffer))
    resumed_w.grad = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"step\(\) in eval mode"):
        resumed.step()
    optimizer.train()
    resumed.train()
    assert torch.equal(w.detach(), resumed_w.detach())


def test_eval_and_train_without_averaging_change_nothing():
    w = torch.nn.Parameter(torch.ones(4, 3))
    optimizer = tessel.torch.Shampoo([w])
    w.grad = torch.ones(4, 3)
    optimizer.step()
    after = w.detach().clone()
    optimizer.eval()
    assert torch.equal(w.detach(), after)
    optimizer.step()  # not refused: there is no averaged sequence
    optimizer.train()


@pytest.mark.parametrize("options, message", [
    # The sentences name the values: each keyword reaches its field of shampoo::Options.
    (dict(coupled_newton_max_iterations=50, coupled_newton_tolerance=1e-9),
     r"coupled Newton's max_iterations 50 and tolerance 1e-09 have no effect with the eigen root "
     r"method\."),
    (dict(rank_atol=1e-8, rank_rtol=1e-6),
     r"rank_atol 1e-08 and rank_rtol 1e-06 have no effect without the pseudo-inverse\."),
    (dict(root_method="coupled_newton", perturb_before_computation=False,
          retry_double_precision=False),
     r"the eigen root settings \(pseudo_inverse false, rank_atol 0, rank_rtol 0, "
     r"perturb_before_computation false, retry_double_precision false\) have no effect with the "
     r"coupled Newton root method\."),
    (dict(preconditioner="eigenvalue_corrected", root_method="coupled_newton"),
     r"root method coupled Newton has no effect with eigenvalue-corrected Shampoo"),
    (dict(newton_schulz_num_iterations=3),
     r"the newton_schulz settings have no effect with shampoo \(spectral descent uses them\)\."),
    (dict(scale_by_dims_fn=lambda d_in, d_out: 2.0),
     r"the newton_schulz settings have no effect with shampoo"),
    (dict(preconditioner="spectral_descent", orthogonalization="svd",
          newton_schulz_coefficients=(3.0, -3.2, 1.2)),
     r"the newton_schulz settings have no effect with SVD orthogonalization"),
    (dict(iterate_averaging="schedule_free", eval_interp_coeff=0.5),
     r"eval_interp_coeff 0\.5 has no effect with iterate averaging schedule-free \(generalized "
     r"primal averaging uses it\)\."),
    (dict(iterate_averaging="generalized_primal", eval_coeff_lr_power=3),
     r"eval_coeff_lr_power 3 has no effect with iterate averaging generalized primal averaging"),
    (dict(train_interp_coeff=0.5),
     r"train_interp_coeff 0\.5 has no effect without iterate averaging\."),
    (dict(grafting_drop_weighting_factor_on_gsquare=True),
     r"grafting drop_weighting_factor_on_gsquare has no effect with none grafting \(rmsprop and "
     r"adam use it\)\."),
    (dict(preconditioner="sign_descent", num_tolerated_failed_amortized_computations=5),
     r"num_tolerated_failed_amortized_computations 5 has no effect with sign descent, which keeps "
     r"no factors\."),
], ids=lambda v: None if isinstance(v, str) else "-".join(v))
def test_root_orthogonalization_and_averaging_settings_switched_off_warn(options, message):
    with pytest.warns(UserWarning, match=message):
        tessel.torch.Shampoo([torch.nn.Parameter(torch.zeros(4, 3))],
                             target_parameter_dimensionality=2, **options)


@pytest.mark.parametrize("options, error, message", [
    (dict(pseudo_inverse=True), ValueError,
     r"epsilon must be 0 when the pseudo-inverse is used, got 1e-12\."),
    (dict(iterate_averaging="generalized_primal", momentum=0.9), ValueError,
     r"momentum 0\.9 and iterate averaging generalized primal averaging exclude each other"),
    (dict(iterate_averaging="polyak"), ValueError,
     r'unknown iterate_averaging "polyak"; valid values are none, generalized_primal and '
     r"schedule_free\."),
    (dict(root_method="newton"), ValueError,
     r'unknown root_method "newton"; valid values are eigen and coupled_newton\.'),
    (dict(root_method="coupled_newton", coupled_newton_max_iterations=0), ValueError,
     r"coupled Newton max_iterations must be >= 1, got 0\."),
    (dict(iterate_averaging="generalized_primal", train_interp_coeff=0.0), ValueError,
     r"train_interp_coeff must be in \(0, 1\], got 0\."),
    (dict(rank_rtol=-1.0), ValueError, r"rank_rtol must be >= 0, got -1\."),
    (dict(num_tolerated_failed_amortized_computations=-1), ValueError,
     r"num_tolerated_failed_amortized_computations must be >= 0, got -1\."),
    (dict(newton_schulz_coefficients=(1.0, 2.0)), TypeError,
     r"the option newton_schulz_coefficients cannot be \(1\.0, 2\.0\)\."),
    (dict(rank_rtol=None), TypeError, r"the option rank_rtol cannot be None\."),
], ids=lambda v: None if isinstance(v, (str, type)) else "-".join(v))
def test_bad_root_orthogonalization_and_averaging_settings_are_refused(options, error, message):
    with pytest.raises(error, match=message):
        tessel.torch.Shampoo([torch.nn.Parameter(torch.zeros(4, 3))], **options)


def test_scale_by_dims_fn_errors_are_raised_when_the_optimizer_is_built():
    def broken(d_in, d_out):
        raise RuntimeError(f"no scale for {d_in}x{d_out}")

    with pytest.raises(RuntimeError, match=r"no scale for 3x4"):
        tessel.torch.Shampoo([torch.nn.Parameter(torch.zeros(4, 3))],
                             preconditioner="spectral_descent",
                             target_parameter_dimensionality=2, scale_by_dims_fn=broken)


def test_symmetric_packing_saves_factors_and_inverse_roots_as_upper_triangles():
    # As Distributed Shampoo saves them with use_symmetric_packing (its default): (d (d + 1) / 2,)
    # tensors under the same keys; a packed state loads into an unpacked optimizer and back.
    params, grads = model_and_grads(torch.float64, steps=2)
    optimizer = tessel.torch.Shampoo(params, lr=0.05, max_preconditioner_dim=4,
                                     use_symmetric_packing=True)
    take_steps(optimizer, params, grads)
    state = optimizer.state_dict()
    shampoo = state["state"][0]["block_0"]["shampoo"]
    for key in ("factor_matrices", "inv_factor_matrices"):
        for j, d in (("0", 4), ("1", 3)):
            assert tuple(shampoo[key][j].shape) == (d * (d + 1) // 2,), (key, j)
    full = tessel.torch.Shampoo([torch.nn.Parameter(p.detach().clone()) for p in params],
                                lr=0.05, max_preconditioner_dim=4)
    # The tensors of a packed state (Distributed Shampoo's default) into an unpacked optimizer.
    state["param_groups"][0]["use_symmetric_packing"] = False
    full.load_state_dict(state)
    root = full.state_dict()["state"][0]["block_0"]["shampoo"]["inv_factor_matrices"]["0"]
    assert tuple(root.shape) == (4, 4)
    assert torch.equal(root, root.T)  # unpacked from the upper triangle
    rows, cols = torch.triu_indices(4, 4)
    assert torch.equal(root[rows, cols], shampoo["inv_factor_matrices"]["0"])


@needs_cli
def test_keep_rotated_filtered_grad_reaches_the_step_from_python_and_the_cli(tmp_path):
    # The option changes the step by rounding only, which the comparisons above cannot tell from
    # an option dropped on the way: here each side's steps with it differ from its own without it
    # in the last bits, and stay within rounding of them.
    options = dict(BASE_OPTIONS[0], preconditioner="eigenvalue_corrected", epsilon=1e-4)
    flags = [*BASE_OPTIONS[1], "--preconditioner", "eigenvalue-corrected", "--epsilon", "1e-4"]
    python_side, cli_side = [], []
    for keep in (False, True):
        params, grads = model_and_grads(torch.float64, steps=4)
        start = [p.detach().numpy().copy() for p in params]
        take_steps(tessel.torch.Shampoo(params, keep_rotated_filtered_grad=keep, **options),
                   params, grads)
        python_side.append([p.detach().numpy().copy() for p in params])
        cli_side.append(cli_steps(tmp_path, start, grads,
                                  [*flags, *(["--keep-rotated-filtered-grad"] if keep else [])]))
    for side in (python_side, cli_side):
        assert any(not np.array_equal(a, b) for a, b in zip(side[0], side[1]))
        for a, b in zip(side[0], side[1]):
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-13)
