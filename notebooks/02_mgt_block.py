import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="02 · Does MGT keep the Delta spectrum?",
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
    # 02 · Does MGT keep the Delta operator's spectrum?
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("02_mgt_block"))
    return


@app.cell(hide_code=True)
def _(mo, term):
    mo.md(
        r"""
    In 01 the Delta operator changed the stream along one direction $k$. MGT (Su & You 2026,
    [arXiv:2601.01014, Algorithm 1, §3](https://arxiv.org/html/2601.01014#S3)) is named after
    it, with a gate on every channel of every token ("""
        + term("LN")
        + r""" normalises each token, the """
        + term("tangent gate")
        + r""" $g$ scales the write):

    $$X' = X + \beta \odot \big(F(\mathrm{LN}\,X) \odot \sigma(\mathrm{LN}(X W_{gate})) -
    \alpha X\big), \qquad \beta = \lambda \tanh(X W_\beta + b_\beta) + \epsilon .$$

    For one token, its Jacobian $J = \partial x'/\partial x$ says which directions the update
    moves: an eigenvalue $1$ is a direction it leaves alone. The question below tests a claim of
    the paper's theory (its [Proposition 3.5, §3](https://arxiv.org/html/2601.01014#S3)).
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
        r"**Predict first.** At the default settings below ($\lambda = 1$, $\epsilon = 0$,"
        r" $\alpha = 0.1$, $\beta_0 = 0.5$, $W_\beta$ scale 1), how many of the 16 eigenvalues of"
        r" MGT's Jacobian $J = \partial x'/\partial x$ for one token are exactly $1$?",
        ["15 of 16, like the Delta operator", "about half", "none of them"],
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
    # The case asked, not the sliders.
    _asked = mgt_view(1.0, 0.0, 0.1, 0.5, 1.0)
    _n = _asked.numbers
    _right = answer == "none of them"
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"At the default settings {_n['unit_eigs_mgt']} of 16 eigenvalues of $J$"
                    f" equal 1 (the Delta operator: {_n['unit_eigs_delta']} of 16), and"
                    f" $\\operatorname{{rank}}(J - I) = {_n['rank_mgt']}$ against"
                    f" $\\operatorname{{rank}}(A - I) = {_n['rank_delta']}$. The plot puts each"
                    " eigenvalue's distance from 1 on a log axis: the Delta operator's 15 sit on"
                    " the floor, MGT's are all well above."
                ),
                kind="success" if _right else "warn",
            ),
            _asked.figures["jacobian"],
            mo.md(explore.jacobian_why(_n)),
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


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## The Jacobian at your sliders

    For one token, $J = \partial x'/\partial x$ (computed by autograd through geolab's `mgt`
    rule and a real attention layer). The Delta operator $A(k, \beta_0)$ changes only one
    direction: $\operatorname{rank}(A - I) = 1$ and $d-1$ eigenvalues sit exactly at $1$.
    Move the sliders: does any setting bring MGT's eigenvalues back to $1$?
    """)
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    _n = view.numbers
    mo.vstack(
        [
            mo.md(
                f"**At your sliders:** {_n['unit_eigs_mgt']} of 16 eigenvalues of $J$ equal 1,"
                f" $\\operatorname{{rank}}(J - I) = {_n['rank_mgt']}$."
            ),
            view.figures["jacobian"],
        ]
    )
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)  # the second question comes after the first one's reveal
    transfer, transfer_again = explore.transfer_question(
        "02_mgt_block", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("02_mgt_block", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("02_mgt_block", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
