import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="03 · Cayley rotations and Householder mirrors",
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
    # 03 · Cayley rotations and Householder mirrors
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("03_cayley_householder"))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    The Cayley map turns two vectors $u, v$ and a scale $\beta$ into a rotation $Q$ of the
    plane they span: $\det Q = +1$ and $Q^\top Q = I$ for every $\beta$, and the angle
    $\theta$ it turns by grows with $\beta$. E∆-MHC-Geo (Shahmansoori 2026,
    [arXiv:2605.06729](https://arxiv.org/html/2605.06729v1)) builds its stream mixers from
    such rotations. Turning a vector $x$ into $-x$ takes $\theta = \pi$.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** Turn the Cayley scale up to $\beta = 1000$ (angle $a = 1.2$"
        r" between $u$ and $v$). Does the rotation angle $\theta$ reach $\pi$?",
        [
            "yes: at some finite β, θ = π and Q maps x to −x",
            "no: θ gets ever closer to π but stays below it",
            "θ passes π and wraps around",
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
    _far = explore.cayley_limit_view(1000.0, 1.2)
    _n = _far.numbers
    _right = answer.startswith("no")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + rf"At $\beta = 1000$ (angle $a = 1.2$): $\theta/\pi = "
                    rf"{_n['theta_over_pi']:.6f}$,"
                    rf" $\pi - \theta = {explore.tex_sci(_n['gap'])}$, and the"
                    rf" nearest eigenvalue of $Q$ is still {_n['distance_to_minus_one']:.1e}"
                    r" away from $-1$. The plot follows $\pi - \theta$ from $\beta = 0.1$ up to"
                    r" exactly $\beta = 1000$ on log axes: it shrinks like $1/\beta$ and never"
                    r" reaches $0$."
                ),
                kind="success" if _right else "warn",
            ),
            _far.figures["gap"],
            mo.md(
                r"**Why?** $\theta = 2\arctan(\beta\omega/2)$, where"
                r" $\omega = \lVert u\rVert\lVert v\rVert\sin a$ is the area $u$ and $v$ span"
                r" (here $\sin 1.2 \approx 0.93$), and $\arctan$ never reaches"
                r" $\pi/2$, so $\pi - \theta = 2\arctan\big(2/(\beta\omega)\big) > 0$ at every"
                r" finite $\beta$: a Cayley rotation can never invert a vector."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## The Cayley map of a rank-2 generator

    $A = u v^\top - v u^\top$ is skew-symmetric, and
    $Q = (I + cA)^{-1}(I - cA)$ with $c = \beta/2$ is a rotation of the plane
    $\mathrm{span}\{u, v\}$ by $\theta = 2\arctan(c\,\omega)$,
    $\omega = \lVert u\rVert\lVert v\rVert\sin\angle(u, v)$, fixing everything else.
    geolab applies it in closed form with no solve; the table compares it with the dense solve.
    Here $u = e_1$, $v = \cos a\, e_1 + \sin a\, e_2$, $k = (e_2 + e_3)/\sqrt2$ in $\mathbb{R}^4$.
    """)
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
    mo.vstack([beta, angle])
    return angle, beta


@app.cell
def _(explore):
    cayley_view = explore.notebook_cache(explore.cayley_view)
    return (cayley_view,)


@app.cell
def _(angle, beta, cayley_view):
    view = cayley_view(beta.value, angle.value, 0.5)  # γ is 03b's: no row or plot here reads it
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.vstack(
        [
            mo.md(view.markdown(rows=slice(0, 7))),  # the rotation's rows, and the mirror's det
            mo.hstack([view.figures["spectrum"], view.figures["angle"]], widths="equal"),
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
        "03_cayley_householder", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("03_cayley_householder", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("03_cayley_householder", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
