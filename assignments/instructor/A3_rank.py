import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", html_head_file="../offline_head.html")

with app.setup:
    import marimo as mo
    import torch

    from geolab.assignments.catalog import feedback
    from geolab.assignments.checks import demo
    from geolab.assignments.setups import make_stack
    from geolab.figures import rank_figure
    from geolab.probe import record


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # A3 — Effective rank and rank collapse

    Dong et al. (2021) proved that a stack of pure self-attention layers, with no shortcut and
    no MLP, squeezes its token representations towards rank 1 doubly exponentially fast with
    depth: every token ends up with the same vector. Residual connections are what keeps a deep
    transformer expressive. In this assignment you measure that collapse yourself.

    The measure is the normalised **effective rank** of Su & You 2026,
    [arXiv:2601.01014, Eq. 8, §4](https://arxiv.org/html/2601.01014#S4). For
    a matrix $X \in \mathbb{R}^{S\times D}$ (tokens × width) with singular values $\sigma_i$:

    $$\operatorname{Rank}_{\text{eff}}(X) = \frac{\exp H(\hat\sigma)}{\min(S, D)}, \qquad
    H(\hat\sigma) = -\sum_i \hat\sigma_i \log \hat\sigma_i, \qquad
    \hat\sigma = \sigma / \textstyle\sum_j \sigma_j,$$

    with $0 \log 0 = 0$. It lies in $[0, 1]$: $1/\min(S, D)$ for a rank-1 matrix, $1$ when
    all singular values are equal.

    Replace each `raise NotImplementedError` with your code and press **Ctrl+Enter** (⌘+Enter on
    a Mac) in that cell: the box under the stub re-checks it. Calling
    `geolab.metrics.effective_rank` or `geolab.probe.rank_profile` — the functions you are
    re-creating — is reported as a failure.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. Effective rank

    `effective_rank(X)` takes `(..., S, D)` and returns `(...)`. Use
    `torch.linalg.svdvals`; `torch.xlogy(p, p)` computes $p \log p$ with $0 \log 0 = 0$. An
    all-zero matrix has no spectrum at all: return 0 there, never NaN.
    """)
    return


@app.function
def effective_rank(X):
    """exp(H(σ/Σσ)) / min(S, D) for each S×D matrix.  X: (..., S, D) -> (...)."""
    ### BEGIN SOLUTION
    sigma = torch.linalg.svdvals(X)
    total = sigma.sum(-1, keepdim=True)
    p = sigma / torch.where(total > 0, total, torch.ones_like(total))
    entropy = -torch.xlogy(p, p).sum(-1)
    rank = torch.exp(entropy) / min(X.shape[-2], X.shape[-1])
    return torch.where(total.squeeze(-1) > 0, rank, torch.zeros_like(rank))
    ### END SOLUTION


@app.cell
def _():
    feedback("A3", "effective_rank", effective_rank)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. A rank profile through the depth

    `geolab.probe.record(model)` is a context manager: inside it, a forward pass records
    `rec.embedding` (a list with the embedding output) and `rec.states` (the state after every
    residual step, `(B, S, D)` each). Write `rank_profile(model, x)`: a 1-D tensor holding the
    effective rank of the embedding output, then of the state after each residual step, each
    averaged over the batch. Run the model under `torch.no_grad()`.
    """)
    return


@app.function
def rank_profile(model, x):
    """Mean effective rank of the embedding output, then after every residual step."""
    ### BEGIN SOLUTION
    with torch.no_grad(), record(model) as rec:
        model(x)
    states = [rec.embedding[0], *rec.states]
    return torch.stack([effective_rank(s.float()).mean() for s in states])
    ### END SOLUTION


@app.cell
def _():
    feedback("A3", "rank_profile", rank_profile)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Collapse over depth: pure attention vs pre-LN vs MGT

    `make_stack(residual, depth, seed)` returns an attention-only stack at random init and an
    input for it. Write `collapse_curves(depth, seed)`: a dict mapping each of `"noskip"`
    (pure attention, no shortcut), `"preln"` and `"mgt"` to its rank profile. The plot below
    draws your curves; slide the depth.
    """)
    return


@app.function
def collapse_curves(depth, seed):
    """{"noskip": profile, "preln": profile, "mgt": profile} of make_stack(rule, depth, seed)."""
    ### BEGIN SOLUTION
    return {
        rule: rank_profile(*make_stack(rule, depth, seed)) for rule in ("noskip", "preln", "mgt")
    }
    ### END SOLUTION


@app.cell
def _():
    feedback("A3", "collapse_curves", collapse_curves)
    return


@app.cell(hide_code=True)
def _():
    depth_slider = mo.ui.slider(1, 48, value=12, label="depth", show_value=True)
    return (depth_slider,)


@app.cell
def _(depth_slider):
    def _plot():
        curves = collapse_curves(depth_slider.value, 0)
        return rank_figure({rule: curve[1:] for rule, curve in curves.items()})

    mo.vstack([depth_slider, demo(_plot, "Fill in the three stubs to see the curves.")])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. What did you measure? (graded by your teacher)

    Edit this cell. How many layers does pure attention need to reach rank ≈ 1/S? Why does the
    pre-LN shortcut stop the collapse, and what does MGT's gate $\beta$ at initialisation do to
    it? Would you expect the MLP to help a stack without shortcuts?

    *Your answer:*
    """)
    return


if __name__ == "__main__":
    app.run()
