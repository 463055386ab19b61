import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", html_head_file="../offline_head.html")

with app.setup:
    import math

    import marimo as mo
    import torch
    from torch import nn

    from geolab.assignments.catalog import feedback
    from geolab.assignments.checks import demo
    from geolab.assignments.setups import copy_task, train_config
    from geolab.config import GeoConfig
    from geolab.figures import sweep_figure
    from geolab.layers import make_norm
    from geolab.rules import Rule, register
    from geolab.train import train


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # A4 — A residual rule of your own

    Every residual rule in geolab is a small `torch.nn.Module` with one call,
    `rule(x, sublayer) -> x_next`: `x` is the residual state `(B, S, D)`, `sublayer` is the
    attention or MLP of this step (it takes an un-normalised input — the rule decides where
    the norm goes). After each call the rule records its gates for the probes with
    `self.keep(beta=..., ...)`. `geolab.rules.Rule` is the base class; it stores the config as
    `self.cfg`. The decorator `@register("my_rule")` puts your class into geolab's rule registry,
    so `GeoConfig(residual="my_rule")` builds a transformer on it.

    Your rule is the MGT paper's "+DDL only" ablation, `mgt_ddl` (Su & You 2026,
    [arXiv:2601.01014, Eq. 6–7, §3](https://arxiv.org/html/2601.01014#S3)): a data-dependent Delta
    controller scales a write of the sublayer output against an erase of the state,

    $$X' = X + \beta \odot \big(F(\mathrm{LN}\,X) - \alpha X\big), \qquad
    \beta = \lambda \tanh(X W_\beta + b_\beta) + \varepsilon,$$

    with $W_\beta \in \mathbb{R}^{D\times D}$ reading the **raw** state $X$ (not
    $\mathrm{LN}\,X$), $\alpha$ a learnable scalar, and $\beta$ elementwise.

    **Initialisation** (geolab's choices, docs/design.md §3.1): $W_\beta = 0$ and
    $b_\beta = \operatorname{atanh}((\beta_0 - \varepsilon)/\lambda)$, so every token starts at
    $\beta = \beta_0$; $\alpha = \alpha_0$. Read them from the config: `cfg.lam`, `cfg.eps`,
    `cfg.alpha0`, `cfg.beta0` (`None` means the default $\beta_0 = 0.5$), `cfg.d_model`, and use
    `make_norm(cfg.norm, cfg.d_model)` for LN.

    The checks build your rule from several configs and compare it with geolab's own `mgt_ddl`
    at initialisation, test that $\beta$ is recorded, reads $X$ and stays in
    $(-\lambda+\varepsilon, \lambda+\varepsilon)$, that the $\beta$ you record is the one
    your update uses (they read $X' - X = \beta \odot (V - \alpha X)$ back from your output,
    $V$ the value your one call of `sublayer` returned — also while it trains), that gradients
    reach every parameter, and finally train a 2-layer transformer built on your rule on a copy
    task with the geolab trainer. Reusing geolab's MGT classes is reported as a failure. After
    editing the class, press **Ctrl+Enter** (⌘+Enter on a Mac) in its cell: the checks below
    re-run.
    """)
    return


@app.class_definition
@register("my_rule")
class MyRule(Rule):
    """mgt_ddl: X' = X + β ⊙ (F(LN X) − α X), β = λ·tanh(X W_β + b_β) + ε (Su & You 2026,
    arXiv:2601.01014, Eq. 6–7)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        ### BEGIN SOLUTION
        d = cfg.d_model
        beta0 = 0.5 if cfg.beta0 is None else cfg.beta0
        self.lam, self.eps = cfg.lam, cfg.eps
        self.ln = make_norm(cfg.norm, d)
        self.w_beta = nn.Linear(d, d)
        nn.init.zeros_(self.w_beta.weight)
        nn.init.constant_(self.w_beta.bias, math.atanh((beta0 - cfg.eps) / cfg.lam))
        self.alpha = nn.Parameter(torch.tensor(float(cfg.alpha0)))
        ### END SOLUTION

    def forward(self, x, sublayer):
        ### BEGIN SOLUTION
        beta = self.lam * torch.tanh(self.w_beta(x)) + self.eps
        self.keep(beta=beta, alpha=self.alpha)
        return x + beta * (sublayer(self.ln(x)) - self.alpha * x)
        ### END SOLUTION


@app.cell
def _():
    feedback("A4", "MyRule", MyRule)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Train it

    `@register("my_rule")` above made your class a rule of geolab, so
    `GeoConfig(residual="my_rule")` builds a `GeoTransformer` on it. The button trains your
    rule and the pre-LN baseline, 4 layers each, for 200 steps on the copy task
    (about a minute on a laptop CPU) and plots both training losses.
    """)
    return


@app.cell
def _():
    train_button = mo.ui.run_button(label="Train MyRule and preln on copy")
    return (train_button,)


@app.cell
def _(train_button):
    mo.stop(not train_button.value, mo.vstack([train_button, mo.md("*Press to train.*")]))

    def _train():
        task = copy_task(0)
        curves = {}
        for name in ("my_rule", "preln"):
            cfg = GeoConfig(residual=name, n_layer=4, d_model=32, n_head=4, **task.model_fields())
            result = train(cfg, task, train_config(200, 0))
            curves[name] = [record["loss"] for record in result.history]
        steps = list(range(1, len(curves["preln"]) + 1))
        return sweep_figure(steps, curves, title="copy", x_title="step", y_title="training loss")

    mo.vstack([train_button, demo(_train, "Fill in MyRule first.")])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Your own rule (optional, graded by your teacher)

    Copy `MyRule` into a new class and change one thing — a per-channel $\alpha$, a
    token-wise scalar $\beta$, the tangent gate of the full MGT, a Cayley rotation of the
    shortcut from A2 — register it under a new name and train it with the button above
    (change `"my_rule"` in the training cell to that name). Describe what you changed and what
    happened to the loss.

    *Your answer:*
    """)
    return


if __name__ == "__main__":
    app.run()
