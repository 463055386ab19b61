import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium", app_title="07 · Reproducing the papers", html_head_file="offline_head.html"
)


@app.cell
def _():
    import marimo as mo

    from geolab import explore
    from geolab.experiments import NAMES, decide, get_protocol, report
    from geolab.experiments.runner import run_protocol
    from geolab.terms import term
    from geolab.threads import use_threads

    use_threads()  # one thread unless GEOLAB_THREADS says otherwise (README: "Threads")

    return NAMES, decide, explore, get_protocol, mo, report, run_protocol, term


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 07 · What a verdict means
    """)
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.opening("07_reproduce"))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    The MGT paper on arXiv is a research proposal: it states hypotheses before any experiment
    (H1: a standard transformer's effective rank collapses towards 0 by 100 layers; H2: MGT
    keeps it above 0.5; a positive synergy $\mathcal S$ of its two gates,
    [Eq. 9, §4](https://arxiv.org/html/2601.01014#S4); a sign "phase transition" of $\beta$ with
    depth) and reports no runs, so geolab tests its predictions. The E∆ paper publishes a small
    benchmark table. geolab ran every protocol at *small* scale on a CPU and committed the
    numbers under `data/results/`. This page says what a verdict on such runs means; the full
    ledger is behind the accordions at the end.
    """)
    return


@app.cell
def _(mo):
    results_dir = mo.notebook_dir().parent / "data" / "results"
    return (results_dir,)


@app.cell
def _(mo, report, results_dir):
    results = report.load_results(results_dir)
    mo.stop(not results, mo.md(f"*No committed results found in `{results_dir}`.*"))
    return (results,)


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## What a verdict means

    Each claim has a **rule**, written in the code before the runs, that turns numbers into
    *reproduced* or *not reproduced at this scale* (or *inconclusive* when a 95 % interval over
    seeds covers the line). The rule's verdict only stands on sound evidence:

    - **learned** — a run beat its task's *best trivial baseline* (predictors that learn
      nothing: predict zero, copy the input, closed forms such as the angle of the last two
      states on the gyroscope, n-gram counts for text) by a margin: MSE at most ½ of it,
      perplexity at most 0.9 × it. The **ratio to the best trivial baseline** is the run's
      number divided by that best one: below the line (½ or 0.9) it learned;
    - **converged** — the last quarter of training improved by less than 2 % (the *gain* in the
      margins column), so more steps would not change the picture; a run that never moved
      *did not train*;
    - **three seeds**, and compared models within 3 % of each other's parameter count.

    When a check fails the verdict reads *inconclusive:* and names why, with what the rule alone
    said beside it. When no run of any size could pass on the task (echo: its noise is above
    half the best baseline), it reads *undecidable on this task*.

    $$\mathcal S = (L_{\text{base}} - L_{\text{MGT}}) - (L_{\text{base}} - L_{\text{mHC}}) -
    (L_{\text{base}} - L_{\text{DDL}})$$

    Pick a claim to see it worked through.
    """)
    return


@app.cell
def _(mo, results):
    claim = mo.ui.dropdown(
        options={f"{n}: {h['id']}": (n, h) for n, r in results.items() for h in r["hypotheses"]},
        value=next(f"{n}: {h['id']}" for n, r in results.items() for h in r["hypotheses"]),
        label="claim",
    )
    mo.hstack([claim], justify="start")
    return (claim,)


@app.cell
def _(claim, mo, report):
    mo.md(report.walkthrough_markdown(*claim.value))
    return


@app.cell
def _(mo, report, results, results_dir, term):
    mo.vstack(
        [
            mo.md("## Counts"),
            mo.md(report.counts_markdown(results)),
            mo.accordion(
                {
                    "what would decide each undecided claim, and what it costs": mo.vstack(
                        [
                            # the verdicts' words, each defined on hover (geolab.terms)
                            mo.md(
                                f"A claim is judged only on runs that {term('learned')} (a"
                                f" run's {term('ratio to the best trivial baseline')} at or"
                                f" below the learned line) and {term('converged')}."
                            ),
                            mo.md(report.undecided_markdown(results, results_dir)),
                        ]
                    )
                }
            ),
        ]
    )
    return


@app.cell
def _(explore):
    get_transfer, set_transfer = explore.answer_state()
    return get_transfer, set_transfer


@app.cell
def _(explore, get_transfer, set_transfer):
    transfer, transfer_again = explore.transfer_question(
        "07_reproduce", get_transfer(), set_transfer
    )
    explore.asked(transfer, transfer_again, get_transfer())
    return transfer, transfer_again


@app.cell
def _(explore, get_transfer):
    explore.transfer_shown("07_reproduce", get_transfer())
    return


@app.cell(hide_code=True)
def _(explore, mo):
    mo.md(explore.next_markdown("07_reproduce", "file" in mo.query_params()))
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The ledger

    Every claim, table and figure behind the verdicts, each behind its own accordion; the
    rerun button at the very end reruns a protocol at tiny scale.
    """)
    return


