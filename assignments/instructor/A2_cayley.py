import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", html_head_file="../offline_head.html")

with app.setup:
    import marimo as mo
    import torch

    from geolab.assignments.catalog import feedback
    from geolab.assignments.checks import demo


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # A2 — The Cayley rotation

    The E∆-MHC-Geo transformer (Shahmansoori 2026, arXiv:2605.06729) mixes its residual state with a
    *rotation* built from two vectors $u, v \in \mathbb{R}^d$. Their generator

    $$A = u v^\top - v u^\top$$

    is skew-symmetric, and the Cayley transform $Q = (I + cA)^{-1}(I - cA)$, $c = \beta/2$,
    turns any skew-symmetric matrix into a rotation. Because $A$ has rank 2, $A^3 = -\omega^2 A$
    with $\omega^2 = \lVert u\rVert^2\lVert v\rVert^2 - (u\cdot v)^2$, and the inverse collapses
    to a closed form that needs no linear solve:

    $$Q = I - \frac{2c}{1 + c^2\omega^2}\,A + \frac{2c^2}{1 + c^2\omega^2}\,A^2,
    \qquad Ax = u\,(v\cdot x) - v\,(u\cdot x).$$

    You will implement it, prove numerically that it is a rotation, find its angle, see why it
    can never reach $-1$ (the *inversion problem*,
    [E∆ Theorem 4.6, §4](https://arxiv.org/html/2605.06729v1#S4)), then add the Householder
    reflection and the hybrid gate that E∆ uses to get around it.

    Replace each `raise NotImplementedError` with your code and press **Ctrl+Enter** (⌘+Enter on
    a Mac) in that cell: the box under the stub re-checks it (amber: waiting, red: what failed
    and on which input, green: done). Use
    `torch` only — calling the geolab function you are writing, or a linear solver inside
    `cayley_apply`, is reported as a failure. Every function must accept leading batch
    dimensions `(..., d)` and `beta`, `gamma` as floats or tensors of the leading shape.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. The generator

    `skew(u, v)` returns the `(..., d, d)` matrices $u v^\top - v u^\top$.
    """)
    return


@app.function
def skew(u, v):
    """A = u vᵀ − v uᵀ.  u, v: (..., d) -> (..., d, d)."""
    ### BEGIN SOLUTION
    return u.unsqueeze(-1) * v.unsqueeze(-2) - v.unsqueeze(-1) * u.unsqueeze(-2)
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "skew", skew)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The closed form

    `cayley_apply(x, u, v, beta)` returns $Qx$ in $O(d)$ per vector: compute $Ax$ and
    $A(Ax)$ with dot products only (never form a $d\times d$ matrix, never solve). The checks
    compare with the dense $(I + cA)^{-1}(I - cA)\,x$, and test that lengths are kept, that
    vectors orthogonal to $u$ and $v$ do not move, and what happens for $\beta = 0$,
    $u \parallel v$ and $\beta = 10^6$.
    """)
    return


@app.function
def cayley_apply(x, u, v, beta):
    """Q x with Q = (I + cA)⁻¹(I − cA), c = β/2, by the closed form.  x, u, v: (..., d)."""
    ### BEGIN SOLUTION
    c = torch.as_tensor(beta, dtype=x.dtype)[..., None] / 2
    uu, vv, uv = (
        (u * u).sum(-1, keepdim=True),
        (v * v).sum(-1, keepdim=True),
        (u * v).sum(-1, keepdim=True),
    )
    omega2 = (uu * vv - uv**2).clamp_min(0)
    ax = u * (v * x).sum(-1, keepdim=True) - v * (u * x).sum(-1, keepdim=True)
    aax = u * (v * ax).sum(-1, keepdim=True) - v * (u * ax).sum(-1, keepdim=True)
    den = 1 + c**2 * omega2
    return x - 2 * c / den * ax + 2 * c**2 / den * aax
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "cayley_apply", cayley_apply)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. The angle

    $Q$ rotates the plane $\mathrm{span}\{u, v\}$ by $\theta = 2\arctan(c\,\omega)$ and fixes
    its complement. Write `cayley_angle(u, v, beta)` (shape `(...)`); one check measures the
    angle between $x$ and $Qx$ for an $x$ in the plane and compares.
    """)
    return


@app.function
def cayley_angle(u, v, beta):
    """θ = 2·arctan(β/2 · ω), ω² = ‖u‖²‖v‖² − (u·v)².  u, v: (..., d) -> (...)."""
    ### BEGIN SOLUTION
    c = torch.as_tensor(beta, dtype=u.dtype) / 2
    omega2 = ((u * u).sum(-1) * (v * v).sum(-1) - (u * v).sum(-1) ** 2).clamp_min(0)
    return 2 * torch.atan(c * omega2.sqrt())
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "cayley_angle", cayley_angle)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. Prove it is a rotation — numerically

    Build the dense `(d, d)` matrix $Q$ by applying **your** `cayley_apply` to the columns of
    the identity (batched: one call). The checks then test $Q^\top Q = I$ and $\det Q = +1$.
    The table under the checks shows $\lVert Q^\top Q - I\rVert$ for growing $\beta$.
    """)
    return


@app.function
def cayley_matrix(u, v, beta):
    """The dense rotation Q (d, d) built from cayley_apply.  u, v: (d,); beta: float."""
    ### BEGIN SOLUTION
    eye = torch.eye(u.shape[-1], dtype=u.dtype)
    return cayley_apply(eye, u, v, beta).T
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "cayley_matrix", cayley_matrix)
    return


