import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="02b · MGT gates: keep, erase or amplify",
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
    # 02b · MGT's gates: keep, erase or amplify
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("02b_mgt_gates"))
    return


@app.cell(hide_code=True)
def _(mo, term):
    mo.md(
        r"""
    MGT (Su & You 2026, [arXiv:2601.01014](https://arxiv.org/html/2601.01014v3)) updates
    every channel of every token with its own gate $\beta$ and a decay $\alpha$:

    $$X' = X + \beta \odot \big(V - \alpha X\big), \qquad
    V = F(\mathrm{LN}\,X) \odot g, \qquad \beta = \lambda \tanh(X W_\beta + b_\beta) + \epsilon,$$

    where $V$ is what the layer writes and $g$ is the """
        + term("tangent gate")
        + r""". The gate
    $\beta$ lies in $(-\lambda + \epsilon, \lambda + \epsilon)$: it can be negative.
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
        r"**Predict first.** Decay $\alpha = 0.1$ and a gate $\beta = -0.5$ on one channel."
        r" Leave the write $V$ aside: what does one step do to that channel's old value?",
        [
            "keeps 95 % of it",
            "keeps 105 % of it: it grows",
            "keeps 50 % of it",
            "erases it",
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
def _(answer, explore, mgt_view, mo):
    mo.stop(answer is None, mo.md(explore.WAITING))
    # The case asked (every token at β₀ = −0.5: W_β scale 0), not the sliders.
    _asked = mgt_view(1.0, 0.0, 0.1, -0.5, 0.0)
    _n = _asked.numbers
    _right = answer.startswith("keeps 105")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"With every $\\beta = {_n['beta_mean']:.2f}$ and $\\alpha = 0.1$, each"
                    f" channel keeps {_n['retention_min']:.3f} times its old value (computed"
                    " through geolab's `mgt` rule): more than it had. The plot shows the gate"
                    " on every token and channel, all below 0."
                ),
                kind="success" if _right else "warn",
            ),
            _asked.figures["beta"],
            mo.md(
                r"**Why?** Without the write, a channel becomes $x + \beta(-\alpha x) ="
                r" (1 - \alpha\beta)\,x$. With $\beta < 0$ the factor $1 - \alpha\beta$ is above"
                r" $1$: the old state grows, and the write $\beta V$ is subtracted."
            ),
        ]
    )
    return


@app.cell
def _(answer, explore, mo):
    mo.stop(answer is None)  # the controls come with the answer: nothing to explore before it
    lam, eps, alpha, w_scale = explore.mgt_sliders()
    mo.vstack([lam, eps, alpha, w_scale])
    return alpha, eps, lam, w_scale


@app.cell
def _(mo):
    # the β₀ the learner asked for, kept while a narrow λ holds the slider inside the range
    get_beta0, set_beta0 = mo.state(0.5)
    return get_beta0, set_beta0


@app.cell
def _(eps, explore, get_beta0, lam, set_beta0):
    beta0 = explore.beta0_control(lam.value, eps.value, get_beta0(), set_beta0)
    explore.beta0_shown(beta0, lam.value, eps.value, get_beta0())
    return (beta0,)


@app.cell(hide_code=True)
def _(answer, explore, mo):
    mo.stop(answer is None)
    mo.md(explore.BETA0_NOTE)
    return


@app.cell
def _(explore):
    mgt_view = explore.notebook_cache(explore.mgt_view)
    return (mgt_view,)


@app.cell
def _(alpha, beta0, eps, lam, mgt_view, w_scale):
    view = mgt_view(lam.value, eps.value, alpha.value, beta0.value, w_scale.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.md(view.markdown())
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## Accumulation or erasure

    Channel by channel the update is $x' = (1 - \alpha\beta)\,x + \beta\, V$. With a small
    $\alpha\beta$ the old state is kept and $V$ is **accumulated**; as $\alpha\beta \to 1$ the old
    value is **erased** and replaced; a negative $\beta$ amplifies the old state and subtracts
    $V$. The table's *retention* row shows $1 - \alpha\beta$ over all channels. The tangent gate
    $g = \sigma(\mathrm{LN}(XW_{gate}))$ scales the write $V$ channel by channel. The bars
    below show the write alone, without the decay $-\alpha\beta x$: at init attention's output
    is about a thousandth of the state, so the decay dominates the whole update and the gate's
    effect would not show. The diamonds are $g$ itself (right axis), between 0 and 1 per
    channel. No slider moves $g$: it reads only the tokens $X$ and $W_{gate}$, both fixed here,
    and its mean sits near $\tfrac12$ because the layer norm centres $XW_{gate}$ before the
    sigmoid.
    """)
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.hstack([view.figures["beta"], view.figures["gate"]], widths="equal")
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)  # the second question comes after the first one's reveal
    transfer, transfer_again = explore.transfer_question(
        "02b_mgt_gates", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("02b_mgt_gates", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("02b_mgt_gates", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
