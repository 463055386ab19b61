import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="03 · Cayley, Householder and the hybrid",
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
    # 03 · Cayley rotations, Householder mirrors and the hybrid

    **What you will see.** The Cayley map turns two vectors $u, v$ and a scale $\beta$ into a
    rotation $Q$ of the plane they span: $\det Q = +1$ and $Q^\top Q = I$ for every $\beta$,
    and the angle $\theta$ it turns by grows with $\beta$. Can such a rotation map a vector $x$
    to $-x$? That would need $\theta = \pi$ (the *inversion problem*, Shahmansoori 2026,
    [arXiv:2605.06729, Theorem 4.6 in §4](https://arxiv.org/html/2605.06729v1#S4)). A
    Householder mirror has $\det = -1$. E∆-MHC-Geo mixes the two with a gate $\gamma$; the
    mixture is orthogonal only at the ends, and its regulariser cannot push a gate that sits at
    $\gamma = \tfrac12$.
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
def _(mo):
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
    mo.stop(
        answer is None,
        mo.md(
            "*The table, the spectrum of $Q$ and its angle along $\\beta$ appear once you have"
            " answered the question above.*"
        ),
    )
    mo.vstack(
        [
            mo.md(view.markdown()),
            mo.hstack([view.figures["spectrum"], view.figures["angle"]], widths="equal"),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The hybrid $G_\gamma = \gamma\,Q + (1-\gamma)\,H_2(k)$

    $H_2(k) = I - 2kk^\top$ is a mirror ($\det = -1$). A convex combination of two orthogonal
    maps is not orthogonal: between the ends the singular values of $G_\gamma$ drop below $1$,
    and $\det G_\gamma$ has to pass from $-1$ to $+1$ — through $0$. It passes at
    $\gamma = \tfrac12$, for every rotation $Q$: $G_{1/2} = \tfrac12 H_2(k)\,(H_2(k)\,Q + I)$,
    and $H_2(k)\,Q$ is orthogonal with $\det = -1$, so it always has the eigenvalue $-1$ (its
    real eigenvalues are $\pm1$, its complex ones come in pairs of product $1$, and they all
    multiply to $-1$). The matching eigenvector $x$ has $G_{1/2}\,x = 0$: at $\gamma = \tfrac12$
    the hybrid erases a whole direction, whatever $\beta$ and $a$ are.

    The gate regulariser $L_{gate}(\gamma) = 4\gamma(1-\gamma)$ pushes $\gamma$ to $0$ or $1$,
    but its gradient $4 - 8\gamma$ vanishes at $\gamma = \tfrac12$, exactly where the gate is
    initialised. Any symmetric $r(\gamma) = r(1-\gamma)$ has $r'(\tfrac12) = 0$
    ([E∆ Theorem 7.3, §7](https://arxiv.org/html/2605.06729v1#S7)): set $\gamma = 0.5$ and read
    the gradient in the table.
    """)
    return


@app.cell
def _(mo, view):
    mo.hstack([view.figures["hybrid"], view.figures["regularizer"]], widths="equal")
    return


if __name__ == "__main__":
    app.run()
