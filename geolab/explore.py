"""View models of the explorers: slider values -> the numbers and figures a notebook shows.

One function per notebook (``delta_view`` for 01, ``mgt_view`` for 02, ``cayley_view`` for 03,
``rank_view`` for 04, ``streams_view`` for 05). Each is pure in its arguments (seeded, no global
state except a small cache of built models) and returns a ``View``: raw ``numbers`` (what tests
check), a ``readout`` of (LaTeX label, formatted value) rows (what the learner reads) and plotly
``figures`` from ``geolab.figures``. The marimo notebooks, the Jupyter widgets
(``geolab.widgets``), the tests and the latency benchmark all call these same functions, so a test
that injects slider values exercises exactly the code path a learner's slider does.

Operator algebra (01, 03) runs in float64 so the printed invariants (‖QᵀQ − I‖, det) show the
maths, not float32 rounding; the model-based views (02, 04) and Sinkhorn (05) run in float32, as
the rules do.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import torch

from geolab import figures
from geolab.config import GeoConfig
from geolab.layers import CausalSelfAttention
from geolab.metrics import (
    beta_stats,
    composite_gain_curve,
    effective_rank,
    rank_collapse_residual,
)
from geolab.model import GeoTransformer, count_params
from geolab.operators import (
    cayley,
    cayley_angle,
    cayley_apply,
    delta_operator,
    delta_update,
    gate_regularizer,
    householder,
    hybrid_operator,
    sinkhorn,
    skew,
)
from geolab.probe import record
from geolab.rules import RESIDUALS

F64 = torch.float64


def notebook_cache(fn, maxsize: int = 32):
    """Memoise a view function for a notebook: ``mo.cache`` (keyed on the slider values) inside
    marimo's runtime, ``functools.lru_cache`` elsewhere — ``mo.cache`` fails inside a Jupyter
    kernel running an exported notebook, where ``mo.app_meta().mode`` is None."""
    import marimo as mo

    return mo.cache(fn) if mo.app_meta().mode else functools.lru_cache(maxsize=maxsize)(fn)


@dataclass
class View:
    """What one explorer shows for one set of slider values."""

    numbers: dict[str, object]
    readout: list[tuple[str, str]]
    figures: dict[str, go.Figure] = field(default_factory=dict)

    def markdown(self) -> str:
        """The readout as a two-column markdown table (LaTeX labels render in marimo)."""
        rows = "\n".join(f"| {label} | {value} |" for label, value in self.readout)
        return "| quantity | value |\n|:--|--:|\n" + rows

    def html(self) -> str:
        """The readout as an HTML table (for ipywidgets.HTMLMath, which renders the LaTeX)."""
        rows = "".join(
            f"<tr><td>{label}</td><td style='text-align:right'><code>{value}</code></td></tr>"
            for label, value in self.readout
        )
        return f"<table>{rows}</table>"


def _num(x: float) -> str:
    """Fixed notation for ordinary sizes, scientific for tiny or huge ones (1e-16 stays visible)."""
    x = float(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.4f}"
    return f"{x:.2e}"


def _fixed(x: float) -> str:
    """Four decimals with −0 shown as 0: for quantities whose exact value is the point (det)."""
    return f"{float(x) + 0.0:.4f}".replace("-0.0000", "0.0000")


def _check_range(name: str, value: float, low: float, high: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{name}={value!r} is not allowed; expected a number in [{low}, {high}]")
    return value


def _check_int(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or int(value) != value or not low <= value <= high:
        raise ValueError(f"{name}={value!r} is not allowed; expected an integer in [{low}, {high}]")
    return int(value)


# ---------------------------------------------------------------------------------------------
# 01 — the Delta operator A(k, β) = I − β k kᵀ/‖k‖² (spec §2.1, §2.2)

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
    beta = _check_range("beta", beta, -1.0, 3.0)
    phi = _check_range("phi", phi, -math.pi, math.pi)
    v = _check_range("v", v, -2.0, 2.0)
    d = _check_int("d", d, 2, 16)
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
        (r"eigenvalues equal to $1$ (on $k^\perp$)", f"{n_unit} of {d}"),
        (r"eigenvalue along $k$: $1-\beta$", _num(1 - beta)),
        (r"$\det A$ (computed)", _fixed(det)),
        (r"$\lVert A^\top A - I\rVert_F$", _num(orth)),
        (r"$k^\top x$ before", _num(kx)),
        (r"$k^\top x'$ after", _num(kx_new)),
        (r"$(1-\beta)\,k^\top x + \beta v$", _num(written)),
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


# ---------------------------------------------------------------------------------------------
# 02 — the MGT block (spec §2.6): gates, β range, and the Jacobian critique

MGT_WIDTH = 16


def _mgt_rule(lam: float, eps: float, alpha: float, beta0: float, w_scale: float, seed: int):
    """geolab's real ``mgt`` rule and a real causal attention sublayer, seeded.

    W_β is drawn N(0, w_scale²/D) instead of the init's 0 (geolab's choice, to show a controller
    whose β depends on the token, as after training); everything else is the rule's own init.
    """
    cfg = GeoConfig(
        residual="mgt",
        n_layer=1,
        d_model=MGT_WIDTH,
        n_head=2,
        seq_len=64,
        vocab_size=8,
        lam=lam,
        eps=eps,
        alpha0=alpha,
        beta0=beta0,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        rule = RESIDUALS["mgt"](cfg)
        attn = CausalSelfAttention(MGT_WIDTH, 2, 0.0, False, 0.02)
        with torch.no_grad():
            rule.w_beta.weight.normal_(0.0, w_scale / math.sqrt(MGT_WIDTH))
        x = torch.randn(1, 64, MGT_WIDTH)
    return rule.eval(), attn.eval(), x


def mgt_view(
    lam: float, eps: float, alpha: float, beta0: float, w_scale: float = 1.0, seed: int = 0
) -> View:
    """02: X' = X + β ⊙ (F(LN X) ⊙ σ(LN(X W_gate)) − α X), β = λ·tanh(X W_β + b_β) + ε.

    Uses geolab's ``mgt`` rule on 64 random tokens of width 16 with a real attention sublayer.
    Numbers: the allowed β range (−λ+ε, λ+ε), the observed β statistics over tokens × channels
    (mean, fraction negative), the per-channel retention 1 − αβ of the old state (≈1:
    accumulation, ≈0: erasure, >1: amplification when β < 0), and the Jacobian ∂x'/∂x of the
    update on one token vs the rank-1 Delta operator A(k, β₀): the Delta operator has d−1
    eigenvalues exactly 1 (J − I has rank 1), the elementwise update has none (rank d).
    """
    lam = _check_range("lam", lam, 0.05, 2.0)
    eps = _check_range("eps", eps, -0.5, 0.5)
    alpha = _check_range("alpha", alpha, 0.0, 2.0)
    beta0 = _check_range("beta0", beta0, -2.5, 2.5)
    w_scale = _check_range("w_scale", w_scale, 0.0, 5.0)
    low, high = -lam + eps, lam + eps
    if not low < beta0 < high:
        raise ValueError(
            f"beta0={beta0} is not allowed; MGT's β = λ·tanh(·)+ε needs β₀ in "
            f"({low:g}, {high:g}) for λ={lam:g}, ε={eps:g}"
        )
    rule, attn, x = _mgt_rule(lam, eps, alpha, beta0, w_scale, seed)
    with torch.no_grad():
        x_new = rule(x, attn)
        beta, gate = rule.gates["beta"], rule.gates["gate"]
        v_raw = attn(rule.ln(x))
    stats = beta_stats(beta, bins=40)
    retention = 1 - alpha * beta
    token = x[0, 0]
    plain = beta[0, 0] * (v_raw[0, 0] - alpha * token)
    gated = beta[0, 0] * (v_raw[0, 0] * gate[0, 0] - alpha * token)

    def one_token(t: torch.Tensor) -> torch.Tensor:
        return rule(t.view(1, 1, -1), attn).view(-1)

    J = torch.autograd.functional.jacobian(one_token, token, vectorize=True)
    eig_mgt = torch.linalg.eigvals(J)
    k = v_raw[0, 0].double()
    A = delta_operator(k, beta0)
    eig_delta = torch.linalg.eigvalsh(A)
    eye = torch.eye(MGT_WIDTH, dtype=F64)
    rank_mgt = int(torch.linalg.matrix_rank(J.double() - eye, atol=1e-5))
    rank_delta = int(torch.linalg.matrix_rank(A - eye, atol=1e-9))
    unit_mgt = int((eig_mgt - 1).abs().le(1e-5).sum())
    unit_delta = int((eig_delta - 1).abs().le(1e-6).sum())
    numbers = {
        "beta_low": low,
        "beta_high": high,
        "beta_mean": stats["mean"],
        "beta_min": stats["min"],
        "beta_max": stats["max"],
        "frac_negative": stats["frac_negative"],
        "retention_min": retention.min().item(),
        "retention_max": retention.max().item(),
        "gate_mean": gate.mean().item(),
        "update_error": (x[0, 0] + gated - x_new[0, 0]).abs().max().item(),
        "unit_eigs_mgt": unit_mgt,
        "unit_eigs_delta": unit_delta,
        "rank_mgt": rank_mgt,
        "rank_delta": rank_delta,
        "eig_mgt": eig_mgt.tolist(),
        "eig_delta": eig_delta.tolist(),
    }
    d = MGT_WIDTH
    readout = [
        (
            r"allowed $\beta$ range $(-\lambda+\epsilon,\ \lambda+\epsilon)$",
            f"({low:.3f}, {high:.3f})",
        ),
        (
            r"observed $\beta$: min / mean / max",
            f"{stats['min']:.3f} / {stats['mean']:.3f} / {stats['max']:.3f}",
        ),
        (r"fraction $\beta < 0$", f"{stats['frac_negative']:.3f}"),
        (
            r"retention $1-\alpha\beta$: min / max",
            f"{numbers['retention_min']:.3f} / {numbers['retention_max']:.3f}",
        ),
        (r"mean tangent gate $\sigma(\mathrm{LN}(XW_{gate}))$", f"{numbers['gate_mean']:.3f}"),
        (
            r"eigenvalues $=1$: Delta $A(k,\beta_0)$ vs MGT $J$",
            f"{unit_delta} of {d} vs {unit_mgt} of {d}",
        ),
        (r"$\mathrm{rank}(A - I)$ vs $\mathrm{rank}(J - I)$", f"{rank_delta} vs {rank_mgt}"),
    ]
    figs = {
        "beta": figures.beta_histogram_figure(beta, low, high),
        "gate": figures.bars_figure(
            {"x (old state)": token, "β⊙(V − αx), no gate": plain, "β⊙(V⊙g − αx), gated": gated},
            title="One token: the update with and without the tangent gate",
            x_title="channel",
        ),
        "jacobian": figures.spectrum_figure(
            {"MGT Jacobian ∂x'/∂x": eig_mgt, "Delta operator A(k, β₀)": eig_delta},
            title="Jacobian spectrum: elementwise MGT vs rank-1 Delta",
        ),
    }
    return View(numbers, readout, figs)


# ---------------------------------------------------------------------------------------------
# 03 — Cayley rotation, Householder reflection and the E∆ hybrid (spec §2.3, §2.4)

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
    gradient 4 − 8γ (0 at γ = ½, Theorem 7.3).
    """
    beta = _check_range("beta", beta, 0.0, 1e12)
    angle = _check_range("angle", angle, 0.0, math.pi)
    gamma = _check_range("gamma", gamma, 0.0, 1.0)
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
        (r"rotation angle $\theta = 2\arctan(\beta\omega/2)$", _num(theta)),
        (r"$\theta/\pi$ (always $< 1$)", f"{theta / math.pi:.6f}"),
        (
            r"$\min_i \lvert\lambda_i(Q) + 1\rvert$ (never $0$)",
            _num(numbers["distance_to_minus_one"]),
        ),
        (r"$\det Q$", _fixed(numbers["det_q"])),
        (r"$\lVert Q^\top Q - I\rVert_F$", _num(numbers["orthogonality_error"])),
        (r"closed form vs dense solve", _num(numbers["closed_vs_dense"])),
        (r"$\det H_2(k)$", _fixed(numbers["det_h"])),
        (r"$G_\gamma$: $\sigma_{min}$ / $\sigma_{max}$", f"{_num(sv.min())} / {_num(sv.max())}"),
        (r"$\det G_\gamma$", _fixed(numbers["det_g"])),
        (r"$L_{gate}(\gamma) = 4\gamma(1-\gamma)$", _num(reg.item())),
        (r"$L_{gate}'(\gamma)$ (autograd; $0$ at $\gamma=\tfrac12$)", _num(grad.item())),
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
            title="θ approaches π but never reaches it",
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


