import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="04 · Rank collapse in deep stacks",
    html_head_file="offline_head.html",
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore, glossary_markdown
    from geolab.terms import term
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return explore, glossary_markdown, mo, term


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 04 · Rank collapse: what depth does to token representations
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("04_rank_collapse"))
    return


@app.cell(hide_code=True)
def _(mo, term):
    # The hovers' definitions are geolab.terms' (one copy of each)
    mo.md(
        r"""
    **What you will see.** Stack 12 to 200 transformer layers, feed one sequence of 32 random
    tokens, and measure after every layer how many directions the 32 token vectors still span:
    the *effective rank* (Su & You 2026,
    [arXiv:2601.01014, Eq. 8, §4](https://arxiv.org/html/2601.01014#S4))

    $$\mathrm{erank}(X) = \frac{\exp\big(H(\hat\sigma)\big)}{\min(S, D)}, \qquad
    \hat\sigma_i = \frac{\sigma_i}{\sum_j \sigma_j},$$

    where $X$ holds the $S = 32$ token vectors of width $D$ as rows, $\sigma_i$ are its
    """
        + term("singular values")
        + r""" and
    $H(\hat\sigma) = -\sum_i \hat\sigma_i \log \hat\sigma_i$ their entropy: $1$ when all
    directions are used equally, and small when the tokens collapse onto one vector.
    The lower panel shows Dong et al.'s residual $\lVert X - \mathbf 1 \bar x^\top\rVert / \lVert
    X\rVert$, the distance from "all tokens equal" ($\bar x$ the mean token); their main result
    ([arXiv:2103.03404, Theorem 2.2, §2](https://arxiv.org/abs/2103.03404)) is that pure
    attention drives it to 0 doubly exponentially with depth. """
        + term("pure attention", "Pure attention")
        + r""" (Dong et al. 2021) is the
    reference. Everything here is at initialisation, width $D = 128$; layer 0 is the
    input, the embedded tokens before any layer.
    """
    )
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** Pure attention, 24 layers, $S = 32$ tokens: where does its"
        r" effective rank end?",
        ["exactly 0", "1/32 ≈ 0.031", "1/√32 ≈ 0.18", "still about 1"],
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
def _(answer, explore, mo, rank_view):
    mo.stop(answer is None, mo.md(explore.WAITING))
    _pure = rank_view((), 24)
    _ref = "pure attention"
    _right = answer.startswith("1/32")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"Pure attention, 24 layers, 32 tokens: its effective rank ends at"
                    f" {_pure.numbers['final_rank'][_ref]:.4f}, and Dong's residual at"
                    f" {_pure.numbers['final_residual'][_ref]:.1e}: the 32 tokens are one"
                    " vector, within a few layers."
                ),
                kind="success" if _right else "warn",
            ),
            _pure.figures["rank"],
            mo.md(
                r"**Why?** Each attention layer replaces every token by an average of tokens,"
                r" and with no skip nothing restores their differences. The effective rank"
                r" cannot go below $1/S$: even a single direction has entropy $H = 0$, so"
                r" $\exp(H)/\min(S, D) = 1/32$. That floor, not 0, is what collapse looks like."
            ),
        ]
    )
    return


