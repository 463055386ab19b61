import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="06 · Training lab", html_head_file="offline_head.html")


@app.cell
def _():
    import time

    import marimo as mo

    from geolab import explore
    from geolab.experiments import lab
    from geolab.rules import RESIDUALS
    from geolab.terms import term, terms_markdown
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return RESIDUALS, explore, lab, mo, term, terms_markdown, time


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 06 · Training lab: train small models live and compare residual rules
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("06_training_lab"))
    return


@app.cell(hide_code=True)
def _(mo, term):
    mo.md(rf"""
    **What you will see.** Pick a task, a few residual rules, a depth and a width, and press
    **Train**: one small transformer per rule is trained on the same data, with the same seed
    and the same optimiser (AdamW, warm-up then cosine decay), and the loss curves grow while it
    trains. Every finished run stays on the page, side by side with the earlier ones, until you
    press **clear**: change one setting, train again, and compare. For the rules with a Delta
    gate you also get the gate $\beta$ per layer at $0, \tfrac14, \tfrac12, 1$ of training (MGT:
    Su & You 2026, [arXiv:2601.01014, Eq. 6, §3](https://arxiv.org/html/2601.01014#S3); DDL: Zhang
    et al. 2026, [arXiv:2601.00417](https://arxiv.org/abs/2601.00417)):

    $$\beta = \lambda \tanh(X W_\beta + b_\beta) + \varepsilon \ \ (\text{{MGT}}), \qquad
    \beta = 2\,\sigma(w_\beta^\top \mathrm{{RMSNorm}}(x) + b_\beta) \ \ (\text{{DDL}}).$$

    Both start at $\beta_0$ in every layer ($W_\beta = 0$ at init), so any structure over depth
    that you see later was {term("learned")}. The MGT paper predicts that deep layers
    learn $\beta < 0$ (erasing); watch whether they do.

    **The default run** (copy task, 4 layers, width 32, 160 steps, seed 0) trains three rules in
    about 11 s with one torch thread on an idle 2-core machine; a busy machine takes several
    times longer. torch's default thread count can be ten times slower there, so this notebook
    runs one thread itself (`GEOLAB_THREADS` chooses more; README, "Threads"). What it gives is
    written under the runs once you have trained it.
    """)
    return


@app.cell
def _(RESIDUALS, lab, mo):
    task_name = mo.ui.dropdown(options=list(lab.LAB_TASKS), value="copy", label="task")
    rules = mo.ui.multiselect(
        options=list(RESIDUALS), value=["preln", "mgt", "ddl"], label="residual rules"
    )
    layers = mo.ui.slider(1, 24, value=4, label="layers $L$", show_value=True)
    width = mo.ui.dropdown(options=["16", "32", "64"], value="32", label="width $D$")
    steps = mo.ui.slider(4, 400, value=160, step=4, label="optimizer steps", show_value=True)
    lr = mo.ui.dropdown(
        options=["0.001", "0.003", "0.01"], value="0.003", label="peak learning rate"
    )
    seed = mo.ui.slider(0, 99, value=0, label="seed", show_value=True)
    train_button = mo.ui.run_button(label="Train")
    mo.vstack(
        [
            mo.hstack([task_name, rules], justify="start"),
            mo.hstack([layers, width, steps, lr, seed], justify="start"),
            train_button,
        ]
    )
    return layers, lr, rules, seed, steps, task_name, train_button, width


@app.cell
def _(mo):
    get_runs, set_runs = mo.state([])
    return get_runs, set_runs


@app.cell
def _(
    get_runs,
    lab,
    layers,
    lr,
    mo,
    rules,
    seed,
    set_runs,
    steps,
    task_name,
    time,
    train_button,
    width,
):
    # No mo.stop here: the finished runs below depend on `latest`, and a stopped cell would
    # clear them whenever a control moves.
    latest = None
    if not train_button.value:
        mo.output.replace(mo.md("*Choose the settings and press **Train**.*"))
    elif not rules.value:
        mo.output.replace(mo.md("*Choose at least one residual rule.*"))
    else:
        label = lab.run_label(
            len(get_runs()) + 1,
            task_name.value,
            layers.value,
            int(width.value),
            steps.value,
            float(lr.value),
        )
        live, shown_at = {}, [0.0]
        total = steps.value * len(rules.value)
        # Output 0 is the live loss figure, output 1 the progress bar (steps of all rules, ETA).
        mo.output.replace(mo.md(f"*Training {label} …*"))
        with mo.status.progress_bar(
            total=total, title=f"training {label}", show_eta=True, remove_on_exit=True
        ) as bar:

            def on_step(rule, rec):
                live.setdefault(rule, []).append(rec["loss"])
                done = sum(map(len, live.values()))
                bar.update(subtitle=f"{rule}, step {rec['step']} of {steps.value}")
                # Redraw a few times a second at most: a plotly figure per step slows training.
                if time.monotonic() - shown_at[0] > 0.5 or done == total:
                    shown_at[0] = time.monotonic()
                    mo.output.replace_at_index(
                        lab.live_figure(
                            live, f"{label}: training {rule}, step {rec['step']} of {steps.value}"
                        ),
                        0,
                    )

            result = lab.compare_rules(
                lab.lab_task(task_name.value, seed=int(seed.value)),
                list(rules.value),
                n_layer=layers.value,
                d_model=int(width.value),
                steps=steps.value,
                lr=float(lr.value),
                seed=int(seed.value),
                on_step=on_step,
            )
        latest = {"label": label, "result": result}
        set_runs(lambda runs: runs + [latest])
        mo.output.replace(mo.md(f"Finished **{label}**: it is added to the runs below."))
    return (latest,)


