import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="03b · The hybrid of a rotation and a mirror",
    html_head_file="offline_head.html",
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
    # 03b · The hybrid of a rotation and a mirror
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("03b_hybrid"))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    E∆-MHC-Geo (Shahmansoori 2026, [arXiv:2605.06729](https://arxiv.org/html/2605.06729v1))
    mixes a Cayley rotation $Q$ ($\det Q = +1$, notebook 03) with a Householder mirror
    $H_2(k) = I - 2kk^\top$ ($\det = -1$) through a gate $\gamma$:

    $$G_\gamma = \gamma\,Q + (1-\gamma)\,H_2(k).$$

    At $\gamma = 1$ it is the rotation, at $\gamma = 0$ the mirror. Here
    $u = e_1$, $v = \cos a\, e_1 + \sin a\, e_2$, $k = (e_2 + e_3)/\sqrt2$ in $\mathbb{R}^4$.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** Halfway, at $\gamma = \tfrac12$ (Cayley scale $\beta = 2$, angle"
        r" $a = 1.2$): what is $\det G_\gamma$?",
        ["1", "0.5", "0", "−1"],
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
    _half = explore.cayley_view(2.0, 1.2, 0.5)
    _n = _half.numbers
    _det = explore.tex_sci(_n["det_g"], 1)  # in maths: never "1.2e-16"
    _right = answer == "0"
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + f"At $\\gamma = \\tfrac12$: $\\det G_\\gamma = {_det}$ and its smallest"
                    f" singular value is {_n['sv_min']:.1e}, zero to float64 rounding."
                    " The plot follows both along $\\gamma$ from the mirror to the rotation."
                ),
                kind="success" if _right else "warn",
            ),
            _half.figures["hybrid"],
            mo.md(
                r"**Why?** $\det G_\gamma$ must pass from $-1$ (the mirror) to $+1$ (the"
                r" rotation), so through $0$. It passes at $\gamma = \tfrac12$ for every"
                r" rotation $Q$: $G_{1/2} = \tfrac12 H_2(k)\,(H_2(k)\,Q + I)$, and $H_2(k)\,Q$ is"
                r" orthogonal with $\det = -1$, so it has the eigenvalue $-1$ (its real"
                r" eigenvalues are $\pm1$, its complex ones come in pairs of product $1$, and"
                r" all multiply to $-1$). The matching eigenvector $x$ has $G_{1/2}\,x = 0$: the"
                r" hybrid erases a whole direction there."
            ),
        ]
    )
    return


@app.cell
def _(answer, mo):
    mo.stop(answer is None)  # the controls come with the answer: nothing to explore before it
    beta = mo.ui.slider(
        0.0,
        20.0,
        step=0.1,
        value=2.0,
        label=r"Cayley scale $\beta$",
        show_value=True,
        full_width=True,
    )
    angle = mo.ui.slider(
        0.0,
        3.14,
        step=0.02,
        value=1.2,
        label=r"angle $a$ between $u$ and $v$",
        show_value=True,
        full_width=True,
    )
    gamma = mo.ui.slider(
        0.0,
        1.0,
        step=0.01,
        value=0.5,
        label=r"hybrid gate $\gamma$",
        show_value=True,
        full_width=True,
    )
    mo.vstack([beta, angle, gamma])
    return angle, beta, gamma


@app.cell
def _(explore):
    cayley_view = explore.notebook_cache(explore.cayley_view)
    return (cayley_view,)


@app.cell
def _(angle, beta, cayley_view, gamma):
    view = cayley_view(beta.value, angle.value, gamma.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.vstack(
        [
            mo.md(view.markdown(rows=slice(6, 9))),  # the mirror's and the hybrid's rows
            view.figures["hybrid"],
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
    transfer, transfer_again = explore.transfer_question("03b_hybrid", get_transfer(), set_transfer)
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("03b_hybrid", get_transfer())
    return


@app.cell
def _(answer, get_transfer, mo, view):
    mo.stop(answer is None or get_transfer() is None)  # the second question's own answer
    mo.vstack(
        [
            mo.md(r"""
    ## The regulariser

    $L_{gate}(\gamma) = 4\gamma(1-\gamma)$ pushes $\gamma$ to $0$ or $1$, but its gradient
    $4 - 8\gamma$ vanishes at $\gamma = \tfrac12$, exactly where the gate is initialised. Any
    symmetric $r(\gamma) = r(1-\gamma)$ has $r'(\tfrac12) = 0$
    ([E∆ Theorem 7.3, §7](https://arxiv.org/html/2605.06729v1#S7)): set $\gamma = 0.5$ and
    read the gradient in the table.
    """),
            mo.md(view.markdown(rows=slice(9, None))),
            view.figures["regularizer"],
        ]
    )
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("03b_hybrid", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
