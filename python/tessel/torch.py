"""tessel for PyTorch tensors: its fused linear cross-entropy as a ``torch.autograd.Function``
(CPU tensors, and CUDA tensors on their current stream when the module is built with CUDA), and
``Shampoo``, a ``torch.optim.Optimizer`` whose step is tessel's (CPU parameters).

The forward calls tessel once and gets the loss and the gradients together (no logits are kept);
the backward multiplies the saved gradients by the incoming gradient. For ``reduction="none"``
the incoming gradient differs per row, and rows are already summed into ``grad_weight``, so the
backward calls tessel again with it as ``grad_output_rows`` (a recompute, as Liger-Kernel and Cut
Cross-Entropy do) and the forward computes the loss alone. Tensors cross through DLPack without
copies; the gradients come back as NumPy-owned memory viewed by ``torch.from_numpy`` (on CUDA:
tensors PyTorch allocated on the input's device, which tessel writes on the current stream). For
float16 and bfloat16 inputs tessel computes in float32; the loss and gradients are rounded once to
the inputs' dtype, the dtype PyTorch gives them.
"""

import torch

from . import EXTRAS, LinearCrossEntropyOutput, _extra_names, _options, _tessel
from . import plan as tessel_plan

__all__ = ["Shampoo", "linear_cross_entropy"]


def _array(tensor):
    # DLPack refuses tensors that require grad; detach() shares their storage.
    return None if tensor is None else tensor.detach()


def _tensor(array, dtype):
    """A result of tessel's as a tensor of the inputs' dtype: bfloat16 bits (uint16, NumPy has no
    bfloat16) viewed, what tessel computes in float32 for 16-bit storage rounded once; no copy
    otherwise. CUDA results are tensors already."""
    if array is None:
        return None
    tensor = array if isinstance(array, torch.Tensor) else torch.from_numpy(array)
    return tensor.view(dtype) if tensor.dtype == torch.uint16 else tensor.to(dtype)


def _call(x, weight, target, bias, *, extras, grad_input, grad_weight, grad_bias, options,
          **arrays):
    """The binding for x's device: the host's (NumPy-owned results) or, for CUDA tensors, the CUDA
    path (results allocated here by PyTorch on x's device, the call queued on its current stream).
    ``options`` is tessel._options' dict, ``arrays`` the optional arrays by name.
    Returns (loss, grad_input, grad_weight, grad_bias, {extra name: array or tensor})."""
    wanted = dict(grad_input=grad_input, grad_weight=grad_weight, grad_bias=grad_bias)
    if not x.is_cuda:
        return _tessel.linear_cross_entropy(x, weight, target, bias, extras=extras, **wanted,
                                            options=options, **arrays)
    if not hasattr(_tessel, "linear_cross_entropy_cuda"):
        raise ValueError(f"x lives on {x.device} but this tessel module was built without CUDA: "
                         f"reinstall it with `pip install . -Ccmake.define.TESSEL_PYTHON_CUDA=ON` "
                         f"(needs nvcc), or pass CPU tensors; nothing is copied implicitly.")
    outputs = _cuda_outputs(x, weight, bias, extras, options["reduction"], **wanted)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    _tessel.linear_cross_entropy_cuda(x, weight, target, bias, options=options, outputs=outputs,
                                      stream=stream, **arrays)
    return (outputs["loss"], outputs.get("grad_input"), outputs.get("grad_weight"),
            outputs.get("grad_bias"), {n: outputs[n] for n in EXTRAS if n in outputs})


def _cuda_outputs(x, weight, bias, extras, reduction, *, grad_input, grad_weight, grad_bias):
    """The outputs of a CUDA call, as the host binding shapes them: the loss and what is reduced
    like it (z_loss, accuracy) 0-d for mean and sum, (rows,) for none; the other extras (rows,);
    everything in the computation's type (float64 for float64 inputs, else float32) but
    grad_input (the storage type) and argmax (int64). Unwritten here: tessel writes every one.
    Mis-shaped inputs get none (tessel's own sentence refuses them)."""
    if x.dim() != 2 or weight.dim() != 2:
        return {}
    rows, hidden = x.shape
    vocab = weight.shape[0]
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32

    def new(shape, dtype=compute):
        return torch.empty(shape, dtype=dtype, device=x.device)

    loss_shape = (rows,) if reduction == "none" else ()
    outputs = {"loss": new(loss_shape)}
    for name in extras:
        if name in ("z_loss", "accuracy"):
            outputs[name] = new(loss_shape)
        else:
            outputs[name] = new((rows,), torch.int64 if name == "argmax" else compute)
    if grad_input:
        outputs["grad_input"] = new((rows, hidden), x.dtype)
    if grad_weight:
        outputs["grad_weight"] = new((vocab, weight.shape[1]))
    if grad_bias and bias is not None:
        outputs["grad_bias"] = new((vocab,))
    return outputs