@app.cell
def _(mo, report, results):
    mo.accordion(
        {
            "the full verdict table": mo.md(report.verdict_markdown(results)),
            "under which rules each result was judged": mo.md(report.judging_markdown(results)),
        }
    )
    return


@app.cell
def _(decide, mo, report, results):
    mo.stop("edelta_benchmarks" not in results)
    matched = report.matched_of(results, "edelta_benchmarks")
    if matched is None:  # how to produce it, and its cost, from the CPU plan
        todo = decide.matched_plan(results)
        matched_view = mo.md(
            f"*No matched-size result (`edelta_benchmarks-small-matched.json`) yet: "
            f"`{todo['command']}` trains it (≈ {todo['cpu_hours']:.2g} one-thread CPU-hours).*"
        )
    else:
        matched_view = mo.vstack(
            [
                mo.md(report.edelta_markdown(matched)),
                mo.md("Parameters (MLP hidden width) per model, and their spread:"),
                mo.md(report.matched_sizes_markdown(matched)),
            ]
        )
    published_view = mo.vstack(
        [
            mo.md("### Published settings"),
            mo.md(report.edelta_markdown(results["edelta_benchmarks"])),
        ]
    )
    matched_title = mo.md("### Matched sizes: every geolab model at GPT's parameter count")
    # the other variants: some of the table's tasks at a longer budget (`--tasks … --steps …`)
    longer = [
        mo.vstack(
            [
                mo.md(f"### {report.variant_label(r)} (`{decide.variant_flags(r)}`)"),
                mo.md(report.edelta_markdown(r)),
            ]
        )
        for r in report.variants_of(results, "edelta_benchmarks")
        if not report.is_matched(r)
    ]
    mo.accordion(
        {
            "the E∆ table: validation MSE, geolab (small scale) vs the paper": mo.vstack(
                [
                    mo.hstack(
                        [published_view, mo.vstack([matched_title, matched_view])],
                        widths="equal",
                        wrap=True,
                        align="start",
                    ),
                    *longer,
                ]
            )
        }
    )
    return


@app.cell
def _(mo, report):
    mo.accordion(
        {
            "two flavors of the E∆ table's models": mo.vstack(
                [
                    mo.md(
                        "The published table was measured on models built differently from"
                        ' geolab\'s. `flavor="reference"` rebuilds them as the public E∆ code'
                        " does (same parameter counts, same outputs for the same weights);"
                        ' `flavor="geolab"` is geolab\'s own, causal. Verdicts on the published'
                        " claims use the reference flavor; the column GPT / E∆ in each flavor"
                        " shows how much of E∆'s edge survives causal operators. **The reference"
                        " DDL and E∆ are not causal.** docs/design.md §12 says why each"
                        " difference matters."
                    ),
                    mo.md(report.flavors_markdown()),
                ]
            )
        }
    )
    return


