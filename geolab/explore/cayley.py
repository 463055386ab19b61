"""Notebook 03 — Cayley rotation, Householder reflection and the E∆ hybrid.

The operators of docs/design.md §2.3 and §2.4, in float64.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from geolab import figures
from geolab.explore.view import F64, View, check_range, fixed, num
from geolab.operators import (
    cayley,
    cayley_angle,
    cayley_apply,
    gate_regularizer,
    householder,
    hybrid_operator,
    skew,
)

CAYLEY_WIDTH = 4
CAYLEY_BETAS = np.concatenate([np.linspace(0.0, 20.0, 201), [50.0, 100.0]])
GAMMAS = np.linspace(0.0, 1.0, 101)


def _cayley_vectors(angle: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """u = e₁, v = cos a·e₁ + sin a·e₂ (so ω = |sin a|), k = (e₂ + e₃)/√2 (geolab's choice)."""
    u = torch.zeros(CAYLEY_WIDTH, dtype=F64)
    v = torch.zeros(CAYLEY_WIDTH, dtype=F64)
    k = torch.zeros(CAYLEY_WIDTH, dtype=F64)
    u[0] = 1.0
    v[0], v[1] = math.cos(angle), math.sin(angle)
    k[1] = k[2] = 1 / math.sqrt(2)
    return u, v, k


def cayley_view(beta: float, angle: float, gamma: float) -> View:
    """03: Q = (I + cA)⁻¹(I − cA), A = u vᵀ − v uᵀ, c = β/2; H₂(k); G_γ = γQ + (1−γ)H₂(k).

    Numbers: θ = 2 arctan(cω) and θ/π (< 1 always), det Q (+1), ‖QᵀQ − I‖, the distance of Q's
    spectrum from −1 (> 0: −1 is never an eigenvalue), closed form vs dense solve, det H₂ (−1),
    the hybrid's singular values and det at γ, the regulariser 4γ(1−γ) and its autograd
    gradient 4 − 8γ (0 at γ = ½, E∆ Theorem 7.3).
    """
    beta = check_range("beta", beta, 0.0, 1e12)
    angle = check_range("angle", angle, 0.0, math.pi)
    gamma = check_range("gamma", gamma, 0.0, 1.0)
    u, v, k = _cayley_vectors(angle)
    d = CAYLEY_WIDTH
    eye = torch.eye(d, dtype=F64)
    Q = cayley(skew(u, v), beta)
    Q_closed = cayley_apply(eye, u, v, beta).T
    eig_q = torch.linalg.eigvals(Q)
    theta = cayley_angle(u, v, beta).item()
    H = householder(k)
    G = hybrid_operator(u, v, k, beta, gamma)
    sv = torch.linalg.svdvals(G)
    g = torch.tensor(gamma, dtype=F64, requires_grad=True)
    reg = gate_regularizer(g)
    (grad,) = torch.autograd.grad(reg, g)
    n = len(GAMMAS)
    path = hybrid_operator(
        u.expand(n, d), v.expand(n, d), k.expand(n, d), beta, torch.tensor(GAMMAS)
    )
    path_sv = torch.linalg.svdvals(path)
    thetas = cayley_angle(
        u.expand(len(CAYLEY_BETAS), d), v.expand(len(CAYLEY_BETAS), d), torch.tensor(CAYLEY_BETAS)
    )
    omega = math.sin(angle)  # ‖u‖‖v‖ sin a with unit u, v
    parallel = omega < 1e-12
    gg = torch.tensor(GAMMAS, requires_grad=True)
    (reg_grad,) = torch.autograd.grad(gate_regularizer(gg).sum(), gg)
    numbers = {
        "theta": theta,
        "theta_over_pi": theta / math.pi,
        "det_q": torch.linalg.det(Q).item(),
        "orthogonality_error": torch.linalg.matrix_norm(Q.T @ Q - eye).item(),
        "closed_vs_dense": (Q - Q_closed).abs().max().item(),
        "distance_to_minus_one": (eig_q + 1).abs().min().item(),
        "eig_q": eig_q.tolist(),
        "det_h": torch.linalg.det(H).item(),
        "householder_square_error": torch.linalg.matrix_norm(H @ H - eye).item(),
        "sv_min": sv.min().item(),
        "sv_max": sv.max().item(),
        "det_g": torch.linalg.det(G).item(),
        "regularizer": reg.item(),
        "regularizer_grad": grad.item(),
    }
    readout = [
        (
            r"rotation angle $\theta = 2\arctan(\beta\omega/2)$,"
            r" $\omega = \lVert u\rVert\lVert v\rVert\sin a = \sin a$",
            num(theta),
        ),
        (r"$\theta/\pi$", f"{theta / math.pi:.6f}"),
        (r"$\min_i \lvert\lambda_i(Q) + 1\rvert$", num(numbers["distance_to_minus_one"])),
        (r"$\det Q$", fixed(numbers["det_q"])),
        (r"$\lVert Q^\top Q - I\rVert_F$", num(numbers["orthogonality_error"])),
        (r"closed form vs dense solve", num(numbers["closed_vs_dense"])),
        (r"$\det H_2(k)$", fixed(numbers["det_h"])),
        (r"$G_\gamma$: $\sigma_{min}$ / $\sigma_{max}$", f"{num(sv.min())} / {num(sv.max())}"),
        (r"$\det G_\gamma$", fixed(numbers["det_g"])),
        (r"$L_{gate}(\gamma) = 4\gamma(1-\gamma)$", num(reg.item())),
        (r"$L_{gate}'(\gamma)$ (autograd; $0$ at $\gamma=\tfrac12$)", num(grad.item())),
    ]
    figs = {
        "spectrum": figures.spectrum_figure(
            {
                "Q (Cayley)": eig_q,
                "H₂(k) (Householder)": torch.linalg.eigvalsh(H),
                "G_γ (hybrid)": torch.linalg.eigvals(G),
            },
            title="Eigenvalues on the unit circle",
        ),
        "angle": figures.sweep_figure(
            CAYLEY_BETAS,
            {"θ(β)": thetas, "π": np.full(len(CAYLEY_BETAS), math.pi)},
            current=min(beta, CAYLEY_BETAS[-1]),
            current_on=("θ(β)",),
            notes={} if parallel else {"θ → π, but never π": (15.0, float(thetas[150]))},
            # u ∥ v (a = 0 or π): the generator is 0, Q = I and θ = 0 at every β
            title=(
                "u ∥ v: ω = 0, so Q = I and θ = 0 at every β"
                if parallel
                else f"θ rises towards π but never reaches it (ω = {omega:.3g})"
            ),
            x_title="β",
            y_title="θ",
        ),
        "hybrid": figures.sweep_figure(
            GAMMAS,
            {
                "σ_min(G_γ)": path_sv[:, -1],
                "σ_max(G_γ)": path_sv[:, 0],
                "det G_γ": torch.linalg.det(path),
            },
            current=gamma,
            title="The hybrid path: orthogonal only at γ = 0 and γ = 1",
            x_title="γ",
            y_title="value",
        ),
        "regularizer": figures.sweep_figure(
            GAMMAS,
            {"L_gate = 4γ(1−γ)": gate_regularizer(torch.tensor(GAMMAS)), "dL/dγ": reg_grad},
            current=gamma,
            marks={"γ = ½": 0.5},
            title="The midpoint regulariser is flat at γ = ½",
            x_title="γ",
            y_title="value",
        ),
    }
    return View(numbers, readout, figs)


def cayley_limit_view(beta: float, angle: float) -> View:
    """03's reveal: how far the Cayley angle stays from π, from β = 0.1 up to ``beta``.

    π − θ = π − 2 arctan(βω/2) = 2 arctan(2/(βω)) > 0 for every finite β (≈ 4/(βω) for large
    β), computed with ``cayley_angle`` on a log grid ending exactly at ``beta``; the marker sits
    at ``beta``. Numbers: θ/π and the distance of Q's spectrum from −1 at ``beta``.
    """
    beta = check_range("beta", beta, 0.1, 1e12)
    angle = check_range("angle", angle, 0.0, math.pi)
    u, v, _ = _cayley_vectors(angle)
    betas = np.logspace(-1.0, math.log10(beta), 161)
    betas[-1] = beta
    thetas = cayley_angle(
        u.expand(len(betas), CAYLEY_WIDTH), v.expand(len(betas), CAYLEY_WIDTH), torch.tensor(betas)
    )
    gap = math.pi - thetas
    far = cayley_view(beta, angle, 0.5).numbers
    numbers = {
        "beta": beta,
        "theta_over_pi": far["theta_over_pi"],
        "gap": float(gap[-1]),
        "distance_to_minus_one": far["distance_to_minus_one"],
    }
    readout = [
        (r"$\theta/\pi$ at this $\beta$", f"{far['theta_over_pi']:.6f}"),
        (r"$\pi - \theta$", num(numbers["gap"])),
        (r"$\min_i \lvert\lambda_i(Q) + 1\rvert$", num(far["distance_to_minus_one"])),
    ]
    fig = figures.sweep_figure(
        betas,
        {"π − θ(β)": gap},
        current=beta,
        title=f"How far θ stays from π, up to β = {beta:g} (log–log)",
        x_title="β (log)",
        y_title="π − θ (log)",
        log_x=True,
        log_y=True,
    )
    return View(numbers, readout, {"gap": fig})
