"""Notebook 01 — the Delta operator A(k, β) = I − β k kᵀ/‖k‖² (docs/design.md §2.1, §2.2)."""

from __future__ import annotations

import math

import numpy as np
import torch

from geolab import figures
from geolab.explore.view import F64, View, check_int, check_range, fixed, num
from geolab.operators import (
    delta_operator,
    delta_update,
)

DELTA_BETAS = np.linspace(-1.0, 3.0, 161)
DELTA_X = (-0.3, 0.9)


def delta_mode(beta: float, tol: float = 1e-9) -> str:
    """Name of the operator at β: identity (0), projection (1), reflection (2), or its regime."""
    for at, name in ((0.0, "identity"), (1.0, "projection onto k⊥ (erasure)"), (2.0, "reflection")):
        if abs(beta - at) <= tol:
            return name
    if beta < 0:
        return "stretch along k (β < 0)"
    if beta < 1:
        return "partial erasure along k"
    if beta < 2:
        return "erasure past zero: flips sign along k"
    return "reflection and stretch (β > 2)"


def delta_view(beta: float, phi: float, v: float, d: int = 4) -> View:
    """01: A(k, β) for k = (cos φ, sin φ, 0, …) ∈ R^d, and the update x' = x + β (v − kᵀx) k.

    Numbers: eigenvalues (d−1 equal 1, one equal 1−β), det (computed) vs 1−β, ‖AᵀA − I‖
    (0 only at β ∈ {0, 2}), kᵀx before and after the update, and (1−β) kᵀx + βv, the value the
    update writes along k (= v at β = 1: erase and write).
    """
    beta = check_range("beta", beta, -1.0, 3.0)
    phi = check_range("phi", phi, -math.pi, math.pi)
    v = check_range("v", v, -2.0, 2.0)
    d = check_int("d", d, 2, 16)
    k = torch.zeros(d, dtype=F64)
    k[0], k[1] = math.cos(phi), math.sin(phi)
    A = delta_operator(k, beta)
    eig = torch.linalg.eigvalsh(A)
    det = torch.linalg.det(A).item()
    eye = torch.eye(d, dtype=F64)
    orth = torch.linalg.matrix_norm(A.T @ A - eye).item()
    n_unit = int((eig - 1).abs().le(1e-9).sum())
    x = torch.zeros(d, dtype=F64)
    x[0], x[1] = DELTA_X
    x_new = delta_update(x, k, beta, torch.tensor(v, dtype=F64))
    kx, kx_new = (k @ x).item(), (k @ x_new).item()
    written = (1 - beta) * kx + beta * v
    dets = torch.linalg.det(
        delta_operator(k.expand(len(DELTA_BETAS), d), torch.tensor(DELTA_BETAS))
    )
    mode = delta_mode(beta)
    numbers = {
        "eigenvalues": eig.tolist(),
        "det": det,
        "det_closed_form": 1 - beta,
        "n_unit_eigenvalues": n_unit,
        "eig_along_k": 1 - beta,
        "orthogonality_error": orth,
        "mode": mode,
        "kx": kx,
        "kx_new": kx_new,
        "written": written,
        "x_new": x_new.tolist(),
    }
    readout = [
        (r"mode", mode),
        # d − 1 of them on k⊥, and k's own at β = 0: "(on k⊥)" read "4 of 4" there
        (r"eigenvalues equal to $1$", f"{n_unit} of {d}"),
        (r"eigenvalue along $k$", num(1 - beta)),
        (r"$\det A$ (computed)", fixed(det)),
        (r"$\lVert A^\top A - I\rVert_F$", num(orth)),
        (r"$k^\top x$ before", num(kx)),
        (r"$k^\top x'$ after", num(kx_new)),
        (r"$(1-\beta)\,k^\top x + \beta v$", num(written)),
    ]
    fig_spec = figures.spectrum_figure({"A(k, β)": eig}, title="Eigenvalues of A(k, β)")
    fig_det = figures.determinant_figure(DELTA_BETAS, dets, beta)
    fig_img = figures.unit_image_figure(A[:2, :2], direction=k[:2])
    fig_upd = figures.vectors_figure(
        {"x": x[:2], "x' = x + β(v − kᵀx)k": x_new[:2]}, direction=k[:2], title="Erase and write"
    )
    return View(
        numbers,
        readout,
        {"spectrum": fig_spec, "det": fig_det, "image": fig_img, "update": fig_upd},
    )
