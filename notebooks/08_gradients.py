import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="08 · What depth does to gradients",
    html_head_file="offline_head.html",
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore
    from geolab.terms import term
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")
    return explore, mo, term


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 08 · What depth does to gradients
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("08_gradients"))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    Notebook 04 followed the token states *forward* through the stack. Training goes the other
    way: the gradient of the loss enters at the output and has to travel *down* through every
    layer. This notebook measures, at initialisation, for the same residual rules:

    * the **gradient norm of each layer**, $\lVert \partial \mathcal L / \partial \theta_l
      \rVert$, for next-token cross-entropy on one random sequence: how hard the first step
      pushes layer $l$;
    * the **singular values of the Jacobian** $J_l = \partial y / \partial X_l$, where $y$ is
      the last token's final state (what the head reads) and $X_l$ the residual state after
      layer $l$ ($X_0$ is the embedding, so $J_0$ is the input–output Jacobian). A gradient
      $g$ arriving at $y$ reaches layer $l$ as $J_l^\top g$: singular values far below $1$
      shrink it (vanishing gradients), far above $1$ blow it up (exploding). Keeping all of them
      near $1$ is *dynamical isometry* (Pennington, Schoenholz, Ganguli 2017,
      [arXiv:1711.04735](https://arxiv.org/abs/1711.04735)), the property JPmHC is named after
      (Sengupta et al. 2026, [arXiv:2602.18308](https://arxiv.org/abs/2602.18308)).

    The models are 04's (same rules and initialisation, pure attention as the reference) at
    width $D = 32$ with $S = 16$ tokens, so every $J_l$ comes from one backward pass.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** Pure attention (no skip, no MLP), 24 layers: the largest"
        r" singular value of the input–output Jacobian $J_0$ is …",
        [
            "about 1: attention mixes, it does not shrink",
            "far below 1: the gradient vanishes",
            "far above 1: the gradient explodes",
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
def _(answer, explore, mo):
    mo.stop(answer is None, mo.md(explore.WAITING))
    _pure = explore.gradient_view((), 24)
    _ref = "pure attention"
    _hi, _lo = _pure.numbers["input_output"][_ref]
    _right = answer.startswith("far below")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"$\\sigma_{{max}}(J_0) = {_hi:.2g}$: a gradient at the output reaches"
                    f" the embedding at most {_hi:.2g} times as large. **Why?** With no skip,"
                    " the only way from the output down to the embedding goes through all 24"
                    " layers, and here each one shrinks the gradient (by"
                    f" {_hi ** (1 / 24):.2f} per layer on average): 24 factors below 1"
                    " multiply. A shortcut adds a path that skips the layer."
                ),
                kind="success" if _right else "warn",
            ),
            _pure.figures["jacobian"],
        ]
    )
    return


@app.cell
def _(answer, explore, mo):
    mo.stop(answer is None)
    depth = mo.ui.slider(
        steps=list(explore.GRADIENT_DEPTHS),
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


@app.cell
def _(explore):
    gradient_view = explore.notebook_cache(explore.gradient_view)
    return (gradient_view,)


@app.cell
def _(answer, depth, gradient_view, mo, reference, rules):
    mo.stop(answer is None)
    with mo.status.spinner(title="building the models and one backward pass each"):
        view = gradient_view(tuple(rules.value), depth.value, reference=reference.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(
        answer is None,
        mo.md("*The curves of your rules appear once you have answered the question above.*"),
    )
    mo.md(view.markdown())
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["jacobian"]
    return


@app.cell(hide_code=True)
def _(answer, mo, term):
    mo.stop(answer is None)
    mo.md(
        r"""
    **Reading the Jacobian plot.** At the right end ($l = L$) $J_L$ only picks the last token,
    so every singular value is $1$ ($\sqrt n$ for the stream rules, which sum their $n$
    streams); moving left adds one layer at a time between $X_l$ and the output. An identity
    shortcut ($X' = X + F(\cdot)$, """
        + term("pre-LN")
        + r""") keeps a path on which the gradient passes unchanged, so
    its singular values stay near $1$ at any depth. """
        + term("post-LN", "Post-LN")
        + r""" normalises after the addition: its
    output always has mean zero over the channels, so one direction of $y$ cannot move at all (a
    singular value $\approx 0$, a constraint, not a vanishing gradient), and its first norm
    divides by the size of its input, the tiny embedding (entries $\sim 0.02$), so
    $\sigma_{max} \gg 1$ at $l = 0$. MGT's decay $1 - \alpha_0\beta_0$ per residual step (notebook
    04) shrinks the gradient as it shrinks the state.
    """
    )
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["grad"]
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    **Reading the gradient norms.** The table's last rows give
    $\lVert\nabla_{\theta_1}\rVert / \lVert\nabla_{\theta_L}\rVert$, the first layer's
    gradient over the last one's: near $1$ every layer learns at the same pace; far below $1$
    the bottom layers barely move on the first steps (at 100 layers pure attention's first layers
    get gradients near $10^{-40}$, below float32's range: that rule is recomputed in float64,
    and the table says so). A hollow triangle marks a layer whose $\sigma_{min}$ is below what
    the SVD can resolve, $\sigma_{max} \cdot D \cdot \varepsilon$: rounding, not a value.
    ReZero starts every branch at zero, so its gradients are small but of one size across depth
    and its Jacobians are
    exactly the identity: add `rezero` to the rules to see every singular value at $1$
    (LayerScale beyond 18 layers, whose branches start at CaiT's $s_0 \le 10^{-5}$, is within
    $10^{-5}$ of it).

    What training does with these starting points: notebook 04 ends with the committed
    rank-evolution runs, the same rank curves before and after 800 training steps; notebook 06
    trains models live; exercises with automatic checks: `notebooks/assignments/` (A3
    measures rank collapse yourself).
    """)
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)  # the second question comes after the first one's reveal
    transfer, transfer_again = explore.transfer_question(
        "08_gradients", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("08_gradients", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("08_gradients", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