@app.cell
def _():
    def _table():
        g = torch.Generator().manual_seed(0)
        u, v = torch.randn(2, 8, generator=g, dtype=torch.float64)
        rows = []
        for beta in (0.1, 1.0, 10.0, 1e3, 1e6):
            Q = cayley_matrix(u, v, beta)
            err = torch.linalg.matrix_norm(Q.T @ Q - torch.eye(8, dtype=torch.float64)).item()
            rows.append(f"| {beta:g} | {err:.2e} | {torch.linalg.det(Q).item():+.6f} |")
        return mo.md("| β | ‖QᵀQ − I‖ | det Q |\n|---|---|---|\n" + "\n".join(rows))

    demo(_table, "Fill in cayley_apply and cayley_matrix to see the table.")
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. Why −1 is out of reach

    The eigenvalues of $Q$ are $e^{\pm i\theta}$ and $1$ ($d-2$ times). Reflecting a direction,
    $x \mapsto -x$, would need an eigenvalue $-1$, i.e. $\theta = \pi$. Write
    `minus_one_gap(u, v, beta)`: the smallest distance $\min_\lambda |\lambda + 1|$ from the
    spectrum of $Q$ to $-1$, **from a formula** in $c\,\omega$ (eigen-solvers are forbidden
    here). Then explain below, in one or two sentences, why the gap is positive for every finite
    $\beta$, and how fast it closes as $\beta \to \infty$.
    """)
    return


@app.function
def minus_one_gap(u, v, beta):
    """min over eigenvalues λ of Q(u, v, β) of |λ + 1| (a scalar tensor), from the formula."""
    ### BEGIN SOLUTION
    # |e^{iθ} + 1| = 2 cos(θ/2) = 2 / sqrt(1 + tan²(θ/2)) with tan(θ/2) = cω; no cos near π/2
    c = torch.as_tensor(beta, dtype=u.dtype) / 2
    omega2 = ((u * u).sum(-1) * (v * v).sum(-1) - (u * v).sum(-1) ** 2).clamp_min(0)
    return 2 / torch.sqrt(1 + c**2 * omega2)
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "minus_one_gap", minus_one_gap)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    *Your explanation (graded by your teacher):*
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. The Householder branch

    A reflection reaches $-1$ at once: $H_2(k) = I - 2\hat k\hat k^\top$ sends $k \mapsto -k$.
    Write `householder_apply(x, k)` $= x - 2\hat k(\hat k\cdot x)$ in $O(d)$, $\hat k = k/\lVert
    k\rVert$.
    """)
    return


@app.function
def householder_apply(x, k):
    """H₂(k) x = x − 2 k̂ (k̂ᵀx).  x, k: (..., d) -> (..., d)."""
    ### BEGIN SOLUTION
    kh = k / torch.linalg.vector_norm(k, dim=-1, keepdim=True)
    return x - 2 * kh * (kh * x).sum(-1, keepdim=True)
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "householder_apply", householder_apply)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 7. The hybrid gate

    E∆-MHC-Geo blends both: $G_\gamma = \gamma\,Q + (1-\gamma)\,H_2(k)$ with a learned gate
    $\gamma \in (0, 1)$. Write `hybrid_apply(x, u, v, k, beta, gamma)` from your two functions.
    A check shows that $G_{1/2}$ is **not** orthogonal — a convex blend of two rotations
    shrinks some directions — which is why the model is pushed toward $\gamma \in \{0, 1\}$ by
    the regulariser $r(\gamma) = 4\gamma(1-\gamma)$. Write `gate_regularizer(gamma)` too; its
    last check is [E∆ Theorem 7.3, §7](https://arxiv.org/html/2605.06729v1#S7): any symmetric
    $r(\gamma) = r(1-\gamma)$ has zero slope at $\gamma = \tfrac12$, exactly where the gate starts.
    """)
    return


@app.function
def hybrid_apply(x, u, v, k, beta, gamma):
    """G_γ x = γ Q x + (1 − γ) H₂(k) x.  x, u, v, k: (..., d); beta, gamma: float or (...)."""
    ### BEGIN SOLUTION
    g = torch.as_tensor(gamma, dtype=x.dtype)[..., None]
    return g * cayley_apply(x, u, v, beta) + (1 - g) * householder_apply(x, k)
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "hybrid_apply", hybrid_apply)
    return


@app.function
def gate_regularizer(gamma):
    """r(γ) = 4γ(1 − γ), elementwise and differentiable."""
    ### BEGIN SOLUTION
    return 4 * gamma * (1 - gamma)
    ### END SOLUTION


@app.cell
def _():
    feedback("A2", "gate_regularizer", gate_regularizer)
    return


@app.cell(hide_code=True)
def _():
    gamma_slider = mo.ui.slider(0.0, 1.0, step=0.05, value=0.5, label="γ", show_value=True)
    return (gamma_slider,)


@app.cell
def _(gamma_slider):
    def _singular_values():
        g = torch.Generator().manual_seed(1)
        u, v, k = torch.randn(3, 6, generator=g, dtype=torch.float64)
        eye = torch.eye(6, dtype=torch.float64)
        G = hybrid_apply(eye, u, v, k, 1.0, gamma_slider.value)
        s = torch.linalg.svdvals(G).tolist()
        return mo.md(f"singular values of G_γ: {[round(x, 4) for x in s]}")

    mo.vstack([gamma_slider, demo(_singular_values, "Fill in hybrid_apply to explore γ.")])
    return


if __name__ == "__main__":
    app.run()
