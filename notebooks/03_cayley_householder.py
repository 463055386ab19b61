import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="03 · Cayley, Householder and the hybrid")


@app.cell
def _():
    import marimo as mo

    from geolab import explore

    return explore, mo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 03 · Rotations that never invert, mirrors that always do

    **What you will see.** A rotation built from two vectors by the Cayley map keeps
    $\det Q = +1$ and $Q^\top Q = I$ for every $\beta$, and its angle $\theta$ creeps towards
    $\pi$ but never reaches it — so $-1$ is never an eigenvalue and a Cayley layer can never
    map $x$ to $-x$ (the *inversion problem*, Shahmansoori 2026, arXiv:2605.06729, Theorem 4.6). A
    Householder mirror has $\det = -1$ and inverts in one step. E∆-MHC-Geo mixes the two with a gate
    $\gamma$; the mixture is orthogonal only at the ends, and its regulariser cannot push a gate
    that sits at $\gamma = \tfrac12$.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
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
    guess = mo.ui.radio(
        options=[
            "yes: at some finite β, θ = π and Q maps x to −x",
            "no: θ creeps towards π but stays below it",
            "θ passes π and wraps around",
        ],
        label=r"**Predict first.** Turn the Cayley scale up to $\beta = 1000$. Does the"
        r" rotation angle $\theta$ reach $\pi$?",
    )
    mo.vstack([guess])
    return (guess,)


@app.cell
def _(cayley_view, guess, mo):
    mo.stop(guess.value is None, mo.md("*Pick an answer: the plot appears once you have.*"))
    _far = cayley_view(1000.0, 1.2, 0.5).numbers
    _right = guess.value.startswith("no")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + rf"At $\beta = 1000$ (angle $a = 1.2$): $\theta/\pi = "
                    rf"{_far['theta_over_pi']:.6f}$, and the nearest eigenvalue of $Q$ is still "
                    rf"{_far['distance_to_minus_one']:.1e} away from $-1$. "
                    r"$\theta = 2\arctan(\beta\omega/2)$ and $\arctan$ never reaches"
                    r" $\pi/2$: a Cayley rotation can never invert a vector."
                ),
                kind="success" if _right else "warn",
            ),
            cayley_view(20.0, 1.2, 0.5).figures["angle"],
        ]
    )
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
def _(mo, view):
    mo.md(view.markdown())
    return


@app.cell
def _(mo, view):
    mo.hstack([view.figures["spectrum"], view.figures["angle"]], widths="equal")
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The hybrid $G_\gamma = \gamma\,Q + (1-\gamma)\,H_2(k)$

    $H_2(k) = I - 2kk^\top$ is a mirror ($\det = -1$). A convex combination of two orthogonal
    maps is not orthogonal: between the ends the singular values of $G_\gamma$ drop below $1$,
    and $\det G_\gamma$ has to pass from $-1$ to $+1$ — through $0$.

    The gate regulariser $L_{gate}(\gamma) = 4\gamma(1-\gamma)$ pushes $\gamma$ to $0$ or $1$,
    but its gradient $4 - 8\gamma$ vanishes at $\gamma = \tfrac12$, exactly where the gate is
    initialised. Any symmetric $r(\gamma) = r(1-\gamma)$ has $r'(\tfrac12) = 0$
    (E∆ Theorem 7.3): set $\gamma = 0.5$ and read the gradient in the table.
    """)
    return


@app.cell
def _(mo, view):
    mo.hstack([view.figures["hybrid"], view.figures["regularizer"]], widths="equal")
    return


if __name__ == "__main__":
    app.run()