# ---------------------------------------------------------------------------------------------
# 04 — rank collapse in deep stacks (spec §5, §8 protocol 1)

RANK_DEPTHS = (12, 24, 48, 100, 200)
REFERENCE = "pure attention"
_VOCAB = 256
_MODELS: OrderedDict = OrderedDict()
_MODEL_PARAM_BUDGET = 400_000_000


def rank_rules() -> tuple[str, ...]:
    """The rules 04 offers: every registered rule (yours too) but ``noskip``, the reference's."""
    return tuple(name for name in RESIDUALS if name != "noskip")


def _residual(rule: str) -> str:
    return "noskip" if rule == REFERENCE else rule


def rule_fields(rule: str, beta0: float, lam: float, alpha0: float, gamma0: float) -> dict:
    """The GeoConfig fields the 04 sliders set for one rule: those among its ``init_fields``.

    β₀, λ, α₀ reach the MGT rules with a Delta controller and γ₀ ``edelta``; every other rule
    keeps its own defaults, so moving a slider recomputes only the rules it changes.
    """
    sliders = {"beta0": beta0, "lam": lam, "alpha0": alpha0, "gamma0": gamma0}
    wanted = RESIDUALS[_residual(rule)].init_fields
    return {name: value for name, value in sliders.items() if name in wanted}


