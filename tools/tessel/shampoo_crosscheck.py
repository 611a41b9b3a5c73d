#!/usr/bin/env python3
"""Cross-check `tessel shampoo run` against Meta's Distributed Shampoo, step for step.

  shampoo_crosscheck.py --tessel build/default/bin/tessel --optimizers PATH [--case NAME ...]
                        [--skipping]

PATH is a local checkout of facebookresearch/optimizers (its root goes on sys.path; nothing of it
is copied here). Needs PyTorch and NumPy. For every case the script writes the parameters and
per-step gradients as .npy files, runs the tessel CLI with the case's flags and
DistributedShampoo with the same options in float64 on the CPU, and prints the largest
difference of the final parameters relative to their largest magnitude. Exits with status 1 when
a case differs by more than 1e-9 (1e-8 for eigenvalue-corrected Shampoo and warm-started
eigendecompositions, whose eigenbases each
side's eigensolver resolves only to rounding over the eigenvalue gaps) or fails on one side only. Distributed Shampoo computes its bias
corrections in float32 (beta ** step with an int64 step tensor), so the cases turn bias correction
off except "defaults" and the Adam-grafting ones, which are held to 1e-6 instead; so are the
iterate-averaging cases with weight decay or schedule-free, whose lr Distributed Shampoo keeps
in float32 (the decay factor 1 - lr a on z, the sum of lr^p).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def cases():
    """(name, parameter shapes, steps, tessel flags, Meta keyword factory, gradient scale)."""
    import torch

    def root_inv(m, **kw):
        # Factors and inverse roots in float64 on both sides (tessel: --factor-dtype f64; its
        # roots are in the parameters' dtype), so that the comparison is not float32 rounding.
        return m.RootInvShampooPreconditionerConfig(
            factor_matrix_dtype=torch.float64, inv_factor_matrix_dtype=torch.float64, **kw)

    def corrected(m, **kw):
        # Eigenvalue-corrected Shampoo with factors, eigenvectors and corrected eigenvalues in
        # float64 on both sides.
        return m.EigenvalueCorrectedShampooPreconditionerConfig(
            factor_matrix_dtype=torch.float64, factor_matrix_eigenvectors_dtype=torch.float64,
            corrected_eigenvalues_dtype=torch.float64, **kw)

    def meta_defaults(m, **kw):
        args = dict(lr=0.01, betas=(0.9, 1.0), epsilon=1e-12, max_preconditioner_dim=1024,
                    precondition_frequency=1, use_bias_correction=False,
                    preconditioner_config=root_inv(m))
        args.update(kw)
        return args

    def eigendecomposed(m, kl=False, **kw):
        config = (m.EigendecomposedKLShampooPreconditionerConfig if kl
                  else m.EigendecomposedShampooPreconditionerConfig)
        return config(factor_matrix_dtype=torch.float64,
                      factor_matrix_eigenvectors_dtype=torch.float64,
                      factor_matrix_eigenvalues_dtype=torch.float64, **kw)

    def spectral(m, **kw):
        return meta_defaults(
            m, preconditioner_config=m.SpectralDescentPreconditionerConfig(),
            distributed_config=m.SingleDeviceDistributedConfig(target_parameter_dimensionality=2),
            **kw)

    return [
        ("defaults", [(6, 5), (7,)], 4, ["--use-bias-correction", "true"],
         lambda m: meta_defaults(m, use_bias_correction=True), 1.0),
        # beta2 = 0 keeps G G^T of one step: rank one, so epsilon must carry the root.
        ("beta2_0", [(6, 5), (7,)], 4, ["--beta2", "0", "--epsilon", "0.1"],
         lambda m: meta_defaults(m, betas=(0.9, 0.0), epsilon=0.1), 1.0),
        ("beta2_0.95_adam", [(4, 3)], 5,
         ["--beta2", "0.95", "--grafting", "adam", "--use-bias-correction", "true"],
         lambda m: meta_defaults(m, betas=(0.9, 0.95), use_bias_correction=True,
                                 grafting_config=m.AdamPreconditionerConfig(beta2=0.999,
                                                                            epsilon=1e-10)), 1.0),
        ("exponent_override", [(5, 4)], 3,
         ["--inverse-exponent-override", "2:1=0", "--max-preconditioner-dim", "8"],
         lambda m: meta_defaults(m, max_preconditioner_dim=8,
                                 preconditioner_config=root_inv(
                                     m, inverse_exponent_override={2: {1: 0.0}})), 1.0),
        # Meta's default packs factors and inverse roots (root_inv leaves it on).
        ("symmetric_packing", [(6, 5), (7,)], 4,
         ["--use-symmetric-packing", "--epsilon", "1e-6", "--beta2", "0.95"],
         lambda m: meta_defaults(m, epsilon=1e-6, betas=(0.9, 0.95)), 1.0),
        ("pseudo_inverse", [(3, 4)], 3,
         ["--epsilon", "0", "--pseudo-inverse", "--rank-rtol", "1e-8", "--max-preconditioner-dim",
          "4"],
         lambda m: meta_defaults(
             m, epsilon=0.0, max_preconditioner_dim=4,
             preconditioner_config=root_inv(
                 m, amortized_computation_config=m.EigenConfig(
                     rank_deficient_stability_config=m.PseudoInverseConfig(rank_rtol=1e-8)))),
         1.0),
        ("trace_scaling", [(5, 4)], 3, ["--use-trace-scaling", "--epsilon", "1e-6"],
         lambda m: meta_defaults(m, epsilon=1e-6,
                                 preconditioner_config=root_inv(m, use_trace_scaling=True)), 1.0),
        ("drop_weighting_rmsprop", [(5, 4)], 3,
         ["--beta2", "0.9", "--drop-weighting-factor-on-gsquare", "--grafting", "rmsprop",
          "--grafting-drop-weighting-factor-on-gsquare"],
         lambda m: meta_defaults(
             m, betas=(0.9, 0.9),
             preconditioner_config=root_inv(m, drop_weighting_factor_on_gsquare=True),
             grafting_config=m.RMSpropPreconditionerConfig(
                 beta2=0.99, epsilon=1e-10, drop_weighting_factor_on_gsquare=True)), 1.0),
        ("independent_weight_decay", [(5, 4)], 3,
         ["--weight-decay", "0.001", "--weight-decay-type", "independent"],
         lambda m: meta_defaults(m, weight_decay=0.001,
                                 weight_decay_type=m.WeightDecayType.INDEPENDENT), 1.0),
        ("eigenvalue_corrected", [(6, 5), (4,)], 4,
         ["--preconditioner", "eigenvalue-corrected", "--factor-dtype", "f64", "--epsilon",
          "1e-8", "--beta2", "0.95"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95),
             preconditioner_config=corrected(m)), 1.0),
        ("eigenvalue_corrected_every_2", [(5, 3, 2)], 5,
         ["--preconditioner", "eigenvalue-corrected", "--factor-dtype", "f64",
          "--precondition-frequency", "2", "--beta2", "0.99", "--momentum", "0.5",
          "--max-preconditioner-dim", "4", "--weight-decay", "0.01", "--epsilon", "1e-4"],
         lambda m: meta_defaults(
             m, betas=(0.9, 0.99), precondition_frequency=2, max_preconditioner_dim=4, epsilon=1e-4,
             weight_decay=0.01, iterate_averaging_config=m.ClassicMomentumConfig(momentum=0.5),
             preconditioner_config=corrected(m)), 1.0),
        # tessel's keep_rotated_filtered_grad (no Meta counterpart: the same steps to rounding)
        # against Meta's plain eigenvalue-corrected Shampoo: the case above with it, and with
        # beta3 apart from beta1.
        ("eigenvalue_corrected_kept_rotated", [(5, 3, 2)], 5,
         ["--preconditioner", "eigenvalue-corrected", "--factor-dtype", "f64",
          "--precondition-frequency", "2", "--beta2", "0.99", "--momentum", "0.5",
          "--max-preconditioner-dim", "4", "--weight-decay", "0.01", "--epsilon", "1e-4",
          "--beta3", "0.5", "--keep-rotated-filtered-grad"],
         lambda m: meta_defaults(
             m, betas=(0.9, 0.99), beta3=0.5, precondition_frequency=2, max_preconditioner_dim=4,
             epsilon=1e-4, weight_decay=0.01,
             iterate_averaging_config=m.ClassicMomentumConfig(momentum=0.5),
             preconditioner_config=corrected(m)), 1.0),
        # ignored_basis_change_dims: the rows of 2-D blocks and 1-D blocks stay in their own basis
        # (the latter is Adam's per-element scaling); then the outer modes of 3-D blocks.
        ("eigenvalue_corrected_ignored_dims", [(6, 5), (4,)], 4,
         ["--preconditioner", "eigenvalue-corrected", "--factor-dtype", "f64", "--epsilon",
          "1e-8", "--beta2", "0.95", "--target-dims", "2", "--ignored-basis-change-dims", "2=0",
          "--ignored-basis-change-dims", "1=0"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95),
             distributed_config=m.SingleDeviceDistributedConfig(target_parameter_dimensionality=2),
             preconditioner_config=corrected(
                 m, ignored_basis_change_dims={2: [0], 1: [0]})), 1.0),
        # The corrected eigenvalues to the power 1/4 for 2-D blocks, 0.4 for 1-D ones.
        ("eigenvalue_corrected_exponent", [(6, 5), (4,)], 4,
         ["--preconditioner", "eigenvalue-corrected", "--factor-dtype", "f64", "--epsilon",
          "1e-8", "--beta2", "0.95", "--target-dims", "2", "--inverse-exponent-override", "2=0.25",
          "--inverse-exponent-override", "1=0.4"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95),
             distributed_config=m.SingleDeviceDistributedConfig(target_parameter_dimensionality=2),
             preconditioner_config=corrected(
                 m, inverse_exponent_override={2: 0.25, 1: 0.4})), 1.0),
        ("eigenvalue_corrected_ignored_3d", [(5, 3, 2)], 4,
         ["--preconditioner", "eigenvalue-corrected", "--factor-dtype", "f64", "--epsilon",
          "1e-8", "--beta2", "0.95", "--target-dims", "3", "--ignored-basis-change-dims", "3=2,0"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95),
             distributed_config=m.SingleDeviceDistributedConfig(target_parameter_dimensionality=3),
             preconditioner_config=corrected(
                 m, ignored_basis_change_dims={3: [2, 0]})), 1.0),
        # DefaultSOAPConfig: the QR iteration (warm-started from the eigenvectors in the state),
        # then three iterations stopping at a tolerance, and eigh's tolerance, with both
        # eigenvalue-corrected and eigendecomposed Shampoo. Amortized every 16 steps, so the
        # factors are full rank when first decomposed: eigh's basis of a degenerate eigenspace
        # (the null space of a young factor) is arbitrary, and a warm start from it would compare
        # two arbitrary choices.
        ("soap_qr", [(5,), (4, 3)], 40,
         ["--preconditioner", "eigenvalue-corrected", "--eigendecomposition", "qr",
          "--factor-dtype", "f64", "--epsilon", "1e-8", "--beta2", "0.95",
          "--precondition-frequency", "16"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95), precondition_frequency=16,
             preconditioner_config=corrected(
                 m, amortized_computation_config=m.QREigendecompositionConfig())), 1.0),
        ("soap_qr_3_iterations_tolerance", [(5,), (4, 3)], 40,
         ["--preconditioner", "eigenvalue-corrected", "--eigendecomposition", "qr",
          "--qr-max-iterations", "3", "--eigendecomposition-tolerance", "0.05",
          "--factor-dtype", "f64", "--epsilon", "1e-8", "--beta2", "0.95",
          "--precondition-frequency", "16"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95), precondition_frequency=16,
             preconditioner_config=corrected(
                 m, amortized_computation_config=m.QREigendecompositionConfig(
                     max_iterations=3, tolerance=0.05))), 1.0),
        ("soap_eigh_tolerance", [(5,), (4, 3)], 40,
         ["--preconditioner", "eigenvalue-corrected", "--eigendecomposition-tolerance", "0.3",
          "--factor-dtype", "f64", "--epsilon", "1e-8", "--beta2", "0.95",
          "--precondition-frequency", "16"],
         lambda m: meta_defaults(
             m, epsilon=1e-8, betas=(0.9, 0.95), precondition_frequency=16,
             preconditioner_config=corrected(
                 m, amortized_computation_config=m.EighEigendecompositionConfig(tolerance=0.3))), 1.0),
        ("eigendecomposed_qr", [(5,), (4, 3)], 40,
         ["--preconditioner", "eigendecomposed", "--eigendecomposition", "qr",
          "--qr-max-iterations", "2", "--factor-dtype", "f64", "--beta2", "0.95",
          "--epsilon", "1e-8", "--precondition-frequency", "16"],
         lambda m: meta_defaults(m, epsilon=1e-8, betas=(0.9, 0.95), precondition_frequency=16,
                                 preconditioner_config=eigendecomposed(
                                     m, amortized_computation_config=m.QREigendecompositionConfig(
                                         max_iterations=2))), 1.0),
        ("eigendecomposed_eigh_tolerance", [(5,), (4, 3)], 40,
         ["--preconditioner", "eigendecomposed", "--eigendecomposition-tolerance", "0.3",
          "--factor-dtype", "f64", "--beta2", "0.95", "--epsilon", "1e-8",
          "--precondition-frequency", "16"],
         lambda m: meta_defaults(m, epsilon=1e-8, betas=(0.9, 0.95), precondition_frequency=16,
                                 preconditioner_config=eigendecomposed(
                                     m, amortized_computation_config=m.EighEigendecompositionConfig(
                                         tolerance=0.3))), 1.0),
        ("eigendecomposed", [(6, 5), (4,)], 4,
         ["--preconditioner", "eigendecomposed", "--factor-dtype", "f64", "--beta2", "0.95",
          "--epsilon", "1e-8"],
         lambda m: meta_defaults(m, epsilon=1e-8, betas=(0.9, 0.95),
                                 preconditioner_config=eigendecomposed(m)), 1.0),
        ("eigendecomposed_every_2_trace", [(5, 3, 2)], 5,
         ["--preconditioner", "eigendecomposed", "--factor-dtype", "f64",
          "--precondition-frequency", "2", "--beta2", "0.99", "--max-preconditioner-dim", "4",
          "--use-trace-scaling", "--epsilon", "1e-6"],
         lambda m: meta_defaults(m, betas=(0.9, 0.99), precondition_frequency=2,
                                 max_preconditioner_dim=4, epsilon=1e-6,
                                 preconditioner_config=eigendecomposed(m, use_trace_scaling=True)),
         1.0),
        ("kl_shampoo", [(6, 5), (3, 4, 2), (4,)], 4,
         ["--kl-shampoo", "--beta2", "0.95", "--epsilon", "1e-6"],
         lambda m: meta_defaults(m, epsilon=1e-6, betas=(0.9, 0.95),
                                 preconditioner_config=m.RootInvKLShampooPreconditionerConfig(
                                     factor_matrix_dtype=torch.float64,
                                     inv_factor_matrix_dtype=torch.float64)), 1.0),
        ("kl_eigendecomposed_every_2", [(6, 5), (3, 4, 2)], 5,
         ["--kl-shampoo", "--preconditioner", "eigendecomposed", "--factor-dtype", "f64",
          "--beta2", "0.95", "--epsilon", "1e-6", "--precondition-frequency", "2",
          "--max-preconditioner-dim", "4"],
         lambda m: meta_defaults(m, epsilon=1e-6, betas=(0.9, 0.95), precondition_frequency=2,
                                 max_preconditioner_dim=4,
                                 preconditioner_config=eigendecomposed(m, kl=True)), 1.0),
        ("generalized_primal_averaging", [(6, 5), (4,)], 5,
         ["--iterate-averaging", "generalized-primal", "--eval-interp-coeff", "0.9",
          "--train-interp-coeff", "0.8", "--beta2", "0.95", "--epsilon", "1e-6",
          "--weight-decay", "0.01"],
         lambda m: meta_defaults(
             m, betas=(0.9, 0.95), epsilon=1e-6, weight_decay=0.01,
             iterate_averaging_config=m.GeneralizedPrimalAveragingConfig(
                 eval_interp_coeff=0.9, train_interp_coeff=0.8)), 1.0),
        ("schedule_free", [(6, 5), (3, 4, 2)], 5,
         ["--iterate-averaging", "schedule-free", "--train-interp-coeff", "0.7", "--lr", "0.05",
          "--beta2", "0.95", "--epsilon", "1e-6", "--grafting", "adagrad"],
         lambda m: meta_defaults(
             m, lr=0.05, betas=(0.9, 0.95), epsilon=1e-6,
             grafting_config=m.AdaGradPreconditionerConfig(epsilon=1e-10),
             iterate_averaging_config=m.ScheduleFreeConfig(train_interp_coeff=0.7,
                                                           eval_coeff_lr_power=2)), 1.0),
        ("spectral_descent", [(6, 4), (3, 8)], 4,
         ["--preconditioner", "spectral-descent", "--target-dims", "2"],
         lambda m: spectral(m), 1.0),
        ("spectral_descent_adam_grafting", [(6, 4)], 4,
         ["--preconditioner", "spectral-descent", "--target-dims", "2", "--grafting", "adam",
          "--max-preconditioner-dim", "4", "--use-bias-correction", "true"],
         lambda m: spectral(m, max_preconditioner_dim=4, use_bias_correction=True,
                            grafting_config=m.AdamPreconditionerConfig(beta2=0.999,
                                                                       epsilon=1e-10)), 1.0),
        ("sign_descent", [(6, 4), (5,)], 3, ["--preconditioner", "sign-descent"],
         lambda m: meta_defaults(m, preconditioner_config=m.SignDescentPreconditionerConfig()),
         1.0),
        # SGD grafting. Without bias correction and with beta3 = beta1, Distributed Shampoo's
        # filtered gradient is its state list itself, and SGD's grafting direction is that list
        # too, so on the grafting-only steps before start_preconditioning_step its in-place
        # scaling by -lr reaches the filtered-gradient state (docs/shampoo.md, "Cross-check"):
        # the cases keep bias correction on (float32 on Meta's side: 1e-6) when they warm up.
        ("sgd_grafting", [(5, 3), (4,)], 4,
         ["--grafting", "sgd", "--momentum", "0.5", "--weight-decay", "0.01"],
         lambda m: meta_defaults(m, grafting_config=m.SGDPreconditionerConfig(), weight_decay=0.01,
                                 iterate_averaging_config=m.ClassicMomentumConfig(momentum=0.5)),
         1.0),
        ("sgd_grafting_warm_up", [(5, 3), (4,)], 5,
         ["--grafting", "sgd", "--precondition-frequency", "2", "--max-preconditioner-dim", "4",
          "--use-bias-correction", "true"],
         lambda m: meta_defaults(m, grafting_config=m.SGDPreconditionerConfig(),
                                 precondition_frequency=2, max_preconditioner_dim=4,
                                 use_bias_correction=True), 1.0),
    ]


def meta_module(path):
    sys.path.insert(0, path)
    import distributed_shampoo as ds  # noqa: E402
    from distributed_shampoo.preconditioner import matrix_functions_types as mf  # noqa: E402

    class M:
        pass

    m = M()
    for mod in (ds, mf):
        for name in dir(mod):
            if not name.startswith("_"):
                setattr(m, name, getattr(mod, name))
    import distributed_shampoo.shampoo_types as st  # noqa: E402
    for name in dir(st):
        if not name.startswith("_"):
            setattr(m, name, getattr(st, name))
    return m


def run_case(tessel, m, case, rng, workdir):
    import torch
    name, shapes, steps, flags, meta_kwargs, scale = case
    params = [rng.standard_normal(s) for s in shapes]
    grads = [scale * rng.standard_normal((steps,) + tuple(s)) for s in shapes]
    cmd = [tessel, "shampoo", "run"]
    for p, (w, g) in enumerate(zip(params, grads)):
        wp, gp, op = (os.path.join(workdir, f"{name}_{k}{p}.npy") for k in ("w", "g", "o"))
        np.save(wp, w)
        np.save(gp, g)
        cmd += ["--param", wp, "--grads", gp, "--out", op]
    cmd += flags
    if "--use-bias-correction" not in flags:
        cmd += ["--use-bias-correction", "false"]
    if "--preconditioner" not in flags:
        cmd += ["--factor-dtype", "f64"]
    t = subprocess.run(cmd, capture_output=True, text=True)
    ws = [torch.nn.Parameter(torch.from_numpy(w.copy())) for w in params]
    try:
        opt = m.DistributedShampoo(ws, **meta_kwargs(m))
        for step in range(steps):
            for w, g in zip(ws, grads):
                w.grad = torch.from_numpy(g[step].copy())
            opt.step()
        meta = [w.detach().numpy() for w in ws]
        meta_error = None
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        meta, meta_error = None, f"{type(e).__name__}: {e}"
    if t.returncode != 0 or meta_error:
        both = t.returncode != 0 and meta_error
        print(f"{name:34s} tessel: {t.stderr.strip() or 'ran'} | Meta: {meta_error or 'ran'}")
        return bool(both)
    ours = [np.load(os.path.join(workdir, f"{name}_o{p}.npy")) for p in range(len(params))]
    largest = max(float(np.abs(x).max()) for x in meta)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(ours, meta)) / max(largest, 1e-300)
    moved = max(float(np.abs(a - w).max()) for a, w in zip(meta, params))
    warn = t.stderr.strip().replace("\n", " ")
    print(f"{name:34s} rel. difference {diff:.2e} (parameters moved by up to {moved:.2e})"
          + (f"  [{warn}]" if warn else ""))
    # Eigenvalue-corrected Shampoo divides by per-element second moments in an eigenbasis that
    # each side's eigensolver resolves only to rounding over the eigenvalue gaps: 1e-8; so do
    # the warm-started eigendecompositions (QR iteration, eigh's tolerance), whose bases carry
    # that rounding from one amortized step to the next.
    # Iterate averaging: Distributed Shampoo keeps lr in a float32 tensor, so its decay factor
    # 1 - lr a on z (rounded near 1 to float32's 6e-8) and schedule-free's sum of lr^p carry
    # float32 rounding: 1e-6 as for its float32 bias corrections.
    float32_lr = "--iterate-averaging" in flags and ("--weight-decay" in flags
                                                     or "schedule-free" in flags)
    tolerance = (1e-6 if "true" in flags or float32_lr
                 else 1e-8 if "eigenvalue-corrected" in flags or "--eigendecomposition" in flags
                 or "--eigendecomposition-tolerance" in flags else 1e-9)
    return diff <= tolerance


def check_skipping(m):
    """Parameters whose grad is None at some steps, through tessel.torch.Shampoo (the Python
    module; the CLI has no way to leave a gradient out) against DistributedShampoo."""
    import torch
    import tessel.torch

    shapes = [(5, 3), (4,), (2, 3, 2), (6, 4)]
    rng = np.random.default_rng(7)
    start = [rng.standard_normal(s) for s in shapes]
    steps = 8
    grads = [[rng.standard_normal(s) * 0.5 for s in shapes] for _ in range(steps)]
    missing = {1: [1], 2: [1, 3], 3: [0, 1, 2, 3], 5: [3]}  # step -> parameters without a grad

    def run(make):
        ws = [torch.nn.Parameter(torch.tensor(w.copy())) for w in start]
        opt = make(ws)
        for t in range(steps):
            for i, w in enumerate(ws):
                w.grad = None if i in missing.get(t, []) else torch.tensor(grads[t][i].copy())
            opt.step()
        return [w.detach().numpy() for w in ws]

    ok = True
    # (name, grafting, momentum, weight decay, epsilon, bias correction, tolerance): without
    # grafting the steps are large (parameters move by 2.4) and carry the roots' rounding; Meta's
    # float32 bias corrections bound the last case (module docstring).
    for name, grafting, momentum, wd, eps, bc, tolerance in [
            ("skipping_adagrad_momentum", "adagrad", 0.9, 1e-3, 1e-12, False, 1e-8),
            ("skipping_no_grafting", "none", 0.0, 0.0, 1e-6, False, 1e-7),
            ("skipping_sgd_bias_corrected", "sgd", 0.5, 1e-2, 1e-12, True, 1e-6)]:
        common = dict(lr=0.05, betas=(0.9, 0.99), epsilon=eps, weight_decay=wd,
                      max_preconditioner_dim=4, precondition_frequency=2,
                      start_preconditioning_step=2, use_bias_correction=bc)
        meta_grafting = {"adagrad": m.AdaGradPreconditionerConfig(epsilon=1e-10),
                         "sgd": m.SGDPreconditionerConfig(), "none": None}[grafting]
        meta_momentum = (dict(iterate_averaging_config=m.ClassicMomentumConfig(momentum=momentum))
                         if momentum else {})
        theirs = run(lambda ws: m.DistributedShampoo(
            ws, **common, **meta_momentum, grafting_config=meta_grafting,
            preconditioner_config=m.RootInvShampooPreconditionerConfig(
                factor_matrix_dtype=torch.float64, inv_factor_matrix_dtype=torch.float64)))
        ours = run(lambda ws: tessel.torch.Shampoo(
            ws, **common, momentum=momentum, grafting=grafting, grafting_epsilon=1e-10,
            factor_matrix_dtype=torch.float64))
        largest = max(float(np.abs(a).max()) for a in theirs)
        diff = max(float(np.abs(a - b).max()) for a, b in zip(ours, theirs)) / largest
        moved = max(float(np.abs(a - w).max()) for a, w in zip(theirs, start))
        print(f"{name:34s} rel. difference {diff:.2e} (parameters moved by up to {moved:.2e})")
        ok = diff <= tolerance and ok
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessel", required=True)
    ap.add_argument("--optimizers", required=True, help="checkout of facebookresearch/optimizers")
    ap.add_argument("--case", action="append", help="run only these cases")
    ap.add_argument("--skipping", action="store_true",
                    help="also compare steps with parameters whose grad is None (needs tessel's "
                         "Python module importable: pip install . or tools/python-test's venv)")
    args = ap.parse_args()
    m = meta_module(args.optimizers)
    rng = np.random.default_rng(0)
    ok = True
    if args.skipping:
        ok = check_skipping(m)
    with tempfile.TemporaryDirectory() as workdir:
        for case in cases():
            if args.case and case[0] not in args.case:
                continue
            ok = run_case(os.path.abspath(args.tessel), m, case, rng, workdir) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