@app.cell
def _(mo, set_runs):
    clear = mo.ui.button(label="clear all runs", on_click=lambda _: set_runs([]))
    return (clear,)


@app.cell
def _(clear, get_runs, lab, latest, mo, terms_markdown):
    _ = latest  # rerun when a run finishes (the state update alone does that in marimo run)
    runs = get_runs()
    mo.stop(not runs, mo.md("*No finished runs yet.*"))
    figs = lab.lab_figures(runs)
    mo.vstack(
        [
            mo.hstack([mo.md(f"**{len(runs)} finished run(s)**"), clear], justify="start"),
            figs["curves"],
            mo.md(
                "Each rule has its colour in every notebook; each run its dash. The runs are"
                " seeded: the same settings train the same curve, so a rerun lies exactly on"
                " the earlier one (its dash drawn over it)."
            ),
            mo.md(
                "**Final validation metrics** (loss and acc to 3 decimals, ppl to 2, any other"
                " metric to 4 significant digits)"
            ),
            mo.ui.table(lab.lab_rows(runs), selection=None, page_size=20),
            mo.md(terms_markdown(lab.metric_names(runs))),
        ]
    )
    return figs, runs


@app.cell(hide_code=True)
def _(get_runs, latest, mo):
    _ = latest  # rerun when a run finishes
    # what the default run gives, said only once a run is on the page: read before the
    # Train button it would answer what the learner is about to watch
    mo.stop(not get_runs())
    mo.md(r"""
    **The default run** (copy task, 4 layers, width 32, 160 steps, seed 0): at the end DDL
    and MGT both copy (validation accuracy 1.000 and 0.998) while pre-LN has only begun (0.31;
    guessing would score $1/16$). DDL's $\beta$ leaves $1$ in every layer (0.90 to 1.09); MGT's
    stays near its $\beta_0 = 0.5$ (0.49 to 0.52): no layer turns negative in so short a run.

    **Loss and accuracy say different things.** MGT ends with validation loss 0.85 at accuracy
    0.998. Accuracy only asks whether the most likely token is the right one; the
    cross-entropy loss $-\log p(\text{right token})$ also asks how sure the model is. MGT picks
    the right token but gives it only about $e^{-0.85} \approx 43\%$ of the probability (DDL,
    loss 0.15: about 86 %): it has found the copy and is still sharpening it.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## β per layer over training

    One line per later snapshot: how far each layer's mean $\beta$ has moved since
    initialisation (0, the black line, is where every layer started, at $\beta_0$). The MGT
    proposal predicts a "phase transition" (accumulate early, erase late): $\beta$ falling
    below 0 in the deep layers. The check below confirms that every layer really starts at
    $\beta_0$ and gives the range $\beta$ ended in.
    """)
    return


@app.cell
def _(figs, mo, runs):
    checks = []
    for run in runs:
        for rule, snaps in run["result"]["beta"].items():
            start, end = snaps["0%"]["mean"], snaps["100%"]["mean"]
            checks.append(
                # Run labels start with "#N": at the start of a line markdown reads that as
                # a heading, so the line starts with the word "run".
                f"- run {run['label'].split()[0][1:]} `{rule}`: β at init, max − min over"
                " layers = "
                f"{max(start) - min(start):.1e}; after training, β per layer spans "
                f"{min(end):.3f} … {max(end):.3f}"
            )
    mo.stop(not checks, mo.md("*None of the finished runs has a β rule (mgt, mgt_ddl, ddl).*"))
    mo.vstack(
        [mo.md("\n".join(checks))] + [fig for name, fig in figs.items() if name.startswith("beta")]
    )
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(explore, get_transfer, set_transfer):
    transfer, transfer_again = explore.transfer_question(
        "06_training_lab", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(explore, get_transfer):
    explore.transfer_shown("06_training_lab", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("06_training_lab", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