@app.cell
def _(answer, explore, mo):
    mo.stop(answer is None)
    depth = mo.ui.slider(
        12,
        200,
        step=1,
        value=24,
        label="depth L (layers, any from 12 to 200: slide, or step by one with the arrow keys)",
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
def _(answer, explore, glossary_markdown, mo):
    mo.stop(answer is None)
    mo.accordion(
        {
            "What the rule names mean, and their papers": mo.md(
                glossary_markdown(explore.rank_rules())
            )
        }
    )
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    The MGT rules with a Delta controller (`mgt`, `mgt_ddl`) start every token at
    $\beta = \beta_0$ and decay $\alpha = \alpha_0$.
    **$\lambda$ moves no curve at init**: $\beta = \lambda\tanh(W_\beta x + b_\beta)$ starts
    with $W_\beta = 0$ and $b_\beta = \operatorname{atanh}(\beta_0/\lambda)$, so every token's
    $\beta$ is $\beta_0$ whatever $\lambda$ is (to float32 rounding: the curves move in
    their seventh digit, the readout not at all). $\lambda$ is $\beta$'s range
    $(-\lambda, \lambda)$: here it decides which $\beta_0$ are allowed (outside it the MGT
    curves are left out, with a note, and every other curve stays); in training it caps how far
    $\beta$ can move (notebook 02 shows it acting on the gate).
    The other rules read none of these sliders, so moving one recomputes only the curves it
    changes. A $\beta_0 < 0$ makes $1 - \alpha_0\beta_0 > 1$: the stream then grows by that
    factor at each of the $2L$ residual steps, and where it would grow more than $10^{15}$
    times (LayerNorm squares it, and float32 ends at $3.4 \times 10^{38}$) the MGT curves are
    left out, with a note that does the multiplication.
    """)
    return


@app.cell(hide_code=True)
def _(answer, mo, rank_view):
    mo.stop(answer is None)
    _edelta = {g: rank_view(["edelta"], 24, gamma0=g, reference=False) for g in (0.05, 0.9)}
    _low, _high = (_edelta[g].numbers["final_rank"]["edelta"] for g in (0.05, 0.9))
    mo.md(
        r"**$\gamma_0$ only matters for `edelta`**, which starts its hybrid gate there, and only"
        rf" a little at init: at 24 layers `edelta`'s final rank is {_low:.3f} at"
        rf" $\gamma_0 = 0.05$ and {_high:.3f} at $\gamma_0 = 0.9$ (computed here; add `edelta`"
        r" to the rules and read the readout's digits, not the plot). The gate matters for how"
        r" E∆ trains, not for its rank at initialisation."
    )
    return


@app.cell
def _(answer, mo):
    mo.stop(answer is None)
    beta0 = mo.ui.slider(
        -0.95,
        0.95,
        step=0.05,
        value=0.5,
        label="MGT β₀",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    lam = mo.ui.slider(
        0.1,
        2.0,
        step=0.05,
        value=1.0,
        label="MGT λ",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    alpha = mo.ui.slider(
        0.0,
        1.0,
        step=0.05,
        value=0.1,
        label="MGT α₀",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    gamma0 = mo.ui.slider(
        0.05,
        0.95,
        step=0.05,
        value=0.5,
        label="E∆ γ₀ (edelta only)",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    mo.vstack([beta0, lam, alpha, gamma0])
    return alpha, beta0, gamma0, lam


@app.cell
def _(alpha, beta0, gamma0, lam):
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
def _(depth, explore, gates, mo, reference, rules):
    # Each curve is computed once per setting (explore caches them): a bar while new ones are.
    view = explore.rank_view(
        tuple(rules.value),
        depth.value,
        reference=reference.value,
        progress=lambda curves: mo.status.progress_bar(
            curves, title="drawing weights and probing", remove_on_exit=True
        ),
        **gates,
    )
    return (view,)


@app.cell
def _(answer, mo, rules, view):
    mo.stop(
        answer is None,
        mo.md("*The curves of your rules appear once you have answered the question above.*"),
    )
    _notes = [
        mo.callout(mo.md(f"`{name}` is not drawn: {message}"), kind="warn")
        for name, message in view.numbers["rejected"].items()
    ]
    if "edelta" not in rules.value:
        _notes.append(mo.md(r"*$\gamma_0$ moves nothing now: add `edelta` to the rules.*"))
    mo.vstack([*_notes, mo.md(view.markdown())])
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["rank"]
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## Why MGT falls at 200 layers

    MGT's update is $x' = x + \beta \odot (V - \alpha x)$
    ([arXiv:2601.01014, Eq. 7, §3](https://arxiv.org/html/2601.01014#S3), $V$ the gated sublayer
    output); at init $\beta = \beta_0$ and $\alpha = \alpha_0$, so it is
    $x' = (1 - \alpha_0\beta_0)\,x + \beta_0\,V$ on every channel: the
    decay term keeps only a fraction $1 - \alpha_0\beta_0$ of the old state at each of the
    $2L$ residual steps (attention and MLP), $(1 - \alpha_0\beta_0)^{2L}$ of the input after
    $L$ layers: the tokens' own identity fades, and what is left is the sum of the last few
    sublayer outputs, which attention averages across tokens. The readout's last row shows
    $(1-\alpha_0\beta_0)^{2L}$ at your depth. Set $\alpha_0 = 0$ and MGT keeps its rank at 200
    layers; raise $\beta_0$ and it collapses sooner.

    With $\alpha_0\beta_0$ near 1 the state itself shrinks, by about a factor 10 every layer or
    two, below $10^{-31}$ where float32 has no digits left for it (its rank would read noise,
    then 0). Such a curve is recomputed in float64, whose range reaches $10^{-292}$; a curve
    that leaves even that range stops, with a label on the plot at the layer where it did.
    """)
    return