_NO_GRADIENTS = dict(grad_input=False, grad_weight=False, grad_bias=False)


def _wanted(ctx):
    # apply's arguments: x, weight, target, bias, class_weights, soft_target_indices,
    # soft_target_probs, options, extras.
    needs = ctx.needs_input_grad
    return dict(grad_input=needs[0], grad_weight=needs[1], grad_bias=needs[3])


def _extra_tensors(extras):
    """The binding's {name: array} of extras as tensors in EXTRAS' order, no copy: the type tessel
    computes in (float32 for 16-bit inputs), argmax int64."""
    return tuple(extras[name] if isinstance(extras[name], torch.Tensor)
                 else torch.from_numpy(extras[name]) for name in EXTRAS if name in extras)


class LinearCrossEntropyFunction(torch.autograd.Function):
    """The loss, differentiable in x, weight and bias; with ``extras`` (a list of names, see
    tessel.EXTRAS) also those extras, in EXTRAS' order, as outputs without a gradient."""

    @staticmethod
    def forward(ctx, x, weight, target, bias, class_weights, soft_target_indices, soft_target_probs,
                options, extras=None):
        per_row = options["reduction"] == "none"
        # Only what requires grad (a frozen head needs no grad_weight); none yet for reduction
        # none, whose backward computes them.
        wanted = _wanted(ctx) if not per_row else _NO_GRADIENTS
        loss, grad_input, grad_weight, grad_bias, computed = _call(
            _array(x), _array(weight), target, _array(bias), class_weights=_array(class_weights),
            grad_output_rows=None, soft_target_indices=soft_target_indices,
            soft_target_probs=soft_target_probs, extras=extras or [], **wanted, options=options)
        ctx.options = options
        if per_row:
            ctx.save_for_backward(x, weight, target, bias, class_weights)
            # Constants of the loss (detached tensors or other arrays): kept as they are.
            ctx.soft_targets = (soft_target_indices, soft_target_probs)
        else:
            ctx.gradients = tuple(_tensor(g, x.dtype) for g in (grad_input, grad_weight, grad_bias))
        if extras is None:
            return _tensor(loss, x.dtype)
        extra_tensors = _extra_tensors(computed)
        ctx.mark_non_differentiable(*extra_tensors)
        return (_tensor(loss, x.dtype),) + extra_tensors

    @staticmethod
    def backward(ctx, grad_loss, *_):
        # The extras' incoming gradients (*_) are dropped: they are not differentiable.
        if ctx.options["reduction"] == "none":
            x, weight, target, bias, class_weights = ctx.saved_tensors
            soft_indices, soft_probs = ctx.soft_targets
            # tessel takes the per-row gradients in the type it computes in.
            compute = torch.float64 if x.dtype == torch.float64 else torch.float32
            _, grad_input, grad_weight, grad_bias, _ = _call(
                _array(x), _array(weight), target, _array(bias),
                class_weights=_array(class_weights),
                grad_output_rows=grad_loss.detach().to(compute), soft_target_indices=soft_indices,
                soft_target_probs=soft_probs, extras=[], **_wanted(ctx), options=ctx.options)
            gradients = tuple(_tensor(g, x.dtype) for g in (grad_input, grad_weight, grad_bias))
        else:
            gradients = tuple(None if g is None else g * grad_loss for g in ctx.gradients)
        grad_input, grad_weight, grad_bias = gradients
        return grad_input, grad_weight, None, grad_bias, None, None, None, None, None


