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
    # A1 — The Delta operator

    Deep Delta Learning (Zhang et al. 2026,
    [arXiv:2601.00417, Eq. (2.1), §2.1](https://arxiv.org/abs/2601.00417); restated by Su & You
    2026, [arXiv:2601.01014](https://arxiv.org/html/2601.01014v3)) replaces the identity shortcut
    of a residual network by a rank-1 perturbation of the identity,

    $$A(k, \beta) = I - \beta\, \frac{k k^\top}{\lVert k \rVert^2}.$$

    One number, $\beta$, moves this map between three geometric modes. In this assignment you
    build $A$, predict its spectrum and determinant, implement the *erase-and-write* update, and
    explain the three modes.

    **How it works.** Each grey cell below is a stub: replace `raise NotImplementedError` with
    your code, then press **Ctrl+Enter** (⌘+Enter on a Mac) in that cell, or click its ▶ run
    button: the cell runs and the box under it re-runs its checks (typing alone runs nothing) —
    amber means "waiting for your code", red lists what is wrong and on which input, green
    means every check passes. The checks compare your function with geolab's reference
    implementation and with mathematical properties on random inputs; calling the geolab
    function you are asked to write is caught and reported. Use `torch` only.
    """)
    return


@app.cell(hide_code=True)
def _():
    # `marimo run` serves notebooks read-only: say so where the student would start typing.
    mo.callout(
        mo.md(
            "**This page is read-only: it was opened with `marimo run`.** The stubs below can"
            " only be filled in with `marimo edit`: from a terminal in the repository, run"
            " `.venv/bin/python -m marimo edit notebooks/assignments/A1_delta.py`."
        ),
        kind="warn",
    ) if mo.app_meta().mode == "run" else None
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. Build the operator

    Write `delta_operator(k, beta)` for `k` of shape `(..., d)` (any number of leading batch
    dimensions) and `beta` either a Python float or a tensor of the leading shape `(...)`.
    Return the `(..., d, d)` matrices $I - \beta\, k k^\top / \lVert k\rVert^2$.

    *Hints:* `k.unsqueeze(-1) * k.unsqueeze(-2)` is a batched outer product;
    `torch.as_tensor(beta, dtype=k.dtype)` turns a float into a tensor; `beta[..., None, None]`
    lines a per-matrix β up with `(..., d, d)`.
    """)
    return


@app.function
def delta_operator(k, beta):
    """A(k, β) = I − β k kᵀ / ‖k‖².  k: (..., d); beta: float or (...) tensor -> (..., d, d)."""
    ### BEGIN SOLUTION
    kh = k / torch.linalg.vector_norm(k, dim=-1, keepdim=True)
    b = torch.as_tensor(beta, dtype=k.dtype)[..., None, None]
    eye = torch.eye(k.shape[-1], dtype=k.dtype)
    return eye - b * kh.unsqueeze(-1) * kh.unsqueeze(-2)
    ### END SOLUTION


@app.cell
def _():
    feedback("A1", "delta_operator", delta_operator)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. Predict its spectrum and determinant

    Predict first, on paper: what does $A(k, \beta)$ do to a vector orthogonal to $k$, and what
    does it do to $k$ itself? Your two answers give every eigenvalue. Then, without any
    numerical linear algebra (the checks forbid `torch.linalg.eigvalsh`, `det`
    and friends here), return the `d` eigenvalues of $A(k, \beta)$ **in ascending order** as a
    float64 tensor, and its determinant.
    """)
    return


@app.function
def spectrum_and_det(d, beta):
    """Eigenvalues of A(k, β) in ascending order, shape (d,), and det A — from the formula."""
    ### BEGIN SOLUTION
    eig = torch.ones(d, dtype=torch.float64)
    eig[0] = 1 - beta
    return torch.sort(eig).values, 1 - beta
    ### END SOLUTION


@app.cell
def _():
    feedback("A1", "spectrum_and_det", spectrum_and_det)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Erase and write

    The Delta residual update ([DDL's Eq. (2.2), §2.1](https://arxiv.org/abs/2601.00417) with a
    scalar value, [Eq. 16, Appendix A](https://arxiv.org/html/2601.01014#A1)) reads the component
    of the state along the unit direction $\hat k = k/\lVert k\rVert$, and replaces a fraction
    $\beta$ of it by a new value $v$:

    $$x' = x + \beta\,(v - \hat k^\top x)\,\hat k.$$

    Write `delta_update(x, k, beta, v)`: `x`, `k` of shape `(..., d)`; `beta` and `v` Python
    floats or tensors of the leading shape `(...)`. Expand the product to convince yourself that
    $x' = A(k, \beta)\,x + \beta v \hat k$ — one of the checks tests exactly that.
    """)
    return


@app.function
def delta_update(x, k, beta, v):
    """x' = x + β (v − k̂ᵀx) k̂.  x, k: (..., d); beta, v: float or (...) tensor -> (..., d)."""
    ### BEGIN SOLUTION
    kh = k / torch.linalg.vector_norm(k, dim=-1, keepdim=True)
    b = torch.as_tensor(beta, dtype=x.dtype)[..., None]
    val = torch.as_tensor(v, dtype=x.dtype)[..., None]
    read = (kh * x).sum(-1, keepdim=True)
    return x + b * (val - read) * kh
    ### END SOLUTION


@app.cell
def _():
    feedback("A1", "delta_update", delta_update)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. The three modes

    Name the mode of $A(k, \beta)$: return `"identity"` for $\beta = 0$, `"erase"` when $A$
    projects onto $k^\perp$, `"reflect"` when $A$ is the Householder reflection, and
    `"general"` otherwise. The second check tests your names against the geometry: orthogonal
    ($A^\top A = I$) exactly for identity and reflect, singular exactly for erase.
    """)
    return


@app.function
def mode(beta):
    """The mode of A(k, β): "identity", "erase", "reflect" or "general"."""
    ### BEGIN SOLUTION
    return {0.0: "identity", 1.0: "erase", 2.0: "reflect"}.get(float(beta), "general")
    ### END SOLUTION


@app.cell
def _():
    feedback("A1", "mode", mode)
    return


@app.cell(hide_code=True)
def _():
    beta_slider = mo.ui.slider(-0.5, 2.5, step=0.05, value=1.0, label="β", show_value=True)
    return (beta_slider,)


@app.cell
def _(beta_slider):
    def _explore():
        k = torch.tensor([1.0, 2.0, 2.0], dtype=torch.float64)
        A = delta_operator(k, beta_slider.value)
        eig = [round(e, 3) for e in torch.linalg.eigvalsh(A).tolist()]
        det = torch.linalg.det(A).item()
        return mo.md(
            f"k = (1, 2, 2): eigenvalues {eig}, det {det:.3f}, mode **{mode(beta_slider.value)}**"
        )

    mo.vstack([beta_slider, demo(_explore, "Fill in delta_operator and mode to explore β here.")])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. In your own words (graded by your teacher)

    Edit this cell: explain what happens to a vector $x$ under $A(k, \beta)$ for $\beta = 0$,
    $\beta = 1$ and $\beta = 2$ — what is kept, what is erased, what is reversed — and why the
    determinant you found in section 2 tells you which modes are invertible and which preserve
    volume.

    *Your answer:*
    """)
    return


if __name__ == "__main__":
    app.run()