def rank_config(rule: str, n_layer: int, d_model: int, seq_len: int, **fields) -> GeoConfig:
    """The token-model GeoConfig of one 04 curve; ``REFERENCE`` is ``noskip`` with
    ``mlp=False``, Dong et al. 2021's pure attention."""
    return GeoConfig(
        residual=_residual(rule),
        n_layer=n_layer,
        d_model=d_model,
        n_head=4,
        seq_len=seq_len,
        vocab_size=_VOCAB,
        mlp=rule != REFERENCE,
        **fields,
    )


def build_model(cfg: GeoConfig, seed: int) -> GeoTransformer:
    """GeoTransformer(cfg) with weights drawn from ``seed`` (the global RNG is left untouched).

    Built models are kept (least recently used first out, at most 400M parameters ≈ 1.6 GB) by
    everything but the slider constants, which each rule re-applies to a kept model
    (``Rule.reset_init``: init constants only, no random draw, so the result equals a fresh build
    with the same seed — tested). A slider move at 200 layers is then one forward pass.
    """
    key = (cfg.residual, cfg.n_layer, cfg.d_model, cfg.seq_len, cfg.mlp, seed)
    model = _MODELS.pop(key, None)
    if model is None:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = GeoTransformer(cfg).eval()
    _MODELS[key] = model
    while sum(count_params(m) for m in _MODELS.values()) > _MODEL_PARAM_BUDGET:
        _MODELS.popitem(last=False)
    for rule in model.rules:
        rule.reset_init(cfg)
    model.cfg = cfg
    return model


