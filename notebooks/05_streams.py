import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="05 · Streams and their mixers")


@app.cell
def _():
    import marimo as mo

    from geolab import explore

    return explore, mo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 05 · Streams: why mHC projects its mixers

    **What you will see.** Hyper-connections keep $n = 4$ parallel residual streams and mix
    them at every step with an $n \times n$ matrix $H_{res}$. Over $L$ steps the signal is
    multiplied by $H_L \cdots H_1$. Unconstrained mixers (HC) make that product explode or
    vanish; mHC projects each mixer onto the **doubly stochastic** matrices with Sinkhorn–Knopp,
    whose products stay doubly stochastic with gain $1$; orthogonal mixers (JPmHC, E∆) keep
    lengths exactly. The catch (seed 003): finite Sinkhorn is only *approximately* doubly
    stochastic.
    """)
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
def _(mo, view):
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
def _(mo):
    mo.md(r"""
    ## The composite product over depth

    The *Amax gain* of mHC (Xie et al.) is the largest absolute row sum of $H_L \cdots H_1$
    (forward signal) and the largest absolute column sum (backward gradient). The same random
    draws feed three families: HC $= I + \tanh(\sigma G)$, mHC $= \mathrm{Sinkhorn}(\sigma G)$,
    and the orthogonal Cayley map of the skew part of $\sigma G$. Row-stochastic products keep
    the forward gain at exactly $1$; the backward gain of mHC drifts with the Sinkhorn residual.
    Lower the iterations or raise $\sigma$ and watch it.
    """)
    return


@app.cell
def _(view):
    view.figures["gain"]
    return


if __name__ == "__main__":
    app.run()
