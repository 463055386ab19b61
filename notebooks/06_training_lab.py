import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="06 · Training lab")


@app.cell
def _():
    import marimo as mo

    from geolab.experiments import lab
    from geolab.rules import RESIDUALS

    return RESIDUALS, lab, mo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 06 · Training lab: train small models live and compare residual rules

    **What you will see.** Pick a task, a few residual rules, a depth and a width, and press
    **Train**: one small transformer per rule is trained on the same data, with the same seed
    and the same optimiser (AdamW, warm-up then cosine decay), while a progress bar runs. You get
    the training curves side by side, the final validation numbers, and — for the rules with a
    Delta gate — the gate $\beta$ per layer at $0, \tfrac14, \tfrac12, 1$ of training:

    $$\beta = \lambda \tanh(X W_\beta + b_\beta) + \varepsilon \ \ (\text{MGT, Eq. 6}), \qquad
    \beta = 2\,\sigma(w_\beta^\top \mathrm{RMSNorm}(x) + b_\beta) \ \ (\text{DDL}).$$

    Both start at $\beta_0$ in every layer ($W_\beta = 0$ at init), so any structure over depth
    that you see later was *learned*. The MGT paper predicts that deep layers learn $\beta < 0$
    (erasing); watch whether they do. The defaults are tiny so this runs in seconds on a CPU.
    """)
    return


@app.cell
def _(RESIDUALS, lab, mo):
    task_name = mo.ui.dropdown(options=list(lab.LAB_TASKS), value="copy", label="task")
    rules = mo.ui.multiselect(
        options=list(RESIDUALS), value=["preln", "mgt"], label="residual rules"
    )
    layers = mo.ui.slider(1, 24, value=2, label="layers $L$", show_value=True)
    width = mo.ui.dropdown(options=["16", "32", "64"], value="16", label="width $D$")
    steps = mo.ui.slider(4, 400, value=8, step=4, label="optimizer steps", show_value=True)
    seed = mo.ui.number(start=0, stop=10_000, value=0, label="seed")
    train_button = mo.ui.run_button(label="Train")
    mo.vstack(
        [
            mo.hstack([task_name, rules], justify="start"),
            mo.hstack([layers, width, steps, seed], justify="start"),
            train_button,
        ]
    )
    return layers, rules, seed, steps, task_name, train_button, width


@app.cell
def _(lab, layers, mo, rules, seed, steps, task_name, train_button, width):
    mo.stop(not train_button.value, mo.md("*Choose the settings and press **Train**.*"))
    mo.stop(not rules.value, mo.md("*Choose at least one residual rule.*"))
    task = lab.lab_task(task_name.value, seed=int(seed.value))
    total = steps.value * len(rules.value)
    with mo.status.progress_bar(total=total, title="training", remove_on_exit=True) as bar:
        result = lab.compare_rules(
            task,
            list(rules.value),
            n_layer=layers.value,
            d_model=int(width.value),
            steps=steps.value,
            seed=int(seed.value),
            on_step=lambda rule, rec: bar.update(subtitle=f"{rule}: loss {rec['loss']:.4f}"),
        )
    figs = lab.lab_figures(result)
    return figs, result


@app.cell
def _(figs):
    figs["curves"]
    return


@app.cell
def _(mo, result):
    rows = [
        {"rule": rule, "parameters": result["n_params"][rule], **metrics}
        for rule, metrics in result["val"].items()
    ]
    mo.vstack([mo.md("**Final validation metrics**"), mo.ui.table(rows, selection=None)])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## β per layer over training

    One line per snapshot. A flat line at $\beta_0$ is the initialisation; a line that bends
    below 0 in the deep layers is the MGT paper's predicted "phase transition" (accumulate
    early, erase late). The check below confirms that every layer really starts at $\beta_0$.
    """)
    return


@app.cell
def _(figs, mo, result):
    mo.stop(
        not result["beta"], mo.md("*None of the chosen rules has a β gate (mgt, mgt_ddl, ddl).*")
    )
    checks = []
    for rule, snaps in result["beta"].items():
        start = snaps["0%"]["mean"]
        spread = max(start) - min(start)
        checks.append(f"- `{rule}`: β at init, max − min over layers = {spread:.2e}")
    mo.vstack(
        [mo.md("\n".join(checks))] + [fig for name, fig in figs.items() if name.startswith("beta")]
    )
    return


if __name__ == "__main__":
    app.run()
