import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="00 · geolab tour")


@app.cell
def _():
    import marimo as mo

    from geolab import explore, glossary_markdown

    return explore, glossary_markdown, mo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # geolab · a lab for geometric residual connections

    A transformer layer adds its output to a **residual stream**: $x \mapsto x + F(x)$. Stack
    two hundred of them and that innocent "$+$" decides everything — whether token
    representations stay distinct or collapse to one vector, whether signals explode, whether a
    layer can erase what is no longer needed or rotate the state without changing its length.
    Two recent lines of work replace the "$+$" by geometry: **Delta operators** that erase along
    a direction before writing (DDL, and MGT's gated version), and **orthogonal mixers** built
    from Cayley rotations and Householder mirrors (E∆-MHC-Geo), next to the doubly stochastic
    stream mixers of mHC. geolab implements all of them exactly, and these notebooks let you
    slide $\beta$, $\lambda$, $\alpha$, $\gamma$ and watch the invariants hold — or break — live.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try it: one slider, one operator

    $A(k, \beta) = I - \beta\, k k^\top$ for a unit vector $k$. Slide $\beta$ from $0$
    (identity) through $1$ (erase the $k$ component) to $2$ (a mirror) and watch the one
    eigenvalue that moves. Notebook 01 takes this apart.
    """)
    return


@app.cell
def _(mo):
    beta = mo.ui.slider(
        -1.0, 3.0, step=0.05, value=1.0, label=r"$\beta$", show_value=True, full_width=True
    )
    mo.vstack([beta])
    return (beta,)


@app.cell
def _(beta, explore, mo):
    teaser = explore.delta_view(beta.value, 0.5, 1.0)
    det = round(teaser.numbers["det"], 3) + 0.0  # + 0.0: no "−0.000"
    mo.hstack(
        [
            mo.md(rf"**{teaser.numbers['mode']}** &nbsp; $\det A = {det:.3f}$"),
            teaser.figures["image"],
        ],
        widths=[1, 2],
        align="center",
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The notebooks

    | notebook | one idea, and the invariant shown live |
    |:--|:--|
    | `01_delta_operator` | identity → eraser → mirror; $\det A = 1-\beta$, $d-1$ unit eigenvalues |
    | `02_mgt_block` | MGT's per-channel gates; $\operatorname{rank}(J - I)$ is $d$, not $1$ |
    | `03_cayley_householder` | rotations never invert: $\det Q = 1$, $\theta < \pi$; mirrors do |
    | `04_rank_collapse` | effective rank per layer over 12–200 layers for any residual rule |
    | `05_streams` | Sinkhorn residual; composite mixing gain of HC vs mHC vs orthogonal |
    | `06_training_lab` | train small models live, compare rules side by side, watch $\beta$ learn |
    | `07_reproduce` | the papers' claims next to geolab's small-scale numbers, with verdicts |
    | `08_gradients` | what depth does to gradients: per-layer norms, Jacobian singular values |
    | `assignments/A1`–`A4` | exercises with automatic checks: Delta, Cayley, rank, your rule |

    01–05 each start with a question: commit to a guess, then the plot answers.

    ## How to navigate

    * Open another notebook from a terminal in the repository:
      `.venv/bin/python -m marimo edit notebooks/01_delta_operator.py` (any name from the
      table), or browse them all with `.venv/bin/python -m marimo edit notebooks/`.
    * `marimo run notebooks/NN_name.py` shows a notebook as an app (code hidden);
      `python notebooks/NN_name.py` runs it top to bottom as a script.
    * Grey prose cells hide their code; click a cell's eye icon to see it. The plots come from
      `geolab.figures` and the numbers from `geolab.explore`, so what you read here is the
      library's own code path.
    * Jupyter users: `geolab.widgets` has the same explorers as ipywidgets.
    """)
    return


@app.cell(hide_code=True)
def _(glossary_markdown, mo):
    mo.vstack(
        [
            mo.md(
                "## The residual rules\n\nThe rules the notebooks compare, by the names you"
                " pick them with (`geolab.glossary_markdown()` prints this table):"
            ),
            mo.accordion({"rule glossary: update and paper": mo.md(glossary_markdown())}),
        ]
    )
    return


if __name__ == "__main__":
    app.run()