def linear_cross_entropy(x, weight, target, bias=None, *, reduction="mean", ignore_index=-100,
                         label_smoothing=0.0, lse_square_scale=0.0, softcap=None,
                         class_weights=None, temperature=1.0, entropy_bonus=0.0,
                         shift_sequence_length=0, soft_target_indices=None,
                         soft_target_probs=None, soft_target_weight=1.0, return_extras=None,
                         chunk_size=None):
    """``F.cross_entropy(x @ weight.T + bias, target, ...)`` computed by tessel, differentiable in
    ``x``, ``weight`` and ``bias``; see tessel.linear_cross_entropy for the arguments.

    With ``return_extras`` (names from tessel.EXTRAS), a tessel.LinearCrossEntropyOutput: the loss
    as above and the extras asked for as detached tensors (None for the others; its gradient
    fields are None). For a differentiable target log-probability use ``-loss`` with
    ``reduction="none"`` (without smoothing, z-loss or class weights it is exactly
    ``-target_logprob``).

    The soft targets get no gradient (a teacher's output is a constant of the student's loss):
    ``soft_target_probs`` that requires grad is refused rather than silently given none."""
    options = _options(reduction, ignore_index, label_smoothing, lse_square_scale, softcap,
                       temperature, entropy_bonus, shift_sequence_length, soft_target_weight,
                       chunk_size)
    if (torch.is_grad_enabled() and isinstance(soft_target_probs, torch.Tensor)
            and soft_target_probs.requires_grad):
        raise ValueError("soft_target_probs requires grad, but tessel computes no gradient for "
                         "the soft targets; pass soft_target_probs.detach().")
    soft_target_indices, soft_target_probs = (
        a.detach() if isinstance(a, torch.Tensor) else a
        for a in (soft_target_indices, soft_target_probs))
    names = _extra_names(return_extras)
    if not torch.is_grad_enabled():
        # An evaluation pass (torch.no_grad()): the loss (and extras) alone, no gradient work.
        loss, _, _, _, computed = _call(
            _array(x), _array(weight), target, _array(bias), class_weights=_array(class_weights),
            grad_output_rows=None, soft_target_indices=soft_target_indices,
            soft_target_probs=soft_target_probs, extras=names or [], **_NO_GRADIENTS,
            options=options)
        loss = _tensor(loss, x.dtype)
        if names is None:
            return loss
        results = (loss,) + _extra_tensors(computed)
    else:
        results = LinearCrossEntropyFunction.apply(x, weight, target, bias, class_weights,
                                                   soft_target_indices, soft_target_probs, options,
                                                   names)
        if names is None:
            return results
    return LinearCrossEntropyOutput(
        results[0], **dict(zip((n for n in EXTRAS if n in names), results[1:])))


# ---- Shampoo ----

# tessel's dtype names (the state's entries) and PyTorch's.
_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                 "bf16": torch.bfloat16, "i64": torch.int64, "bool": torch.bool}
_TESSEL_DTYPES = {v: k for k, v in _TORCH_DTYPES.items()}
_STEPPERS = {torch.float32: _tessel.ShampooF32, torch.float64: _tessel.ShampooF64}


def _dtype_name(dtype):
    """A factor dtype given as a torch.dtype or a name ("float32", "bf16")."""
    if isinstance(dtype, torch.dtype):
        return _TESSEL_DTYPES.get(dtype, str(dtype).removeprefix("torch."))
    return dtype


def _state_tensor(dtype, shape, data):
    if not data:
        return torch.empty(shape, dtype=_TORCH_DTYPES[dtype])
    return torch.frombuffer(bytearray(data), dtype=_TORCH_DTYPES[dtype]).reshape(shape)


