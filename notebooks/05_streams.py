import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium", app_title="05 · Streams over depth", html_head_file="offline_head.html"
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore
    from geolab.explore.streams import power_of_ten
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return explore, mo, power_of_ten


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 05 · Streams: what the mixer does over depth

    **You will be able to explain**

    1. why, in hyper-connections, depth multiplies the stream mixers: $L$ layers act as one
       product $H_L \cdots H_1$;
    2. what the two largest eigenvalues of that product, $\lvert\lambda_1\rvert$ and
       $\lvert\lambda_2\rvert$, say about the streams;
    3. what a doubly stochastic mixer (mHC) and an orthogonal one (JPmHC) each do to
       $\lvert\lambda_2\rvert$ over depth.

    **The setting.** Hyper-connections (Zhu et al. 2024,
    [arXiv:2409.19606](https://arxiv.org/abs/2409.19606)) keep $n = 4$ copies of the residual
    state, the *streams*. At every layer a $4 \times 4$ matrix $H$ mixes them: stream $i$
    becomes $\sum_j H_{ij}\,(\text{stream } j)$. After $L$ layers the streams have been
    multiplied by the product $P_L = H_L \cdots H_1$.

    mHC (Xie et al. 2025, [arXiv:2512.24880](https://arxiv.org/abs/2512.24880)) makes every $H$
    *doubly stochastic*: entries $\ge 0$, every row and every column summing to $1$. Then
    $H\mathbf 1 = \mathbf 1$, so the product's largest eigenvalue is $\lambda_1 = 1$, on the
    all-ones vector: the mean of the streams passes unchanged. The second largest,
    $\lvert\lambda_2\rvert$, measures everything else: how much of the *differences* between the
    streams is left.
    """)
    return


@app.cell
def _(explore):
    get_answer, set_answer = explore.answer_state()
    return get_answer, set_answer


@app.cell
def _(explore, get_answer, set_answer):
    guess, again = explore.question(
        r"**Predict first.** Stack 50 mHC mixers, a fresh one per layer (preset *random*:"
        r" logits with $N(0, 1)$ entries, 20 Sinkhorn iterations each). Where is"
        r" $\lvert\lambda_2\rvert$ of their product $P_{50}$?",
        [
            "about 1 (0.5 to 2): the differences survive",
            "between 10⁻³ and 0.5: they fade a little",
            "below 10⁻¹⁰: the streams become copies of their mean",
            "above 10: the differences grow",
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
def _(explore):
    spectrum_view = explore.notebook_cache(explore.spectrum_view)
    return (spectrum_view,)


@app.cell
def _(answer, explore, mo, power_of_ten, spectrum_view):
    mo.stop(answer is None, mo.md(explore.WAITING))
    _asked = spectrum_view("random", 50)
    _, _two = _asked.numbers["final"]["mHC"]
    _right = answer.startswith("below")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + r"After 50 fresh mHC mixers, $\lvert\lambda_2(P_{50})\rvert$ = "
                    + f"{power_of_ten(_two)}, while $\\lambda_1$ stays at 1. The four streams"
                    " now carry the same mix: their mean."
                ),
                kind="success" if _right else "warn",
            ),
            _asked.figures["mHC"],
            mo.md(r"""
    **Why?** A doubly stochastic $H$ keeps the all-ones direction, $H\mathbf 1 = \mathbf 1$:
    the mean of the streams. Every other eigenvalue of a positive doubly stochastic matrix
    lies strictly inside the unit circle (Perron–Frobenius), and the differences between the
    streams live in those directions. Each layer shrinks them by about $\lvert\lambda_2\rvert$,
    so $L$ layers shrink them by about $\lvert\lambda_2\rvert^L$: the dotted line, the product
    of each layer's own $\lvert\lambda_2\rvert$. The product tends to a matrix whose rows
    are all equal ($\tfrac1n\mathbf 1\mathbf 1^\top$, every row the mean, for exactly doubly
    stochastic mixers): the four streams become copies of one another and the extra width of
    hyper-connections is lost. This is
    **stream collapse**. The solid line is the product's own $\lvert\lambda_2\rvert$, computed
    exactly at every depth; it differs from the dotted one because fresh mixers have
    different eigenvectors, so their eigenvalues do not simply multiply.
    """),
        ]
    )
    return


@app.cell
def _(explore, mo):
    preset = mo.ui.dropdown(
        options=list(explore.PRESETS), value="random", label="preset (the logits of every layer)"
    )
    depth = mo.ui.slider(
        1, 200, step=1, value=100, label=r"depth $L$", show_value=True, full_width=True
    )
    same = mo.ui.checkbox(value=False, label="the same mixer at every layer")
    return depth, preset, same


@app.cell
def _(answer, depth, mo, preset, same):
    mo.stop(answer is None)
    mo.vstack(
        [
            mo.md(r"""
    ## All four families on the same logits

    Each preset fixes the logits $G_l = B + \sigma N_l$ of every layer ($N_l$ with $N(0, 1)$
    entries): *identity-ish* $B = 4I$, $\sigma = 0.5$ (a strong diagonal, as mHC starts training);
    *random* $B = 0$, $\sigma = 1$; *near-permutation* $B = 4P$ with $P$ a 4-cycle that hands
    stream $i$ to stream $i + 1$, $\sigma = 0.5$; *JPmHC rotation* $B = 2(P - P^\top)$, a
    rotation's generator, $\sigma = 0.5$. Each family turns $G_l$ into its mixer: HC
    $I + \tanh G_l$ (unconstrained), mHC $\mathrm{Sinkhorn}(G_l)$, mHC-lite (Yang & Gao 2026)
    a softmax-weighted mix of the 24 permutation matrices, JPmHC (Sengupta et al. 2026) two
    fixed-point Cayley steps on $G_l - G_l^\top$, a rotation up to its truncation error.
    Tick *the same mixer at every layer* and the solid line lies on the dotted one: the
    eigenvalues of $H^L$ are exactly $\lambda^L$.
    """),
            mo.hstack([preset, same], justify="start", gap=2),
            depth,
        ]
    )
    return


@app.cell
def _(depth, preset, same, spectrum_view):
    view = spectrum_view(preset.value, depth.value, same.value)
    return (view,)


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    mo.md(view.markdown())
    return


@app.cell
def _(answer, mo, view):
    mo.stop(answer is None)
    view.figures["spectrum"]
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(answer, explore, get_transfer, mo, set_transfer):
    mo.stop(answer is None)
    second, second_again = explore.question(
        r"**Second question.** JPmHC mixes the same four streams with rotations: orthogonal"
        r" matrices, whose eigenvalues all have $\lvert\lambda\rvert = 1$. Same preset"
        r" (*random*), 50 fresh layers: where is $\lvert\lambda_2\rvert$ of JPmHC's product?",
        [
            "below 10⁻¹⁰, like mHC",
            "about 1 (0.5 to 2)",
            "above 10⁶, like HC",
        ],
        get_transfer(),
        set_transfer,
    )
    explore.asked(second, second_again, get_transfer())
    return second, second_again


@app.cell
def _(get_transfer):
    transfer = get_transfer()
    return (transfer,)


@app.cell
def _(mo, power_of_ten, spectrum_view, transfer):
    mo.stop(transfer is None)
    _asked = spectrum_view("random", 50)
    _one, _two = _asked.numbers["final"]["JPmHC"]
    _right = transfer.startswith("about 1")
    mo.vstack(
        [
            mo.callout(
                mo.md(
                    ("**Right.** " if _right else "**No.** ")
                    + r"JPmHC after 50 layers: $\lvert\lambda_1\rvert$ = "
                    + f"{power_of_ten(_one)}, $\\lvert\\lambda_2\\rvert$ = {power_of_ten(_two)}."
                ),
                kind="success" if _right else "warn",
            ),
            _asked.figures["JPmHC"],
            mo.md(r"""
    **Why?** A product of orthogonal matrices is orthogonal: every eigenvalue stays on the
    unit circle, nothing is averaged away, and the streams stay as different as they were, at
    any depth. The few per cent above 1 are JPmHC's truncation: two fixed-point steps only
    approximate the exact Cayley rotation, so each mixer stretches a little, and a product of
    $L$ small stretches grows like $(1 + \varepsilon)^L$. Pick *near-permutation* at depth 200
    above to see it reach $10^4$.
    """),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    **Next:** [05b · Sinkhorn–Knopp](?file=05b_sinkhorn.py): how mHC turns a layer's logits
    into a doubly stochastic mixer, round by round, and how close 20 rounds get.
    """)
    return


if __name__ == "__main__":
    app.run()
