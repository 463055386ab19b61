import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="00 · geolab tour", html_head_file="offline_head.html")


@app.cell(hide_code=True)
def _():
    import re

    import marimo as mo

    from geolab import explore, glossary_markdown
    from geolab.terms import TERMS, term, terms_markdown
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return TERMS, explore, glossary_markdown, mo, re, term, terms_markdown


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # geolab · a lab for geometric residual connections

    A transformer layer adds its output to a **residual stream**: $x \mapsto x + F(x)$. Stack
    two hundred of them and that "$+$" decides whether tokens stay distinct, whether signals
    explode, whether a layer can erase what it no longer needs. Try the first replacement of
    the "$+$": $A(k, \beta) = I - \beta\, k k^\top$ for a unit vector $k$. Slide $\beta$ and
    watch what $A$ does to the unit circle.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    # [0, 0.9] only: what happens at β = 1 and past it is notebook 01's predict-first question
    beta = mo.ui.slider(
        0.0, 0.9, step=0.05, value=0.5, label=r"$\beta$", show_value=True, full_width=True
    )
    mo.vstack([beta])
    return (beta,)


@app.cell(hide_code=True)
def _(beta, explore):
    teaser = explore.delta_view(beta.value, 0.5, 1.0)
    # the circle only: the spectrum or a readout of det A would let 01's answer be extrapolated
    teaser.figures["image"]
    return


@app.cell(hide_code=True)
def _(mo, term):
    mo.md(
        r"""
    ## The story

    Two recent lines of work replace the "$+$" by geometry: **Delta operators** that erase
    along a direction before writing (DDL, and MGT's gated version), and **orthogonal
    mixers** built from Cayley rotations and Householder mirrors (E∆-MHC-Geo), next to the
    """
        + term("doubly stochastic")
        + r""" stream mixers of mHC. geolab implements all of them exactly, and these notebooks
    let you slide $\beta$, $\lambda$, $\alpha$, $\gamma$ and watch the invariants hold — or
    break — live. MGT is a research proposal without experiments: where a notebook meets its
    hypotheses (rank kept at depth, a sign change of $\beta$), it tests its predictions, and
    notebook 07 says what a verdict on them means.
    """
    )
    return


@app.cell
def _(explore, mo, re):
    folder = mo.notebook_dir()
    # `marimo run notebooks` opens this page as ?file=00_tour.py and serves every notebook by
    # that link; `marimo run notebooks/00_tour.py` serves this file alone (no ?file=), where a
    # link would only return marimo's "File … not found": there each line names its command.
    linked = "file" in mo.query_params()
    on_path = {x.name for x in explore.LESSONS} | {"00_tour"}
    rows = []  # every notebook off the path, the exercises first: found here, not listed by hand
    for path in sorted((folder / "assignments").glob("*.py")) + sorted(folder.glob("*.py")):
        name = path.relative_to(folder).with_suffix("").as_posix()
        if name in on_path:
            continue
        title = re.search(r'app_title="([^"]*)"', path.read_text(encoding="utf-8"))
        where = f"[`{name}`](?file={name}.py)" if linked else f"`marimo run notebooks/{name}.py`"
        rows.append(
            f"| {where} | {title.group(1) if title else 'exercise, checked automatically'} |"
        )
    alone = (
        "*This page is served alone, so the notebooks are not links: run the command in a"
        " line (`.venv/bin/python -m marimo run …` from the repository), or serve the whole"
        " folder with `.venv/bin/python -m marimo run notebooks` and every name becomes a"
        " link.*\n\n"
    )
    mo.md(
        "## The path: one lesson after the other\n\n"
        + ("" if linked else alone)
        + explore.path_markdown(linked)
        + "\n\nEach lesson asks a question first: commit to a guess, then the page answers."
        + " Each ends with a second question on a new case, and a link to the next lesson.\n\n"
        + "| exercise | what it is about |\n|:--|:--|\n"
        + "\n".join(rows)
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
