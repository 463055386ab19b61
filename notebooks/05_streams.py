import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium", app_title="05 · Streams and their mixers", html_head_file="offline_head.html"
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return explore, mo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 05 · Streams: why mHC projects its mixers

    **What you will see.** Hyper-connections keep $n = 4$ parallel residual streams and mix
    them at every step with an $n \times n$ matrix $H_{res}$. Over $L$ steps the signal is
    multiplied by $H_L \cdots H_1$. Hyper-connections (HC) leave each mixer unconstrained; mHC
    projects each mixer onto the **doubly stochastic** matrices with Sinkhorn–Knopp, whose
    products stay doubly stochastic with gain $1$; orthogonal mixers (JPmHC, E∆) keep
    Euclidean lengths ($\lVert Qx\rVert_2 = \lVert x\rVert_2$). The catch (Shahmansoori 2026,
    [arXiv:2605.06729](https://arxiv.org/html/2605.06729)): finite Sinkhorn is only
    *approximately* doubly stochastic. First, a guess about the product.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** Multiply 100 unconstrained HC mixers $I + \tanh(2G)$ (each"
        r" entry of $G$ drawn from $N(0, 1)$). How large is the forward Amax gain of the"
        r" product (its largest absolute row sum)?",
        ["about 1", "about 10", "about 10⁴", "10¹⁰ or more"],
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
def _(answer, explore, mo, streams_view):
    mo.stop(answer is None, mo.md(explore.WAITING))
    _hc = streams_view(20, 2.0, 100)
    _gain = _hc.numbers["final_gain"]["HC"][0]
    _right = answer.startswith("10¹⁰")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"100 HC mixers with $\\sigma = 2$: the forward Amax gain of the product is"
                    f" {_gain:.2e}. mHC's Sinkhorn-projected mixers stay at 1: the flat line."
                ),
                kind="success" if _right else "warn",
            ),
            _hc.figures["hc_gain"],
            mo.md(
                "**Why?** Each HC mixer $I + \\tanh(2G)$ stretches some direction by a factor"
                " above 1, and nothing pulls the product back: the stretch compounds layer after"
                " layer, exponentially in depth."
            ),
        ]
    )
    return


@app.cell
def _(mo):
    iters = mo.ui.slider(
        1, 50, step=1, value=20, label=r"Sinkhorn iterations", show_value=True, full_width=True
    )
    spread = mo.ui.slider(
        0.1,
        4.0,
        step=0.1,
        value=2.0,
        label=r"logit spread $\sigma$",
        show_value=True,
        full_width=True,
    )
    depth = mo.ui.slider(
        1,
        200,
        step=1,
        value=100,
        label=r"depth $L$ (mixers multiplied)",
        show_value=True,
        full_width=True,
    )
    mo.vstack([iters, spread, depth])
    return depth, iters, spread


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Sinkhorn–Knopp

    Start from $M^{(0)} = \exp(\text{logits} - \max)$ and alternate: divide every column by its
    sum, then every row by its sum. The last step makes the rows exact; the columns are off by
    an error that shrinks with the iterations and grows with the spread of the logits. mHC uses
    20 iterations in float32.

    **mHC-lite** (Yang & Gao 2026, [arXiv:2601.05732](https://arxiv.org/abs/2601.05732)) needs no
    iterations: by the Birkhoff–von Neumann theorem every doubly stochastic matrix is a convex
    combination of permutation matrices, so it takes a softmax over all $4! = 24$ of them,
    $H = \sum_\sigma a_\sigma P_\sigma$. Rows and columns then sum to 1 up to float32 rounding at
    any spread: its flat line in the error plot below. Here each permutation's weight comes from the
    same logits, $a_\sigma \propto \exp \sum_i \text{logits}_{i\,\sigma(i)}$.
    """)
    return


@app.cell
def _(explore):
    streams_view = explore.notebook_cache(explore.streams_view)
    return (streams_view,)


@app.cell
def _(depth, iters, spread, streams_view):
    view = streams_view(iters.value, spread.value, depth.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(
        answer is None,
        mo.md("*The readout and the gains appear once you have answered the question above.*"),
    )
    mo.md(view.markdown())
    return


@app.cell
def _(view):
    view.figures["heatmaps"]
    return


@app.cell
def _(view):
    view.figures["error"]
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## The composite product over depth

    The *Amax gain* of mHC (Xie et al.) is the largest absolute row sum of $H_L \cdots H_1$
    (forward signal) and the largest absolute column sum (backward gradient). The same random
    draws feed four families: HC $= I + \tanh(\sigma G)$, mHC $= \mathrm{Sinkhorn}(\sigma G)$,
    the **exact dense Cayley map** $(I + A/2)^{-1}(I - A/2)$ of the skew part $A$ of $\sigma G$
    (what E∆'s Cayley operator computes and what JPmHC's iteration converges to), and
    **JPmHC's own two-step mixer** $Y \leftarrow I + \tfrac a2 W_s (I + Y)$, $a = 0.1$, two
    iterations from $I$ — the mixer the `jpmhc` rule really runs, orthogonal only up to its
    truncation error. Row-stochastic products keep the forward gain at exactly $1$; the backward
    gain of mHC drifts with the Sinkhorn residual. Lower the iterations or raise $\sigma$ and
    watch it.

    **Two gains.** The 2-norm gain $\lVert H_L\cdots H_1\rVert_2$ is the largest factor by
    which the product stretches a vector's Euclidean length: exactly $1$ for any product of
    orthogonal matrices. The Amax gain measures something else, the largest row sum of absolute
    values ($\lVert P\rVert_\infty$): for an orthogonal $n \times n$ matrix it can reach
    $\sqrt n = 2$ (a row $(\tfrac12, \tfrac12, \tfrac12, \tfrac12)$), because
    $\lVert P\rVert_\infty \le \sqrt n\,\lVert P\rVert_2$. So the orthogonal mixer's Amax
    gain around $1.7$ is not growth: its 2-norm line sits at $1$. The bottom panel zooms on
    everything but HC, from $0$ to $1.3\sqrt n$, with the $\sqrt n$ bound dotted. One colour per
    mixer family; solid: Amax forward, dashed: Amax backward, dotted: 2-norm.

    **Why JPmHC can grow.** Two fixed-point steps only approximate the Cayley map, so each
    JPmHC mixer is orthogonal only up to its truncation error, which grows quickly with the
    size of its generator: the last row of the table shows the mean 2-norm of one mixer
    ($1$ would be orthogonal). A product of $L$ mixers that each stretch by $1 + \varepsilon$
    grows like $(1 + \varepsilon)^L$: raise $\sigma$ to 4 at depth 200 and JPmHC's gain leaves
    the zoom for $10^{15}$, while the exact Cayley mixers stay at $1$.
    """)
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["gain"]
    return


if __name__ == "__main__":
    app.run()
