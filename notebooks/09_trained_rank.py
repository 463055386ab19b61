import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="09 · Rank after training",
    html_head_file="offline_head.html",
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore
    from geolab.experiments import report
    from geolab.experiments.runner import load_result
    from geolab.terms import term

    return explore, load_result, mo, report, term


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 09 · Rank after training: does training keep what initialisation gave?
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("09_trained_rank"))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    **What you will see.** Notebook 04 measured the *effective rank* of the token states after
    every layer (Su & You 2026, [arXiv:2601.01014, Eq. 8, §4](https://arxiv.org/html/2601.01014#S4):
    $1$ when every direction is used equally, $1/S$ when the $S$ tokens are one vector) — at
    initialisation only. Here the same measure is read off models that were then trained. The
    committed `rank_evolution` run (`data/results/`, notebook 07) measured four rules' rank per
    layer before and after training each on tiny-shakespeare. Its models are smaller than 04's
    (width 32, sequences of 32 characters instead of 128 and random tokens), so the init curves
    here are its own, measured on the very models that were then trained. Nothing is trained on
    this page.
    """)
    return


@app.cell
def _(load_result, mo):
    _path = mo.notebook_dir().parent / "data" / "results" / "rank_evolution-small.json"
    mo.stop(not _path.is_file(), mo.md(f"*No committed rank_evolution result at `{_path}`.*"))
    evolution = load_result(_path)
    return (evolution,)


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** After training, the effective rank after the last layer is…",
        explore.RANK_MOVES,
        get_answer(),
        set_answer,
    )
    explore.asked(guess, again, get_answer())
    return again, guess


@app.cell
def _(get_answer):
    answer = get_answer()
    return (answer,)


@app.cell
def _(evolution, explore):
    trained_view = explore.notebook_cache(explore.rank_bridge_view)
    deepest = max(explore.trained_depths(evolution))
    return deepest, trained_view


@app.cell
def _(answer, deepest, evolution, explore, mo, trained_view):
    mo.stop(answer is None, mo.md(explore.WAITING))
    _view = trained_view(evolution, deepest)
    _truth = _view.numbers["move"]
    _right = answer == _truth
    _moved = ", ".join(
        f"`{rule}` {a:.2f} → {b:.2f}" for rule, (a, b) in _view.numbers["final"].items()
    )
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else f"**No: {_truth}.** ")
                    + f"After layer {deepest}, init → trained: {_moved}."
                ),
                kind="success" if _right else "warn",
            ),
            _view.figures["bridge"],
            mo.md(
                r"**Why?** Initialisation spreads the tokens over many directions by chance, and"
                r" training reshapes them; how far these runs got is below. A lower rank after"
                r" training is not collapse: collapse is the floor $1/S$ (dotted), one direction"
                r" for every token."
            ),
        ]
    )
    return


@app.cell
def _(answer, evolution, mo, report, term):
    mo.stop(answer is None)
    mo.vstack(
        [
            mo.md(
                "## What these runs reached\n\nNotebook 07 judges the claims on these runs;"
                f" a claim stands only on runs that {term('learned')} and {term('converged')}:"
            ),
            mo.md(report.reach_markdown(evolution)),
        ]
    )
    return


@app.cell
def _(answer, evolution, explore, mo):
    mo.stop(answer is None)
    trained_depth = mo.ui.dropdown(
        options={str(d): d for d in explore.trained_depths(evolution)},
        value=str(max(explore.trained_depths(evolution))),
        label="trained depth L",
    )
    mo.vstack([mo.md("## Every trained depth"), trained_depth])
    return (trained_depth,)


@app.cell
def _(evolution, mo, trained_depth, trained_view):
    bridge = trained_view(evolution, trained_depth.value)
    mo.vstack(
        [
            bridge.figures["bridge"],
            mo.md(
                "Notebook 07's rank_evolution verdicts (H1, H2) are judged on these trained curves."
            ),
            mo.md(bridge.markdown()),
        ]
    )
    return (bridge,)


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)  # the second question comes after the first one's reveal
    transfer, transfer_again = explore.transfer_question(
        "09_trained_rank", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("09_trained_rank", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("09_trained_rank", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
