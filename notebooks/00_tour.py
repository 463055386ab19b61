import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="00 · geolab tour", html_head_file="offline_head.html")


@app.cell
def _():
    import re

    import marimo as mo

    from geolab import explore, glossary_markdown
    from geolab.terms import TERMS, terms_markdown
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return TERMS, explore, glossary_markdown, mo, re, terms_markdown


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # geolab · a lab for geometric residual connections

    A transformer layer adds its output to a **residual stream**: $x \mapsto x + F(x)$. Stack
    two hundred of them and that innocent "$+$" decides everything — whether token
    representations stay distinct or collapse to one vector, whether signals explode, whether a
    layer can erase what is no longer needed or rotate the state without changing its length.
    Two recent lines of work replace the "$+$" by geometry: **Delta operators** that erase along
    a direction before writing (DDL, and MGT's gated version: MGT is a research proposal
    without experiments, and notebook 07 tests its predictions), and **orthogonal mixers** built
    from Cayley rotations and Householder mirrors (E∆-MHC-Geo), next to the doubly stochastic
    stream mixers of mHC. geolab implements all of them exactly, and these notebooks let you
    slide $\beta$, $\lambda$, $\alpha$, $\gamma$ and watch the invariants hold — or break — live.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try it: one slider, one operator

    $A(k, \beta) = I - \beta\, k k^\top$ for a unit vector $k$, in $\mathbb{R}^4$. Slide $\beta$
    from $0$ (identity) to $1$ and watch the eigenvalues: three of the four stay at $1$, one
    moves (left plot; the label $\times 3$ marks the three stacked at $1$). What happens past
    $\beta = 1$ is notebook 01's opening question, so this slider stops at $1$.
    """)
    return


@app.cell
def _(mo):
    # [0, 1] only: at β = 2 the readout would answer 01's predict-first question (det A = −1)
    beta = mo.ui.slider(
        0.0, 1.0, step=0.05, value=1.0, label=r"$\beta$", show_value=True, full_width=True
    )
    mo.vstack([beta])
    return (beta,)


@app.cell
def _(beta, explore, mo):
    teaser = explore.delta_view(beta.value, 0.5, 1.0)
    det = round(teaser.numbers["det"], 3) + 0.0  # + 0.0: no "−0.000"
    moving = teaser.numbers["eig_along_k"] + 0.0
    mo.vstack(
        [
            mo.md(
                rf"**{teaser.numbers['mode']}** &nbsp; the eigenvalue that moves:"
                rf" ${moving:.3f}$ &nbsp; $\det A = {det:.3f}$"
            ),
            mo.hstack([teaser.figures["spectrum"], teaser.figures["image"]], widths="equal"),
        ]
    )
    return


@app.cell
def _(mo, re):
    # What each notebook is about; a notebook added to notebooks/ shows up below with its title
    # even before it has a line here.
    about = {
        "00_tour": "this page",
        "01_delta_operator": "identity → eraser → mirror: the spectrum and determinant of "
        "$A(k, \\beta)$",
        "02_mgt_block": "MGT's per-channel gates, and what they do to the Delta operator's "
        "spectrum",
        "03_cayley_householder": "rotations, mirrors and their hybrid: can a rotation invert?",
        "04_rank_collapse": "effective rank per layer over 12–200 layers for any residual rule",
        "05_streams": "Sinkhorn residual; composite mixing gain of HC vs mHC vs orthogonal",
        "06_training_lab": "train small models live, compare rules side by side, watch $\\beta$ "
        "learn",
        "07_reproduce": "the MGT proposal's predictions and the E∆ paper's claims, tested at "
        "small scale, with verdicts",
        "08_gradients": "what depth does to gradients: per-layer norms, Jacobian singular values",
        "assignments/A1_delta": "exercise: build the Delta operator (automatic checks)",
        "assignments/A2_cayley": "exercise: Cayley and Householder (automatic checks)",
        "assignments/A3_rank": "exercise: effective rank (automatic checks)",
        "assignments/A4_rule": "exercise: write your own residual rule (automatic checks)",
    }
    folder = mo.notebook_dir()
    files = sorted(folder.glob("*.py")) + sorted((folder / "assignments").glob("*.py"))
    # `marimo run notebooks` opens this page as ?file=00_tour.py and serves every notebook by
    # that link; `marimo run notebooks/00_tour.py` serves this file alone (no ?file=), where a
    # link would only return marimo's "File … not found": there each row names its command.
    linked = "file" in mo.query_params()
    rows = []
    for path in files:
        name = path.relative_to(folder).with_suffix("").as_posix()
        title = re.search(r'app_title="([^"]*)"', path.read_text(encoding="utf-8"))
        what = about.get(name, title.group(1) if title else "")
        where = f"[`{name}`](?file={name}.py)" if linked else f"`marimo run notebooks/{name}.py`"
        rows.append(f"| {where} | {what} |")
    alone = (
        "*This page is served alone, so the notebooks are not links: run the command in a"
        " row (`.venv/bin/python -m marimo run …` from the repository), or serve the whole"
        " folder with `.venv/bin/python -m marimo run notebooks` and every name becomes a"
        " link.*\n\n"
    )
    mo.md(
        "## The notebooks\n\n"
        + ("" if linked else alone)
        + "| notebook | what it is about |\n|:--|:--|\n"
        + "\n".join(rows)
        + "\n\n01–05 and 08 each ask a question first: commit to a guess, then the plot answers."
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## How to navigate

    * **The names above** are links when marimo serves the whole folder:
      `.venv/bin/python -m marimo run notebooks` (read-only apps) or
      `.venv/bin/python -m marimo edit notebooks` (editable). When marimo serves this file
      alone, a link cannot reach the others, so the table gives each one's command instead.
    * `marimo run notebooks/NN_name.py` shows a notebook as an app, its code hidden;
      `marimo edit` shows the code too (in edit mode, each cell's code opens from the cell
      itself); `python notebooks/NN_name.py` runs it top to bottom as a script.
    * The plots come from `geolab.figures` and the numbers from `geolab.explore`, so what you
      read here is the library's own code path.
    * Jupyter users: `geolab.widgets` has the same explorers as ipywidgets.
    """)
    return


@app.cell(hide_code=True)
def _(TERMS, glossary_markdown, mo, terms_markdown):
    mo.vstack(
        [
            mo.md(
                "## The residual rules\n\nThe rules the notebooks compare, by the names you"
                " pick them with (`geolab.glossary_markdown()` prints this table):"
            ),
            mo.accordion(
                {
                    "rule glossary: update and paper": mo.md(glossary_markdown()),
                    # the same definitions show on hover where a notebook first uses a word
                    "words the notebooks use (ω, ppl, norm_dev, learned, converged, …)": mo.md(
                        terms_markdown(TERMS)
                    ),
                }
            ),
        ]
    )
    return


if __name__ == "__main__":
    app.run()
