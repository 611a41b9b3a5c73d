"""KL-SOAP (include/tessel/shampoo/preconditioners/kl_soap.hpp) against a PyTorch float64 reference
written here from the definition, independent of tessel: tessel.torch.Shampoo with
preconditioner="eigenvalue_corrected" and kl_shampoo=True must agree to 1e-10 of the parameters'
largest magnitude after every step."""

import math

import pytest
import torch

import tessel.torch


def mode_product(x, q, k):
    """x with mode k multiplied by q (tensordot(x, q, ([k], [0])) with the mode kept in place)."""
    return torch.movedim(torch.tensordot(x, q, dims=([k], [0])), -1, k)


def factor_update(x, k):
    """The contraction of x with itself over every mode but k: (d_k, d_k)."""
    rows = torch.movedim(x, k, 0).reshape(x.shape[k], -1)
    return rows @ rows.T


def reference_kl_soap(w, grads, *, lr, beta1, beta2, epsilon, precondition_frequency,
                      keep_rotated=False):
    """KL-SOAP on one block (the whole parameter, every mode rotated), step by step.

    SOAP: factors F_k, their eigenvectors Q_k (eigh of F_k on amortized steps), corrected
    eigenvalues V of the gradient rotated into the eigenbasis, direction
    Q (x' / (sqrt(V / bc2) + epsilon)). KL: F_k accumulates G x_{i != k} P_i with
    P_i = Q_i diag((d_i max(lambda_i, epsilon))^(-1/2)) Q_i^T, lambda_i = diag(Q_i^T (F_i / bc2) Q_i)
    taken at Q_i's refresh (ones, with Q_i = I, before the first)."""
    w = w.clone()
    n = w.dim()
    factors = [torch.zeros(d, d, dtype=torch.float64) for d in w.shape]
    bases = [torch.eye(d, dtype=torch.float64) for d in w.shape]
    lambdas = [torch.ones(d, dtype=torch.float64) for d in w.shape]
    corrected = torch.zeros_like(w)
    filtered = torch.zeros_like(w)
    history = []
    for t, g in enumerate(grads, start=1):
        bc2 = 1 - beta2 ** t
        amortized = t % precondition_frequency == 0
        roots = [q @ torch.diag((d * torch.clamp(lam, min=epsilon)) ** -0.5) @ q.T
                 for q, lam, d in zip(bases, lambdas, w.shape)]
        for k in range(n):
            x = g
            for j in range(n):
                if j != k and n > 1:
                    x = mode_product(x, roots[j], j)
            factors[k] = beta2 * factors[k] + (1 - beta2) * factor_update(x, k)
        direction = (filtered + (1 - beta1) * (g - filtered)) / (1 - beta1 ** t)
        filtered = filtered + (1 - beta1) * (g - filtered)
        if amortized:
            for k in range(n):
                _, q = torch.linalg.eigh(factors[k])
                bases[k] = q
                lambdas[k] = torch.diagonal(q.T @ (factors[k] / bc2) @ q)
        rotated = g
        for k in range(n):
            rotated = mode_product(rotated, bases[k], k)
        corrected = beta2 * corrected + (1 - beta2) * rotated * rotated
        x = direction if beta1 != 0 else g
        for k in range(n):
            x = mode_product(x, bases[k], k)
        x = x / (torch.sqrt(corrected / bc2) + epsilon)
        for k in range(n):
            x = mode_product(x, bases[k].T, k)
        w = w - lr * x
        history.append(w.clone())
    return history


CASES = {
    "matrix": ((5, 7), dict(beta1=0.9)),
    "matrix, beta1 0": ((6, 4), dict(beta1=0.0)),
    "3-D": ((3, 4, 5), dict(beta1=0.9)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kl_soap_matches_a_pytorch_float64_reference(case):
    shape, extra = CASES[case]
    settings = dict(lr=0.05, beta2=0.95, epsilon=1e-3, precondition_frequency=2, **extra)
    torch.manual_seed(3)
    w0 = torch.randn(shape, dtype=torch.float64)
    grads = [torch.randn(shape, dtype=torch.float64) for _ in range(9)]
    expected = reference_kl_soap(w0, grads, **settings)

    w = w0.clone().requires_grad_(False)
    opt = tessel.torch.Shampoo([w], lr=settings["lr"], betas=(settings["beta1"], settings["beta2"]),
                               epsilon=settings["epsilon"],
                               precondition_frequency=settings["precondition_frequency"],
                               preconditioner="eigenvalue_corrected", kl_shampoo=True,
                               factor_matrix_dtype=torch.float64, max_preconditioner_dim=64,
                               target_parameter_dimensionality=math.inf)
    for step, (g, want) in enumerate(zip(grads, expected), start=1):
        w.grad = g.clone()
        opt.step()
        scale = want.abs().max().item()
        error = (w - want).abs().max().item() / scale
        assert error <= 1e-10, f"step {step}: relative difference {error:.3g}"


def test_kl_soap_state_holds_the_eigenvalue_estimates():
    torch.manual_seed(4)
    w = torch.randn(4, 6, dtype=torch.float64)
    opt = tessel.torch.Shampoo([w], preconditioner="eigenvalue_corrected", kl_shampoo=True,
                               betas=(0.9, 0.95), factor_matrix_dtype=torch.float64,
                               target_parameter_dimensionality=math.inf)
    w.grad = torch.randn(4, 6, dtype=torch.float64)
    opt.step()
    state = opt.state_dict()["state"][0]
    block = state["block_0"]["shampoo"]
    for j, d in enumerate((4, 6)):
        q = block["factor_matrices_eigenvectors"][str(j)]
        f = block["factor_matrices"][str(j)]
        lam = block["factor_matrices_eigenvalues"][str(j)]
        assert lam.shape == (d,)
        bc2 = 1 - 0.95
        assert torch.allclose(lam, torch.diagonal(q.T @ (f / bc2) @ q), rtol=1e-10, atol=1e-14)
