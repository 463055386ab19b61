import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium", app_title="01 · The Delta operator", html_head_file="offline_head.html"
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
    # 01 · The Delta operator
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("01_delta_operator"))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    One matrix, $A(k,\beta) = I - \beta\,\dfrac{k k^\top}{\lVert k\rVert^2}$, built from a
    direction $k$ and one number $\beta$. It is the heart of *Deep Delta Learning* (Zhang et
    al. 2026, [arXiv:2601.00417, Eq. (2.1), §2.1](https://arxiv.org/abs/2601.00417); its
    spectrum: [Proposition 2.1, §2.3](https://arxiv.org/abs/2601.00417)), restated by Su & You
    2026 ([arXiv:2601.01014](https://arxiv.org/html/2601.01014v3)): a residual connection that
    can change the stream along one direction $k$. First, a guess.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** At $\beta = 2$, what is $\det A$?",
        ["1", "0", "−1", "3"],
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
def _(answer, delta_view, explore, mo):
    mo.stop(answer is None, mo.md(explore.WAITING))
    mirror = delta_view(2.0, 0.5, 1.0)
    right = answer == "−1"
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if right else f"**Not {answer}.** ")
                    + rf"At $\beta = 2$, $\det A = {mirror.numbers['det']:+.4f}$ (computed)."
                    r" The plot marks $\beta = 2$ on the determinant's line; beside it, $A$ at"
                    r" $\beta = 2$ maps the unit circle onto itself, turned inside out."
                ),
                kind="success" if right else "warn",
            ),
            mo.hstack([mirror.figures["det"], mirror.figures["image"]], widths="equal"),
            mo.md(
                r"**Why?** $A$ leaves every vector orthogonal to $k$ alone ($d-1$ eigenvalues"
                r" $1$) and scales $k$ by $1-\beta$, so $\det A = 1-\beta = -1$ at $\beta = 2$:"
                r" $A$ is the Householder mirror, which flips $k$ and keeps lengths."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## The spectrum in one line

    Every vector orthogonal to $k$ is left alone, so $d-1$ eigenvalues equal $1$. Along $k$,
    $A k = (1-\beta) k$, so the last eigenvalue is $1-\beta$ and $\det A = 1 - \beta$.
    Three values of $\beta$ are special (the shaded band $[0, 2]$ is where DDL's gate lives):

    | $\beta$ | operator | $\det A$ |
    |:--|:--|:--|
    | $0$ | identity | $1$ |
    | $1$ | projection onto $k^\perp$: the component along $k$ is **erased** | $0$ |
    | $2$ | Householder reflection $H_k$, $H_k^2 = I$ | $-1$ |

    $A$ is orthogonal only at $\beta \in \{0, 2\}$: watch $\lVert A^\top A - I\rVert_F$.
    """)
    return


@app.cell
def _(answer, explore, mo):
    mo.stop(answer is None)  # the controls come with the answer: nothing to explore before it
    beta = mo.ui.slider(
        -1.0, 3.0, step=0.05, value=0.5, label=r"gate $\beta$", show_value=True, full_width=True
    )
    v = mo.ui.slider(
        -2.0,
        2.0,
        step=0.05,
        value=1.0,
        label=r"written value $v$",
        show_value=True,
        full_width=True,
    )
    # k's direction by dragging the arrow itself (a slider, from the keyboard: ←/→)
    phi = mo.ui.anywidget(explore.DirectionDial(0.5))
    mo.vstack([beta, mo.hstack([phi, v], justify="start", align="center", widths=[1, 3])])
    return beta, phi, v


@app.cell
def _(explore):
    delta_view = explore.notebook_cache(explore.delta_view)
    return (delta_view,)


@app.cell
def _(beta, delta_view, phi, v):
    view = delta_view(beta.value, phi.value["phi"], v.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.vstack(
        [
            mo.md(view.markdown()),
            mo.hstack([view.figures["spectrum"], view.figures["det"]], widths="equal"),
        ]
    )
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## What $A$ does to the unit circle

    In the plane that contains $k$, the circle is squeezed along $k$ by the factor $1-\beta$:
    to a segment at $\beta = 1$ (erasure loses one dimension, hence $\det = 0$), and flipped
    back to the same circle at $\beta = 2$ (a mirror keeps lengths). Grey segments join a
    point $x$ to its image $Ax$.
    """)
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["image"]
    return


@app.cell(hide_code=True)
def _(answer, mo):
    mo.stop(answer is None)
    mo.md(r"""
    ## Erase and write

    The residual update of Deep Delta Learning (Zhang et al. 2026,
    [arXiv:2601.00417, Eq. (2.2), §2.1](https://arxiv.org/abs/2601.00417)) is
    $x' = x + \beta\,(v - k^\top x)\,k$ for a unit $k$, which equals $A(k,\beta)\,x + \beta v k$.
    Along $k$ the new state holds $k^\top x' = (1-\beta)\,k^\top x + \beta v$: at $\beta = 1$
    the old value is erased and exactly $v$ is written. Slide $v$ and watch $x'$ (the last
    two rows of the table above give the numbers).
    """)
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["update"]
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)  # the second question comes after the first one's reveal
    transfer, transfer_again = explore.transfer_question(
        "01_delta_operator", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(answer, explore, get_transfer, mo):
    mo.stop(answer is None)
    explore.transfer_shown("01_delta_operator", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("01_delta_operator", "file" in mo.query_params()))
    return


if __name__ == "__main__":
    app.run()
