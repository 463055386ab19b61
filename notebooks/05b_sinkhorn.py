import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium", app_title="05b · Sinkhorn–Knopp", html_head_file="offline_head.html"
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore
    from geolab.explore.streams import size
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return explore, mo, size


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 05b · Sinkhorn–Knopp: from logits to a doubly stochastic mixer

    **You will be able to explain**

    1. what one Sinkhorn–Knopp round does to a positive matrix;
    2. how close to doubly stochastic a given number of rounds gets, and which matrices are
       slow;
    3. how mHC-lite gets exact sums with no rounds at all.

    **The setting.** mHC (Xie et al. 2025, [arXiv:2512.24880](https://arxiv.org/abs/2512.24880))
    needs every stream mixer to be *doubly stochastic*: entries $\ge 0$, every row and every
    column summing to $1$ (lesson 05 showed what such mixers do over depth). A layer produces a
    $4 \times 4$ matrix of logits. Sinkhorn–Knopp (Sinkhorn & Knopp 1967) starts from
    $M^{(0)} = \exp(\text{logits} - \max)$ and repeats one **round**: divide every column by its
    sum, then every row by its sum. After a round the rows sum to $1$; the columns sum to
    whatever the row step left them. mHC runs 20 rounds.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** The *random* preset's logits have $N(0, 2^2)$ entries. After 20"
        r" rounds, how far from 1 is the worst column sum?",
        [
            "below 10⁻¹²: exact up to rounding",
            "about 10⁻⁸",
            "about 10⁻⁴",
            "about 10⁻¹",
        ],
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
def _(explore):
    sinkhorn_view = explore.notebook_cache(explore.sinkhorn_view)
    return (sinkhorn_view,)


@app.cell
def _(answer, explore, mo, sinkhorn_view, size):
    mo.stop(answer is None, mo.md(explore.WAITING))
    _asked = sinkhorn_view("random")
    _at20 = _asked.numbers["at20"]
    _right = answer == "about 10⁻⁴"
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + "After 20 rounds the worst column sum is off by"
                    f" {size(_at20)}: close, not exact. Press ▶ Play to watch"
                    " the rounds, or drag the round slider."
                ),
                kind="success" if _right else "warn",
            ),
            _asked.figures["animation"],
            mo.md(
                r"""
    **Why?** The row step fixes the rows exactly and disturbs the columns; the column step
    of the next round fixes the columns and disturbs the rows, a little less. For a matrix
    with every entry positive the error shrinks by a roughly constant factor each round
    (Franklin & Lorenz 1989): here about """
                + f"{_asked.numbers['rate']:.2f}"
                + r""" per round over the last ten, so 20 rounds leave
    an error near $10^{-4}$, far above float32's rounding. Each mHC mixer is therefore only
    *approximately* doubly stochastic, and over many layers those small errors compound: the
    E∆ paper's criticism of mHC (Shahmansoori 2026,
    [arXiv:2605.06729](https://arxiv.org/html/2605.06729)).
    """
            ),
        ]
    )
    return


@app.cell
def _(explore, mo):
    preset = mo.ui.dropdown(
        options=list(explore.SINKHORN_PRESETS), value="random", label="preset (the logits)"
    )
    return (preset,)


@app.cell
def _(answer, mo, preset):
    mo.stop(answer is None)
    mo.vstack(
        [
            mo.md(r"""
    ## Try other matrices

    *identity-ish*: logits $3I + 0.3N$, a strong diagonal; *random*: $2N$; *near-permutation*:
    $5P + 0.3N$, with $P$ a 4-cycle; *JPmHC rotation*: $\log(Q \circ Q)$, the squared entries of
    a rotation $Q$ ($N$ has $N(0, 1)$ entries, one seeded draw). The animation runs in the
    page itself (plotly's own Play button and round slider, 0 to 30), so it works offline. The
    dotted lines mark rounding: float32, where mHC computes, and float64, where this page does.
    """),
            preset,
        ]
    )
    return


@app.cell
def _(preset, sinkhorn_view):
    view = sinkhorn_view(preset.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.md(view.markdown())
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["animation"]
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    **Without rounds: mHC-lite.** By the Birkhoff–von Neumann theorem every doubly stochastic
    matrix is a weighted average of permutation matrices. mHC-lite (Yang & Gao 2026,
    [arXiv:2601.05732](https://arxiv.org/abs/2601.05732)) therefore builds the mixer as
    $H = \sum_\sigma a_\sigma P_\sigma$ over the $4! = 24$ permutations, with weights $a$ from a
    softmax. Every row and every column of $H$ sums to $\sum_\sigma a_\sigma = 1$ by
    construction: exact up to rounding, with no rounds, at the price of $n!$ weights per token.
    """)
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)
    second, second_again = explore.question(
        r"**Second question.** The *JPmHC rotation* preset starts from the squared entries of a"
        r" rotation: $M^{(0)} \propto Q \circ Q$ with $Q$ orthogonal ($Q^\top Q = I$). How many"
        r" rounds until every row and column sum is within $10^{-6}$ of 1?",
        ["1", "about 10", "about 30", "more than 30"],
        get_transfer(),
        set_transfer,
    )
    explore.asked(second, second_again, get_transfer())
    return second, second_again


@app.cell
def _(get_transfer):
    transfer = get_transfer()
    return (transfer,)


@app.cell
def _(mo, sinkhorn_view, transfer):
    mo.stop(transfer is None)
    _asked = sinkhorn_view("JPmHC rotation")
    _first = _asked.numbers["first_within"]
    _right = transfer == "1"
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"Round {_first}: the sums are exact up to float64 rounding."
                ),
                kind="success" if _right else "warn",
            ),
            _asked.figures["animation"],
            mo.md(r"""
    **Why?** The rows and the columns of an orthogonal $Q$ are unit vectors, so
    $\sum_j Q_{ij}^2 = 1$ and $\sum_i Q_{ij}^2 = 1$: $Q \circ Q$ is already doubly stochastic
    (an *orthostochastic* matrix). $M^{(0)}$ is it divided by its largest entry, and the first
    column step undoes that one scale. Rotations, JPmHC's mixers, and doubly stochastic
    matrices, mHC's, are close relatives.
    """),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    **Next:** [06 · Training lab](?file=06_training_lab.py): train small stacks with these
    residual rules and compare them.
    """)
    return


if __name__ == "__main__":
    app.run()
