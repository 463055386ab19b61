import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="04 · Rank collapse in deep stacks")


@app.cell
def _():
    import marimo as mo

    from geolab import explore

    return explore, mo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 04 · Rank collapse: what depth does to token representations

    **What you will see.** Stack 12 to 200 transformer layers, feed one sequence of 32 random
    tokens, and measure after every layer how many directions the 32 token vectors still span:
    the *effective rank* (seed 000, Eq. 8)

    $$\mathrm{erank}(X) = \frac{\exp\big(H(\hat\sigma)\big)}{\min(S, D)}, \qquad
    \hat\sigma_i = \frac{\sigma_i}{\sum_j \sigma_j},$$

    $1$ when all directions are used equally, $\to 0$ when the tokens collapse onto one vector.
    The lower panel shows Dong et al.'s residual $\lVert X - \mathbf 1 \bar x^\top\rVert / \lVert
    X\rVert$, the distance from "all tokens equal". Pure attention (no skip, no MLP) is the
    reference: its rank collapses within a few layers (Dong et al. 2021). Everything here is at
    initialisation, width $D = 128$.
    """)
    return


@app.cell
def _(explore, mo):
    depth = mo.ui.slider(
        steps=[12, 24, 48, 100, 200],
        value=24,
        label=r"depth $L$ (layers)",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    rules = mo.ui.multiselect(
        options=list(explore.rank_rules()),
        value=["postln", "preln", "mgt"],
        label="residual rules",
    )
    reference = mo.ui.checkbox(value=True, label="pure attention reference")
    mo.vstack([depth, mo.hstack([rules, reference], justify="start")])
    return depth, reference, rules


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    The MGT rules with a Delta controller (`mgt`, `mgt_ddl`) start every token at
    $\beta = \beta_0$ with range $\lambda$ and decay $\alpha$; `edelta` starts its hybrid gate at
    $\gamma_0$. The other rules do not read these sliders, so moving one recomputes only the
    curves it changes.
    """)
    return


@app.cell
def _(mo):
    beta0 = mo.ui.slider(
        -0.95,
        0.95,
        step=0.05,
        value=0.5,
        label=r"MGT $\beta_0$",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    lam = mo.ui.slider(
        0.1,
        2.0,
        step=0.05,
        value=1.0,
        label=r"MGT $\lambda$",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    alpha = mo.ui.slider(
        0.0,
        1.0,
        step=0.05,
        value=0.1,
        label=r"MGT $\alpha_0$",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    gamma0 = mo.ui.slider(
        0.05,
        0.95,
        step=0.05,
        value=0.5,
        label=r"E∆ $\gamma_0$",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    mo.vstack([beta0, lam, alpha, gamma0])
    return alpha, beta0, gamma0, lam


@app.cell
def _(alpha, beta0, gamma0, lam, mo):
    mo.stop(
        not -lam.value < beta0.value < lam.value,
        mo.callout(
            mo.md(
                rf"MGT needs $\beta_0$ inside $(-\lambda, \lambda) = ({-lam.value:g}, "
                rf"{lam.value:g})$: move $\beta_0$ or widen $\lambda$."
            ),
            kind="warn",
        ),
    )
    gates = {
        "beta0": beta0.value,
        "lam": lam.value,
        "alpha0": alpha.value,
        "gamma0": gamma0.value,
    }
    return (gates,)


@app.cell
def _(explore):
    rank_view = explore.notebook_cache(explore.rank_view)
    return (rank_view,)


@app.cell
def _(depth, gates, rank_view, reference, rules):
    view = rank_view(tuple(rules.value), depth.value, reference=reference.value, **gates)
    return (view,)


@app.cell
def _(mo, view):
    mo.md(view.markdown())
    return


@app.cell
def _(view):
    view.figures["rank"]
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Every rule at this depth

    Building all fifteen rules at 200 layers takes a while on a laptop CPU, so it waits for the
    button. The table lists the effective rank and Dong's residual after the last layer.
    """)
    return


@app.cell
def _(mo):
    compare = mo.ui.run_button(label="compare all rules at this depth")
    mo.center(compare)
    return (compare,)


@app.cell
def _(compare, depth, explore, gates, mo):
    mo.stop(not compare.value, mo.md("*Press the button to compare every rule.*"))
    table = []
    for name in mo.status.progress_bar(explore.rank_rules(), title="building and probing"):
        one = explore.rank_view([name], depth.value, reference=False, **gates)
        table.append(
            {
                "rule": name,
                "effective rank": round(one.numbers["final_rank"][name], 4),
                "Dong residual": float(f"{one.numbers['final_residual'][name]:.3e}"),
            }
        )
    mo.ui.table(table, selection=None)
    return


if __name__ == "__main__":
    app.run()