@app.cell(hide_code=True)
def _(alpha, answer, beta0, explore, mo):
    mo.stop(answer is None)
    _r = 1 - alpha.value * beta0.value
    mo.md(
        rf"At the sliders' $\alpha_0 = {alpha.value:g}$, $\beta_0 = {beta0.value:g}$:"
        rf" $1 - \alpha_0\beta_0 = {_r:.4g}$, and after 200 layers"
        rf" ${_r:.4g}^{{400}} {explore.power_text(_r, 400, tex=True)}$ of the input is left."
    )
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## The tokens themselves

    Each panel shows the 32 token vectors after one layer (layer 0: the input), projected on
    that layer's two main directions (scaled to unit mean norm) and centred on their mean.
    Healthy tokens form a cloud; collapsed tokens are one point in the middle of the panel.
    Every panel has the same scale. Slide the layer.
    """)
    return


@app.cell
def _(answer, depth, mo):
    mo.stop(answer is None)
    layer = mo.ui.slider(
        0,
        depth.value,
        value=depth.value,
        label="layer",
        show_value=True,
        debounce=True,
        full_width=True,
    )
    mo.vstack([layer])
    return (layer,)


@app.cell
def _(answer, depth, gates, layer, mo, rank_view, reference, rules):
    # a collapsed pure-attention cloud would answer the question above before it is asked
    mo.stop(answer is None, mo.md("*The token clouds appear once you have answered.*"))
    cloud = rank_view(
        tuple(rules.value),
        depth.value,
        reference=reference.value,
        layer=min(layer.value, depth.value),
        **gates,
    )
    cloud.figures["cloud"]
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## Every rule at this depth

    Drawing the weights of all eighteen rules at 200 layers takes a while on a laptop CPU, so it
    waits for the button. The table lists the effective rank and Dong's residual after the last
    layer (4 significant digits), or why a rule has none. The same numbers from a terminal,
    for the same rule, depth and seed (the same seeded weights and the same 32 random tokens):
    `geolab rank --residual mgt --layers 200`; pure attention is `--residual noskip --no-mlp`.
    """)
    return


@app.cell
def _(answer, mo):
    mo.stop(answer is None)
    compare = mo.ui.run_button(label="compare all rules at this depth")
    mo.center(compare)
    return (compare,)


@app.cell
def _(answer, compare, depth, explore, gates, mo):
    mo.stop(answer is None)
    mo.stop(not compare.value, mo.md("*Press the button to compare every rule.*"))
    # the bar counts residual steps still to compute (curves already drawn cost none)
    table = explore.compare_rows(
        depth.value,
        progress=lambda steps: mo.status.progress_bar(
            total=steps, title="drawing weights and probing every rule (residual steps)"
        ),
        **gates,
    )
    mo.ui.table(table, selection=None, page_size=len(table))  # every rule on one page
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## After training

    Everything above is at initialisation. Does training keep the rank or lose it? Notebook
    [09 · Rank after training](?file=09_trained_rank.py) reads the committed runs that trained
    these rules and measured the same curves before and after.
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
        "04_rank_collapse", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("04_rank_collapse", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("04_rank_collapse", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