def rank_tokens(seq_len: int, seed: int) -> torch.Tensor:
    """One seeded sequence of random tokens, (1, seq_len) int64."""
    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randint(0, _VOCAB, (1, seq_len), generator=gen)


@torch.inference_mode()
def layer_profile(model: GeoTransformer, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Effective rank (Eq. 8) and Dong's residual after every *layer* (its last residual step),
    stream states merged as the head sees them. Returns two (n_layer,) float arrays."""
    with record(model) as rec:
        model(x)
    per_layer = len(rec.states) // model.cfg.n_layer
    merge = model.rule_cls.merge
    states = torch.stack([merge(s) for s in rec.states[per_layer - 1 :: per_layer]])
    ranks = effective_rank(states).mean(dim=-1)
    residual = rank_collapse_residual(states).mean(dim=-1)
    return ranks.numpy(), residual.numpy()


@functools.lru_cache(maxsize=256)
def rule_profile(
    rule: str, n_layer: int, d_model: int, seq_len: int, seed: int, fields: tuple
) -> tuple[np.ndarray, np.ndarray]:
    """``layer_profile`` of one 04 curve, cached by everything that can change it (the arrays
    are read-only: every caller shares them)."""
    cfg = rank_config(rule, n_layer, d_model, seq_len, **dict(fields))
    ranks, residual = layer_profile(build_model(cfg, seed), rank_tokens(seq_len, seed))
    ranks.setflags(write=False)
    residual.setflags(write=False)
    return ranks, residual


def rank_view(
    rules: tuple[str, ...] | list[str],
    n_layer: int,
    beta0: float = 0.5,
    lam: float = 1.0,
    alpha0: float = 0.1,
    gamma0: float = 0.5,
    d_model: int = 128,
    seq_len: int = 32,
    reference: bool = True,
    seed: int = 0,
) -> View:
    """04: effective rank and Dong's residual per layer for each rule at init, one seed.

    Curves have length n_layer (the state after each layer). ``reference`` adds pure attention
    (``noskip``, ``mlp=False``), whose rank collapses doubly exponentially (Dong et al. 2021).
    Slider values that a rule's config rejects (e.g. β₀ outside (−λ, λ) for MGT) raise the
    config's ValueError.
    """
    n_layer = _check_int("n_layer", n_layer, 1, 400)
    allowed = rank_rules()
    unknown = [r for r in rules if r not in allowed]
    if unknown:
        raise ValueError(f"rules: {unknown} not allowed; choose from {', '.join(allowed)}")
    names = list(dict.fromkeys(rules)) + ([REFERENCE] if reference else [])
    ranks, residuals = {}, {}
    for name in names:
        fields = rule_fields(name, beta0, lam, alpha0, gamma0)
        ranks[name], residuals[name] = rule_profile(
            name, n_layer, d_model, seq_len, seed, tuple(sorted(fields.items()))
        )
    final = {name: float(r[-1]) for name, r in ranks.items()}
    numbers = {
        "ranks": ranks,
        "residuals": residuals,
        "final_rank": final,
        "final_residual": {name: float(r[-1]) for name, r in residuals.items()},
    }
    readout = [
        (f"`{name}`: rank / residual at layer {n_layer}", f"{final[name]:.3f} / {_num(r[-1])}")
        for name, r in residuals.items()
    ]
    fig = figures.rank_figure(
        ranks, residuals, title=f"Effective rank per layer at init (L = {n_layer}, D = {d_model})"
    )
    return View(numbers, readout, {"rank": fig})


# ---------------------------------------------------------------------------------------------
# 05 — streams: Sinkhorn and the gain of composite mixing products (spec §2.5, §3.3)

STREAMS = 4
MAX_ITERS = 50


def mixers(family: str, depth: int, spread: float, iters: int, seed: int) -> torch.Tensor:
    """``depth`` seeded n×n stream mixers of one family, (depth, n, n) float64.

    HC: I + tanh(σG) (unconstrained, tanh-bounded entries, spec §3.3); mHC: Sinkhorn(σG) with
    ``iters`` iterations in float32, as mHC runs it; orthogonal: the dense Cayley map of the
    skew part of σG (exactly orthogonal, as JPmHC's mixer aims to be). G ~ N(0, 1) entrywise,
    the same G for all three.
    """
    gen = torch.Generator().manual_seed(seed)
    G = spread * torch.randn(depth, STREAMS, STREAMS, generator=gen, dtype=F64)
    if family == "HC":
        return torch.eye(STREAMS, dtype=F64) + torch.tanh(G)
    if family == "mHC":
        return sinkhorn(G.float(), iters=iters).double()
    if family == "orthogonal":
        return cayley((G - G.transpose(-1, -2)) / 2, 1.0)
    raise ValueError(f"family={family!r} is not allowed; choose HC, mHC or orthogonal")


ERROR_ITERS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50)


def _stream_logits(spread: float, seed: int) -> torch.Tensor:
    """One seeded n×n logit matrix with entries N(0, spread²), float32 as mHC runs it."""
    gen = torch.Generator().manual_seed(seed + 7919)
    return spread * torch.randn(STREAMS, STREAMS, generator=gen)


@functools.lru_cache(maxsize=64)
def sinkhorn_errors(spread: float, seed: int) -> tuple[float, ...]:
    """Column-sum error of ``sinkhorn`` after each count in ``ERROR_ITERS`` (cached: it does
    not depend on the iteration or depth sliders)."""
    logits = _stream_logits(spread, seed)
    return tuple(sinkhorn(logits, iters=i, return_error=True)[1].item() for i in ERROR_ITERS)


def streams_view(iters: int, spread: float, depth: int, seed: int = 0) -> View:
    """05: Sinkhorn on one 4×4 logit matrix, and Amax gains of composite mixers over depth.

    Numbers: after ``iters`` iterations the row sums are exact and the column sums are off by
    an error that shrinks with iterations and grows with the logit spread (spec §2.5); the
    spectral norm; the final forward (row) and backward (column) Amax gains for HC, mHC and
    orthogonal mixers of the same random draws.
    """
    iters = _check_int("iters", iters, 1, MAX_ITERS)
    spread = _check_range("spread", spread, 0.0, 10.0)
    depth = _check_int("depth", depth, 1, 1000)
    logits = _stream_logits(spread, seed)
    M, err = sinkhorn(logits, iters=iters, return_error=True)
    errors = sinkhorn_errors(spread, seed)
    first = sinkhorn(logits, iters=1)
    start = torch.exp(logits - logits.max())
    gains, finals = {}, {}
    for family in ("HC", "mHC", "orthogonal"):
        fwd, bwd = composite_gain_curve(mixers(family, depth, spread, iters, seed))
        gains[f"{family} forward (rows)"] = fwd
        gains[f"{family} backward (cols)"] = bwd
        finals[family] = (fwd[-1].item(), bwd[-1].item())
    numbers = {
        "row_error": (M.sum(-1) - 1).abs().max().item(),
        "col_error": err.item(),
        "spectral_norm": torch.linalg.matrix_norm(M, ord=2).item(),
        "min_entry": M.min().item(),
        "errors": errors,
        "final_gain": finals,
    }
    readout = [
        (
            r"max $\lvert\text{row sum} - 1\rvert$ (the last step normalises rows)",
            _num(numbers["row_error"]),
        ),
        (r"max $\lvert\text{column sum} - 1\rvert$ (the Sinkhorn residual)", _num(err.item())),
        (r"$\lVert M\rVert_2$", _num(numbers["spectral_norm"])),
    ] + [
        (f"{family}: Amax gain at depth {depth}, forward / backward", f"{_num(f)} / {_num(b)}")
        for family, (f, b) in finals.items()
    ]
    figs = {
        "heatmaps": figures.heatmaps_figure(
            [start / start.sum(-1, keepdim=True), first, M],
            ["exp(logits), rows normalised", "1 iteration", f"{iters} iterations"],
        ),
        "error": figures.sweep_figure(
            ERROR_ITERS,
            # An exactly converged float32 error is 0; floor it so the log axis can show it.
            {"max |column sum − 1|": np.maximum(errors, 1e-9)},
            current=iters,
            log_y=True,
            title="Finite Sinkhorn is only approximately doubly stochastic",
            x_title="iterations",
            y_title="error",
        ),
        "gain": figures.composite_gain_figure(np.arange(1, depth + 1), gains),
    }
    return View(numbers, readout, figs)