def _state_entries(param, node, path=()):
    """(key path, dtype name, shape, bytes) of every tensor under one parameter's nested state,
    as the C++ takes them."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _state_entries(param, child, path + (str(key),))
        return
    where = "/".join(path) or "(the parameter's state itself)"
    if not isinstance(node, torch.Tensor) or node.dtype not in _TESSEL_DTYPES:
        raise ValueError(f"the state's {where} of parameter {param} is not a tensor of a dtype "
                         f"tessel keeps ({', '.join(map(str, _TESSEL_DTYPES))}).")
    flat = node.detach().cpu().contiguous().reshape(-1)
    yield ([str(param), *path], _TESSEL_DTYPES[node.dtype], list(node.shape),
           flat.view(torch.uint8).numpy().tobytes())


class Shampoo(torch.optim.Optimizer):
    """Distributed Shampoo's optimizer whose step is tessel's C++ host step (docs/python.md).

    The names and defaults are Meta's ``DistributedShampoo`` constructor's, with its config
    objects flattened into keywords: ``momentum``, ``dampening``, ``use_nesterov``
    (``ClassicMomentumConfig``); ``grafting`` "none", "sgd", "adagrad", "rmsprop" or "adam" with
    ``grafting_beta2`` (None: 0.99 for RMSprop, 0.999 for Adam), ``grafting_epsilon`` and
    ``grafting_drop_weighting_factor_on_gsquare`` (``grafting_config``); ``preconditioner``
    "shampoo" (``DefaultShampooConfig``), "eigendecomposed", "eigenvalue_corrected",
    "spectral_descent" or "sign_descent"; ``target_parameter_dimensionality``
    (``distributed_config``'s); ``factor_matrix_dtype``. ``weight_decay_type`` is "decoupled",
    "l2", "corrected" or "independent". The preconditioner configs' settings:
    ``inverse_exponent_override`` ({order: exponent or {dim: exponent}}), ``use_trace_scaling``,
    ``trace_scaling_exponent``, ``drop_weighting_factor_on_gsquare``,
    ``num_tolerated_failed_amortized_computations``, ``kl_shampoo`` (the KL configs; with
    "eigenvalue_corrected", KL-SOAP: docs/shampoo.md),
    ``ignored_basis_change_dims`` ({order: [dims]}, eigenvalue-corrected),
    ``keep_rotated_filtered_grad`` (eigenvalue-corrected, tessel's: docs/shampoo.md),
    ``eigendecomposition``
    "eigh" or "qr" with ``eigendecomposition_tolerance`` and ``qr_max_iterations``
    (``DefaultSOAPConfig``: "qr"), ``orthogonalization`` "newton_schulz" or "svd" with
    ``svd_scale_by_nuclear_norm`` (spectral descent), ``newton_schulz_num_iterations`` and ``newton_schulz_coefficients``
    (``NewtonSchulzOrthogonalizationConfig``), ``scale_by_dims_fn`` (either's; None: no scaling).
    The root settings: ``root_method`` "eigen" (``EigenConfig``: ``retry_double_precision``,
    ``perturb_before_computation``; ``pseudo_inverse`` with ``rank_atol`` and ``rank_rtol``,
    ``PseudoInverseConfig``) or "coupled_newton" (``CoupledNewtonConfig``:
    ``coupled_newton_max_iterations``, ``coupled_newton_tolerance``). Iterate averaging
    (``iterate_averaging_config``): ``iterate_averaging`` "none", "generalized_primal"
    (``eval_interp_coeff``, ``train_interp_coeff``) or "schedule_free" (``train_interp_coeff``,
    ``eval_coeff_lr_power``), with ``train()`` and ``eval()``. Each parameter group (a dict, as
    for any torch optimizer) may set its own options.

    Every parameter is a contiguous CPU tensor of one dtype, float32 or float64, and is updated
    in place (no copy). A parameter whose ``grad`` is None is skipped as Distributed Shampoo skips
    it: its value and state stay as they were, while the step count (bias correction,
    ``precondition_frequency``) advances for every parameter; with iterate averaging the first
    step needs every gradient. Only ``lr`` may change after construction (a
    scheduler's ``group["lr"]``); state_dict() is keyed by parameter index and Distributed
    Shampoo's key paths.
    """

    def __init__(self, params, lr=1e-2, betas=(0.9, 1.0), beta3=-1.0, epsilon=1e-12,
                 momentum=0.0, dampening=0.0, use_nesterov=False, weight_decay=0.0,
                 weight_decay_type="decoupled", max_preconditioner_dim=1024,
                 target_parameter_dimensionality=1, precondition_frequency=1,
                 start_preconditioning_step=-1, use_bias_correction=True, grafting="none",
                 grafting_beta2=None, grafting_epsilon=1e-10, preconditioner="shampoo",
                 factor_matrix_dtype=torch.float32, use_symmetric_packing=False,
                 inverse_exponent_override=None, ignored_basis_change_dims=None,
                 use_trace_scaling=False, trace_scaling_exponent=0.5,
                 drop_weighting_factor_on_gsquare=False, kl_shampoo=False,
                 eigendecomposition="eigh", eigendecomposition_tolerance=0.0,
                 qr_max_iterations=1, orthogonalization="newton_schulz",
                 svd_scale_by_nuclear_norm=False, newton_schulz_num_iterations=5,
                 newton_schulz_coefficients=(3.4445, -4.7750, 2.0315), scale_by_dims_fn=None,
                 root_method="eigen", coupled_newton_max_iterations=100,
                 coupled_newton_tolerance=1e-6, retry_double_precision=True,
                 perturb_before_computation=True, pseudo_inverse=False, rank_atol=0.0,
                 rank_rtol=0.0, iterate_averaging="none", eval_interp_coeff=0.9,
                 train_interp_coeff=0.8, eval_coeff_lr_power=2,
                 grafting_drop_weighting_factor_on_gsquare=False,
                 num_tolerated_failed_amortized_computations=3,
                 keep_rotated_filtered_grad=False):
        defaults = dict(
            lr=lr, betas=betas, beta3=beta3, epsilon=epsilon, momentum=momentum,
            dampening=dampening, use_nesterov=use_nesterov, weight_decay=weight_decay,
            weight_decay_type=weight_decay_type, max_preconditioner_dim=max_preconditioner_dim,
            target_parameter_dimensionality=target_parameter_dimensionality,
            precondition_frequency=precondition_frequency,
            start_preconditioning_step=start_preconditioning_step,
            use_bias_correction=use_bias_correction, grafting=grafting,
            grafting_beta2=grafting_beta2, grafting_epsilon=grafting_epsilon,
            preconditioner=preconditioner, factor_matrix_dtype=factor_matrix_dtype,
            use_symmetric_packing=use_symmetric_packing,
            keep_rotated_filtered_grad=keep_rotated_filtered_grad,
            inverse_exponent_override=dict(inverse_exponent_override or {}),
            ignored_basis_change_dims=dict(ignored_basis_change_dims or {}),
            use_trace_scaling=use_trace_scaling, trace_scaling_exponent=trace_scaling_exponent,
            drop_weighting_factor_on_gsquare=drop_weighting_factor_on_gsquare,
            kl_shampoo=kl_shampoo, eigendecomposition=eigendecomposition,
            eigendecomposition_tolerance=eigendecomposition_tolerance,
            qr_max_iterations=qr_max_iterations, orthogonalization=orthogonalization,
            svd_scale_by_nuclear_norm=svd_scale_by_nuclear_norm,
            newton_schulz_num_iterations=newton_schulz_num_iterations,
            newton_schulz_coefficients=tuple(newton_schulz_coefficients),
            scale_by_dims_fn=scale_by_dims_fn, root_method=root_method,
            coupled_newton_max_iterations=coupled_newton_max_iterations,
            coupled_newton_tolerance=coupled_newton_tolerance,
            retry_double_precision=retry_double_precision,
            perturb_before_computation=perturb_before_computation, pseudo_inverse=pseudo_inverse,
            rank_atol=rank_atol, rank_rtol=rank_rtol, iterate_averaging=iterate_averaging,
            eval_interp_coeff=eval_interp_coeff, train_interp_coeff=train_interp_coeff,
            eval_coeff_lr_power=eval_coeff_lr_power,
            grafting_drop_weighting_factor_on_gsquare=grafting_drop_weighting_factor_on_gsquare,
            num_tolerated_failed_amortized_computations=(
                num_tolerated_failed_amortized_computations))
        self._tessel = None
        super().__init__(params, defaults)
        self._params = [p for group in self.param_groups for p in group["params"]]
        dtype = self._params[0].dtype
        if dtype not in _STEPPERS:
            raise ValueError(f"parameter 0 has dtype {dtype}; tessel's Shampoo steps float32 "
                             f"and float64 parameters.")
        for i, p in enumerate(self._params):
            if p.dtype != dtype:
                raise ValueError(f"parameter {i} has dtype {p.dtype} but parameter 0 has "
                                 f"{dtype}; one tessel Shampoo steps one dtype (make one "
                                 f"optimizer per dtype).")
            if p.device.type != "cpu":
                raise ValueError(f"parameter {i} lives on {p.device}; tessel.torch.Shampoo "
                                 f"steps CPU parameters (the device step is C++ only for now).")
        groups, first = [], 0
        for group in self.param_groups:
            count = len(group["params"])
            groups.append((list(range(first, first + count)), self._group_options(group)))
            first += count
        self._tessel = _STEPPERS[dtype]([list(p.shape) for p in self._params], groups)

    @staticmethod
    def _group_options(group):
        options = {k: v for k, v in group.items() if k not in ("params", "betas")}
        if len(group["betas"]) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {group['betas']!r}.")
        options["beta1"], options["beta2"] = map(float, group["betas"])
        options["factor_matrix_dtype"] = _dtype_name(group["factor_matrix_dtype"])
        for k in ("max_preconditioner_dim", "target_parameter_dimensionality"):
            options[k] = tessel_plan._dim(group[k])
        options["scale_by_dims"] = Shampoo._scale_by_dims(group)
        return options

    @staticmethod
    def _scale_by_dims(group):
        """scale_by_dims_fn evaluated here, in Python, for the (d_in, d_out) of every 2-D block of
        the group's plan (d_in its columns, d_out its rows): the C++ step looks the scales up
        rather than calling back into Python. None without a function."""
        fn = group["scale_by_dims_fn"]
        if fn is None:
            return None
        plan = tessel_plan.shampoo([p.shape for p in group["params"]],
                                   group["max_preconditioner_dim"],
                                   group["target_parameter_dimensionality"])
        dims = {(b.shape[1], b.shape[0]) for p in plan.params for b in p.blocks
                if len(b.shape) == 2}
        return {d: float(fn(*d)) for d in sorted(dims)}

    def add_param_group(self, param_group):
        if self._tessel is not None:
            raise ValueError("tessel's Shampoo plans its blocks when it is built; parameter "
                             "groups cannot be added afterwards (build a new optimizer).")
        super().add_param_group(param_group)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for i, p in enumerate(self._params):
            if p.grad is not None and p.grad.layout != torch.strided:
                raise ValueError(f"the gradient of parameter {i} is {p.grad.layout}; tessel's "
                                 f"Shampoo takes dense gradients.")
        for g, group in enumerate(self.param_groups):
            self._tessel.set_lr(g, float(group["lr"]))
        # detach(): DLPack refuses tensors that require grad; it shares their storage.
        # A parameter without a gradient (None) is skipped, as Distributed Shampoo skips it.
        self._tessel.step([p.detach() for p in self._params],
                          [None if p.grad is None else p.grad.detach() for p in self._params])
        return loss

    @torch.no_grad()
    def train(self):
        """Iterate averaging (``iterate_averaging``): moves the parameters back from the averaged
        sequence to the one gradients are taken at, in place, as Distributed Shampoo's
        ``train()``. Nothing changes without iterate averaging or in train mode already."""
        self._tessel.switch_mode([p.detach() for p in self._params], True)

    @torch.no_grad()
    def eval(self):
        """Iterate averaging: moves the parameters to the averaged sequence
        ``x = y + (1 - 1 / train_interp_coeff) (z - y)`` for evaluation, in place, as Distributed
        Shampoo's ``eval()``; ``step()`` is refused until ``train()``."""
        self._tessel.switch_mode([p.detach() for p in self._params], False)

    def state_dict(self):
        """``{"state": {param index: nested dict}, "param_groups": [...]}``, torch's layout, with
        each parameter's state nested as Distributed Shampoo nests it:
        ``state["state"][0]["block_1"]["shampoo"]["factor_matrices"]["0"]``,
        ``state["state"][0]["step"]``; tensors hold the C++ state's exact bytes."""
        state = {}
        for key, dtype, shape, data in self._tessel.state_dict():
            node = state.setdefault(int(key[0]), {})
            for part in key[1:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = _state_tensor(dtype, shape, data)
        groups, first = [], 0
        for group in self.param_groups:
            count = len(group["params"])
            groups.append(dict({k: v for k, v in group.items() if k != "params"},
                               params=list(range(first, first + count))))
            first += count
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads what state_dict() gave, all or nothing; the groups' options must be this
        optimizer's, except ``lr``, which is taken from the state (as torch optimizers do)."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"the state has {len(saved_groups)} parameter groups but the "
                             f"optimizer has {len(self.param_groups)}.")
        first = 0
        for g, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            count = len(group["params"])
            if list(saved["params"]) != list(range(first, first + count)):
                raise ValueError(f"parameter group {g} of the state holds parameters "
                                 f"{list(saved['params'])} but the optimizer's holds "
                                 f"{list(range(first, first + count))}.")
            first += count
            for k, v in group.items():
                if k not in ("params", "lr") and saved.get(k) != v:
                    raise ValueError(f"parameter group {g} of the state has {k}={saved.get(k)!r} "
                                     f"but the optimizer was built with {k}={v!r}; only lr may "
                                     f"differ.")
        self._tessel.load_state_dict([entry for p, node in state_dict["state"].items()
                                      for entry in _state_entries(p, node)])
        for saved, group in zip(saved_groups, self.param_groups):
            group["lr"] = saved["lr"]