@app.cell
def _(mo, report, results):
    mo.accordion(
        {
            'how small is "small"? the committed runs\' wall times (one CPU thread each)': mo.md(
                report.wall_times_markdown(results)
            ),
            "reductions per protocol: every departure from the papers' sizes": mo.md(
                report.reductions_markdown(results)
            ),
            "results trained before the fused rule maths": mo.md(
                report.before_fused_markdown(results)
            ),
        }
    )
    return


@app.cell
def _(mo, report, results):
    # each result by its label; a matched-size variant is one of its own
    protocol = mo.ui.dropdown(
        options={report.label(r): key for key, r in results.items()},
        value=report.label(next(iter(results.values()))),
        label="protocol",
    )
    mo.hstack([protocol], justify="start")
    return (protocol,)


@app.cell
def _(mo, protocol, report, results):
    chosen = results[protocol.value]
    prov = chosen["provenance"]
    stamp = (
        f"git {prov['git']['commit']} (dirty: {prov['git']['dirty']}), torch "
        f"{prov['versions']['torch']}, {prov['device']}, {prov['torch_threads']} thread(s), "
        f"{prov['wall_time_s'] / 60:.1f} min, finished {prov['finished_utc']}"
    )
    mo.accordion(
        {
            "the chosen protocol's figures": mo.vstack(
                [mo.md(f"**{chosen['title']}** — {stamp}")]
                + list(report.result_figures(chosen).values())
            )
        }
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Rerun it yourself

    The button reruns the chosen protocol at *tiny* scale (seconds; a smoke test of the same
    code, not a measurement: its verdicts are printed as "not comparable" beside the committed
    ones). It needs no network: the protocols that train on text read the
    copy of tiny-shakespeare shipped in the repository's `data/` unless `$GEOLAB_DATA` points
    elsewhere. If a run fails, the error is shown here. From a terminal,
    `geolab reproduce NAME --scale small` regenerates the committed numbers; with the same seed
    on a CPU they come out identical.
    """)
    return


@app.cell
def _(mo):
    rerun = mo.ui.run_button(label="rerun at tiny scale")
    mo.center(rerun)
    return (rerun,)


@app.cell
def _(decide, get_protocol, mo, protocol, report, rerun, results, run_protocol):
    mo.stop(not rerun.value, mo.md("*Press the button to rerun the chosen protocol.*"))
    messages = []
    picked = results[protocol.value]
    try:
        with mo.status.spinner(title=f"running {protocol.value} at tiny scale"):
            fresh, fresh_figs = run_protocol(
                get_protocol(picked["protocol"]),
                "tiny",
                out=None,
                log=messages.append,
                options=decide.variant_options(picked) or None,
            )
    except Exception as err:  # noqa: BLE001 (any failure is shown on the page, not only logged)
        last = f"\n\nLast log line: `{messages[-1]}`" if messages else ""
        rerun_output = mo.callout(
            mo.md(
                f"**The tiny rerun of `{protocol.value}` failed.** "
                f"`{type(err).__name__}`: {err}{last}"
            ),
            kind="danger",
        )
    else:
        rerun_output = mo.vstack(
            [
                mo.md(
                    f"Tiny run finished in {fresh['provenance']['wall_time_s']:.1f} s.\n\n"
                    + report.smoke_markdown(fresh, results.get(protocol.value))
                ),
                *fresh_figs.values(),
                mo.accordion(
                    {
                        "reductions of this tiny run": mo.md(
                            "\n".join(f"- {k}: {v}" for k, v in fresh["reductions"].items())
                        ),
                        "log": mo.plain_text("\n".join(messages)),
                    }
                ),
            ]
        )
    rerun_output  # noqa: B018 (the cell's output)
    return


if __name__ == "__main__":
    app.run()
