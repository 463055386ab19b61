"""Real browser: ``marimo run`` serves every notebook 00–07 and assignment A1, chromium loads
each with no error output and no request leaving 127.0.0.1, moves every slider once with the
keyboard and sees the shown numbers change; 01 and 04 are checked against the values
geolab.explore computes, each predict-first question hides its answering plot until answered and
then reveals it (02's reveal survives a slider out of range), 05b's Play button animates the
Sinkhorn rounds in the page, 06 keeps finished runs side by side with no heading in its β
lines, and 07 reruns a protocol with no network.

One marimo server per notebook, one browser for the module. Needs Debian's chromium (.ci/run
installs it); skips with instructions where it is missing.
"""

import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from geolab import explore

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import marimo_browser as mb  # noqa: E402

pytestmark = pytest.mark.browser
if not mb.CHROMIUM.exists():
    pytest.skip(f"no chromium at {mb.CHROMIUM}. {mb.ENABLE_HINT}", allow_module_level=True)
sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright

LOAD_S = 90  # first render over the websocket, on a slow shared CPU
MOVE_S = 45  # one slider move: rebuilds at most a few models
NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


# The text drawn beside plotted points (plotly's .textpoint labels) in every figure on the page.
POINT_LABELS_JS = """() => Array.from(document.querySelectorAll('marimo-plotly')).flatMap(el =>
  Array.from(el.shadowRoot.querySelectorAll('.textpoint text')).map(t => t.textContent))"""


def wait_until(check, timeout_s: float, what: str):
    """Poll ``check()`` until it returns a truthy value (returned) or time runs out."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except AssertionError as err:
            last = err
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r:.800}")


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = mb.launch(p)
        yield b
        b.close()


class Notebook:
    """One ``marimo run`` server and one page on it (a context manager)."""

    def __init__(self, browser, path: Path, tmp_path, env=None):
        self.server = mb.serve(path, tmp_path / f"{path.stem}.log", env=env)
        self.browser = browser
        self.external = []  # requests that left the machine (MathJax from a CDN, once)

    def __enter__(self):
        url = self.server.__enter__()
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("request", self._note_request)
        self.page.goto(url, wait_until="domcontentloaded", timeout=LOAD_S * 1000)
        return self

    def _note_request(self, request) -> None:
        if not request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            self.external.append(request.url)

    def __exit__(self, *exc):
        self.page.close()
        self.server.__exit__(None, None, None)
        if exc[0] is None:
            assert not self.external, self.external

    def settled(self, timeout_s: float = LOAD_S) -> None:
        """The page has stopped changing (the same numbers and plots for a second, no cell
        running) and no cell shows an error."""
        last = [None]

        def still():
            running = self.page.locator("[data-status='running'], [data-status='queued']")
            now = self.shown() if self.page.locator("h1").count() else None
            same = now is not None and now == last[0] and running.count() == 0
            last[0] = now
            return same

        wait_until(lambda: time.sleep(1) or still(), timeout_s, "the page to settle")
        self.assert_no_error()

    def assert_no_error(self) -> None:
        errors = self.page.locator(".marimo-error")
        texts = [errors.nth(i).inner_text()[:300] for i in range(errors.count())]
        assert not texts, texts
        body = self.page.inner_text("body")
        assert "Traceback" not in body and "An internal error" not in body

    def shown(self, results_only: bool = False) -> str:
        """What the learner reads and sees: every number on the page (only those in tables with
        ``results_only``, leaving out the sliders' own values) and a digest of every plot."""
        tables = self.page.locator("table")
        text = (
            " ".join(tables.nth(i).inner_text() for i in range(tables.count()))
            if results_only
            else self.page.inner_text("body")
        )
        plotted = json.dumps([p["traces"] for p in mb.plots(self.page)], sort_keys=True)
        return " ".join(NUMBER.findall(text)) + hashlib.sha1(plotted.encode()).hexdigest()

    def sliders(self):
        return self.page.locator("[role=slider]")

    def nudge(self, i: int) -> None:
        """Move slider ``i`` one step (right, or left when it is at its maximum)."""
        slider = self.sliders().nth(i)
        at_max = slider.get_attribute("aria-valuenow") == slider.get_attribute("aria-valuemax")
        slider.focus()
        self.page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")

    def each_slider_changes_the_numbers(self, unchanged=()) -> int:
        """Nudge every slider once; the shown numbers must change (for sliders in ``unchanged``
        they must not: e.g. 04's γ₀ while no rule reads it). Returns the number of sliders."""
        count = self.sliders().count()
        assert count > 0
        for i in range(count):
            before, results = self.shown(), self.shown(results_only=True)
            self.nudge(i)
            if i in unchanged:
                wait_until(lambda before=before: self.shown() != before, MOVE_S, "its value")
                self.settled(MOVE_S)
                assert self.shown(results_only=True) == results, f"slider {i} changed results"
                continue
            wait_until(lambda before=before: self.shown() != before, MOVE_S, f"slider {i}")
            self.settled(MOVE_S)
        return count

    def titles(self) -> list[str]:
        return [p["title"] for p in mb.plots(self.page)]

    def predict(self, name: str) -> None:
        """Answer ``name``'s predict-first question (``PREDICTIONS``): before the answer no plot
        that answers it is on the page, nor (``GIVEAWAYS``) any text, table or plot that gives
        the answer away; after it, the reveal says its verdict and a "Why?" line, all of them
        are there, and the answer is locked (every option disabled, "try again" offered)."""
        answer, verdict, answer_plot = PREDICTIONS[name]
        texts, plots = GIVEAWAYS.get(name, ((), ()))
        assert self.page.get_by_text("Pick an answer").count() == 1
        # get_by_text, not inner_text: it also reads the shadow DOM (callouts, radios)
        assert [t for t in texts if self.page.get_by_text(t).count()] == []
        titles = self.titles()
        assert [p for p in (answer_plot, *plots) if any(t.startswith(p) for t in titles)] == []
        self.page.get_by_text(answer, exact=False).first.click()
        self.page.wait_for_selector(f"text={verdict}", timeout=MOVE_S * 1000)
        self.settled(MOVE_S)
        titles = self.titles()
        assert [t for t in texts if not self.page.get_by_text(t).count()] == []
        assert [p for p in (answer_plot, *plots) if not any(t.startswith(p) for t in titles)] == []
        assert self.page.get_by_text("Why?").count() >= 1
        if name in GIVEAWAYS:  # the notebooks on geolab.explore.question
            # the question's options locked (the transfer question's, asked next, are not)
            options = self.page.locator("[role=radio], input[type=radio]")
            locked = [i for i in range(options.count()) if options.nth(i).is_disabled()]
            assert len(locked) >= 2 and locked == list(range(len(locked)))
            assert self.page.get_by_role("button", name="try again").count() == 1


def notebook(name: str) -> Path:
    return REPO / "notebooks" / f"{name}.py"


# What gives each question's answer away before it is picked: texts (a live table's row, a
# paragraph) and plot titles, none on the page before the answer and every one after it.
GIVEAWAYS = {
    "01_delta_operator": (
        ["partial erasure", "Householder"],
        ["Eigenvalues of A", "Image of the unit circle"],
    ),
    "02_mgt_block": (["of 16 eigenvalues"], []),
    "02b_mgt_gates": (["retention"], ["One token: the write"]),
    "03b_hybrid": (["erases a whole direction"], ["The hybrid path"]),
    "03_cayley_householder": (["closed form vs dense solve"], ["Eigenvalues on the unit circle"]),
    "05_streams": (["stream collapse", "All four families"], []),
    "05b_sinkhorn": (["Try other matrices", "Without rounds"], []),
    "04_rank_collapse": (["rank / residual at layer"], ["The 32 tokens"]),
    "09_trained_rank": (["init → trained"], []),
    "08_gradients": (
        ["Reading the gradient norms", "per layer on average"],
        ["Singular values", "Gradient norm"],
    ),
}

# answer to pick, what the reveal then says, and the title of the plot that answers
PREDICTIONS = {
    "01_delta_operator": ("−1", "Right.", "Determinant along"),
    "02_mgt_block": ("15 of 16", "No.", "How far each eigenvalue sits from 1"),
    "02b_mgt_gates": ("keeps 105 %", "Right.", "β over tokens and channels"),
    "03b_hybrid": ("0.5", "No.", "The hybrid path"),
    "03_cayley_householder": ("no: θ gets ever closer", "Right.", "How far θ stays from π"),
    "04_rank_collapse": ("exactly 0", "No.", "Effective rank per layer at init"),
    "09_trained_rank": ("lower than at init", "Right.", "Rank per layer, dotted"),
    "05_streams": ("below 10⁻¹⁰", "Right.", "|λ₂| of the product of L mHC mixers"),
    "05b_sinkhorn": ("about 10⁻⁴", "Right.", "Sinkhorn–Knopp on the random preset"),
    "08_gradients": ("far below 1", "Right.", "Singular values"),
}


# Every formula each reveal states (its TeX, spaces aside): none is on the page before the
# answer, every one after it, so the check can see them.
REVEAL_FORMULAS = {
    "01_delta_operator": [r"\det A = 1-\beta", r"(1-\beta)\,k^\top x + \beta v"],
    "02_mgt_block": [r"1 - \alpha\beta_i"],
    "02b_mgt_gates": [r"(1 - \alpha\beta)\,x"],
    "03_cayley_householder": [r"\theta = 2\arctan(\beta\omega/2)"],
    "03b_hybrid": [r"G_{1/2} = \tfrac12 H_2(k)\,(H_2(k)\,Q + I)"],
    "04_rank_collapse": [r"\exp(H)/\min(S, D) = 1/32"],
    "08_gradients": [r"\sigma_{max}(J_0) ="],
}
# the TeX of every formula on the page, shadow roots included (marimo-tex keeps its source)
TEX_JS = """() => { const out = [];
  const walk = root => {
    root.querySelectorAll('marimo-tex, annotation').forEach(a => out.push(a.textContent));
    root.querySelectorAll('*').forEach(el => { if (el.shadowRoot) walk(el.shadowRoot); }); };
  walk(document); return out; }"""


def formulas_shown(page, name: str) -> list[str]:
    tex = "".join(page.evaluate(TEX_JS)).replace(" ", "")
    return [f for f in REVEAL_FORMULAS[name] if f.replace(" ", "") in tex]


@pytest.mark.parametrize("name", list(REVEAL_FORMULAS))
def test_predict_first_page_has_no_plot_nor_formula_of_the_reveal_before_the_answer(
    browser, tmp_path, name
):
    with Notebook(browser, notebook(name), tmp_path) as nb:
        nb.page.wait_for_selector("text=Pick an answer", timeout=LOAD_S * 1000)
        nb.settled()
        assert mb.plots(nb.page) == [] and nb.sliders().count() == 0
        assert formulas_shown(nb.page, name) == []
        assert nb.page.get_by_text("You will be able to explain").count() == 1
        nb.predict(name)
        assert formulas_shown(nb.page, name) == REVEAL_FORMULAS[name]


@pytest.mark.parametrize("name", ["00_tour", "02_mgt_block", "03_cayley_householder"])
def test_notebook_loads_clean_and_every_slider_moves_the_numbers(browser, tmp_path, name):
    with Notebook(browser, notebook(name), tmp_path) as nb:
        # the static prose renders first: wait for the first live output (a predict-first
        # page's question, else the tour's slider), which a loaded machine shows seconds later
        if name in PREDICTIONS:
            wait_until(lambda: nb.page.get_by_text("Pick an answer").count(), LOAD_S, "question")
        else:
            wait_until(lambda: nb.sliders().count(), LOAD_S, "a slider")
        nb.settled()
        if name in PREDICTIONS:
            nb.predict(name)
        nb.each_slider_changes_the_numbers()
        if name == "00_tour":
            # the circle only: no spectrum whose moving eigenvalue would answer 01
            assert nb.titles() == ["Image of the unit circle"]
            # served alone (marimo run FILE): no link that would answer "File … not found"
            assert nb.page.locator("a[href*='?file=']").count() == 0
            assert nb.page.get_by_text("This page is served alone").count() == 1


def test_08_no_plot_before_the_answer_then_every_slider(browser, tmp_path):
    with Notebook(browser, notebook("08_gradients"), tmp_path) as nb:
        wait_until(lambda: nb.page.get_by_text("Pick an answer").count(), LOAD_S, "the question")
        nb.settled()
        assert mb.plots(nb.page) == []  # nothing that answers it is drawn yet
        nb.predict("08_gradients")
        wait_until(lambda: len(mb.plots(nb.page)) >= 3, LOAD_S, "the reveal and the curves")
        nb.each_slider_changes_the_numbers()


def test_02_narrow_lambda_holds_beta0_inside_the_range_and_keeps_every_plot(browser, tmp_path):
    with Notebook(browser, notebook("02_mgt_block"), tmp_path) as nb:
        page = nb.page
        page.wait_for_selector("text=Pick an answer", timeout=LOAD_S * 1000)
        nb.settled()
        nb.predict("02_mgt_block")
        lam = nb.sliders().first  # λ = 0.1: β₀ = 0.5 leaves (−λ, λ), its slider holds 0.05
        lam.focus()
        page.keyboard.press("Home")
        page.wait_for_selector("text=lies outside", timeout=MOVE_S * 1000)
        nb.settled(MOVE_S)
        beta0 = page.locator("[role=slider]").nth(4)  # λ, ε, α, W_β scale, then β₀
        assert float(beta0.get_attribute("aria-valuenow")) == pytest.approx(0.05)
        assert page.get_by_text("the Delta operator: 15 of 16").count() == 1  # the reveal
        titles = nb.titles()  # the gates' plots are 02b's
        assert len([t for t in titles if t.startswith("How far each eigenvalue")]) == 2


def test_05_no_plot_before_the_answer_then_the_depth_slider(browser, tmp_path):
    with Notebook(browser, notebook("05_streams"), tmp_path) as nb:
        wait_until(lambda: nb.page.get_by_text("Pick an answer").count(), LOAD_S, "the question")
        nb.settled()
        assert mb.plots(nb.page) == []  # nothing that answers it is drawn yet
        nb.predict("05_streams")
        wait_until(lambda: len(mb.plots(nb.page)) >= 2, LOAD_S, "the reveal and the panels")
        assert len(mb.plot(nb.page, "|λ₂| of the product of L mixers")["traces"]) == 10
        nb.each_slider_changes_the_numbers()


# The round the animation's own slider stands on, and the heatmap's entries, per figure
# with a slider: plotly moves both as its frames play.
CURRENT_ROUND_JS = """() => Array.from(document.querySelectorAll('marimo-plotly')).map(el => {
  const g = el.shadowRoot && el.shadowRoot.querySelector('.js-plotly-plot');
  if (!g || !g.layout || !g.layout.sliders) return null;
  return [g.layout.sliders[0].active || 0, JSON.stringify(g.data[0].z)];
}).filter(r => r !== null)"""


def test_05b_play_animates_the_sinkhorn_rounds_in_the_page(browser, tmp_path):
    with Notebook(browser, notebook("05b_sinkhorn"), tmp_path) as nb:
        page = nb.page
        wait_until(lambda: page.get_by_text("Pick an answer").count(), LOAD_S, "the question")
        nb.settled()
        assert mb.plots(page) == []
        nb.predict("05b_sinkhorn")
        start = page.evaluate(CURRENT_ROUND_JS)[0]  # the reveal's animation (the explorer's below)
        assert start[0] == 0
        # plotly's own Play button (an SVG group in the figure): no request, no cell runs
        page.locator("marimo-plotly").first.locator(".updatemenu-button").first.click()
        wait_until(
            lambda: page.evaluate(CURRENT_ROUND_JS)[0][1] != start[1],
            MOVE_S,
            "the heatmap to show a later round",
        )
        time.sleep(3)  # 400 ms a frame: several rounds later
        assert page.evaluate(CURRENT_ROUND_JS)[0][0] >= 3  # the round slider follows the frames
        nb.assert_no_error()


def test_01_beta_slider_by_keyboard_and_every_slider(browser, tmp_path):
    with Notebook(browser, notebook("01_delta_operator"), tmp_path) as nb:
        page = nb.page
        page.wait_for_selector("text=Pick an answer", timeout=LOAD_S * 1000)
        nb.settled()
        # unanswered: the title, the setting and the question only, no control to try β = 2
        assert mb.plots(page) == [] and nb.sliders().count() == 0
        nb.predict("01_delta_operator")
        # the reveal's det and mirror, then the live spectrum and det, circle and update
        assert len(mb.plots(page)) == 6
        # "try again" unlocks the answer and hides again everything that answers it
        page.get_by_role("button", name="try again").click()
        page.wait_for_selector("text=Pick an answer", timeout=MOVE_S * 1000)
        nb.settled(MOVE_S)
        assert mb.plots(page) == [] and page.get_by_text("partial erasure").count() == 0
        nb.predict("01_delta_operator")
        beta = nb.sliders().first
        assert float(beta.get_attribute("aria-valuenow")) == pytest.approx(0.5)
        dets = [p for p in mb.plots(page) if p["title"].startswith("Determinant")]
        assert [d["traces"][1]["y"][0] for d in dets] == pytest.approx([-1.0, 0.5])

        beta.focus()
        for _ in range(10):  # step 0.05: β 0.5 → 1.0
            page.keyboard.press("ArrowRight")

        expected = explore.delta_view(1.0, 0.5, 1.0)
        page.wait_for_selector("text=projection onto k⊥ (erasure)", timeout=LOAD_S * 1000)
        assert float(beta.get_attribute("aria-valuenow")) == pytest.approx(1.0)

        def updated():
            det = [p for p in mb.plots(page) if p["title"].startswith("Determinant")][1]
            return (
                abs(det["traces"][1]["x"][0] - 1.0) < 1e-9 and abs(det["traces"][1]["y"][0]) < 1e-9
            )

        wait_until(updated, 30, "the determinant marker at β = 1, det = 0")

        def spectrum_updated():  # each plot redraws on its own: the spectrum may come later
            xs = sorted(mb.plot(page, "Eigenvalues")["traces"][1]["x"])
            want = sorted(expected.numbers["eigenvalues"])
            return len(xs) == len(want) and all(
                abs(a - b) < 1e-9 for a, b in zip(xs, want, strict=False)
            )

        wait_until(spectrum_updated, 30, "the eigenvalues at β = 1")
        table = page.locator("table", has_text="quantity").first.inner_text()
        assert "0.0000" in table and "3 of 4" in table

        # drag k itself: a click straight above the dial's centre turns k to φ = π/2 (1.58 on
        # its 0.02 grid), and the table follows (kᵀx for the new k)
        dial = page.locator("svg[role=slider]")
        box = dial.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2 - 80)
        wait_until(lambda: dial.get_attribute("aria-valuenow") == "1.58", MOVE_S, "φ = 1.58")
        kx = explore.view.num(explore.delta_view(1.0, 1.58, 1.0).numbers["kx"])
        wait_until(
            lambda: kx in page.locator("table", has_text="quantity").first.inner_text(),
            MOVE_S,
            f"kᵀx = {kx} in the table",
        )
        nb.settled(MOVE_S)
        nb.each_slider_changes_the_numbers()


def test_09_trained_curves_wait_for_the_answer_then_every_depth(browser, tmp_path):
    with Notebook(browser, notebook("09_trained_rank"), tmp_path) as nb:
        nb.page.wait_for_selector("text=Pick an answer", timeout=LOAD_S * 1000)
        nb.settled()
        assert mb.plots(nb.page) == []  # nothing drawn before the answer
        nb.predict("09_trained_rank")
        wait_until(lambda: len(mb.plots(nb.page)) == 2, LOAD_S, "the reveal and the depth plot")
        # try again: everything hides, a fresh question
        nb.page.get_by_role("button", name="try again").click()
        wait_until(lambda: mb.plots(nb.page) == [], MOVE_S, "the plots to hide")
        assert nb.page.get_by_text("Pick an answer").count() == 1


def test_04_depth_beta0_and_every_slider(browser, tmp_path):
    with Notebook(browser, notebook("04_rank_collapse"), tmp_path) as nb:
        page = nb.page
        page.wait_for_selector("text=Pick an answer", timeout=LOAD_S * 1000)
        nb.settled()
        assert page.get_by_text("rank / residual at layer 24").count() == 0
        # nothing that answers the question is drawn: no rank plot, no floor line, no cloud
        assert not [t for t in nb.titles() if "ank per layer" in t], nb.titles()
        assert "floor 1/S" not in page.inner_text("body")
        nb.predict("04_rank_collapse")  # and the answer is locked, "try again" offered
        page.wait_for_selector("text=rank / residual at layer 24", timeout=LOAD_S * 1000)
        nb.sliders().first.focus()
        page.keyboard.press("ArrowLeft")  # any depth 12–200: 24 → 23
        page.wait_for_selector("text=rank / residual at layer 23", timeout=LOAD_S * 1000)

        rules = ["postln", "preln", "mgt"]
        expected = explore.rank_view(rules, 23)

        def curves_match(view):
            traces = mb.plot(page, "Effective rank per layer at init (L = 23")["traces"]
            names = [t["name"] for t in traces[:4]]
            assert names == [*rules, explore.REFERENCE], names
            for t in traces[:4]:
                np.testing.assert_allclose(t["y"], view.numbers["ranks"][t["name"]], rtol=1e-4)
            return True

        wait_until(lambda: curves_match(expected), 30, "23-layer rank curves")
        nb.settled()
        # sliders: depth, β₀, λ, α₀, γ₀, layer; γ₀ moves nothing while edelta is not chosen
        # (λ moves the curves by float32 rounding only: tests/test_explore_notebooks.py)
        assert page.get_by_text("moves nothing now").count() == 1
        assert nb.each_slider_changes_the_numbers(unchanged={4}) == 6

        # β₀ out of (−λ, λ): the MGT curves go, with a note; every other curve stays
        lam = nb.sliders().nth(2)
        lam.focus()
        page.keyboard.press("Home")  # λ = 0.1 < β₀
        page.wait_for_selector("text=is not drawn", timeout=MOVE_S * 1000)
        nb.settled(MOVE_S)
        main = [p for p in mb.plots(page) if p["title"].startswith("Effective rank")][-1]
        names = [t["name"] for t in main["traces"][:3]]
        assert names == ["postln", "preln", explore.REFERENCE]


def test_06_runs_stay_side_by_side_until_cleared(browser, tmp_path):
    with Notebook(browser, notebook("06_training_lab"), tmp_path) as nb:
        page = nb.page
        page.wait_for_selector("text=press Train", timeout=LOAD_S * 1000)
        nb.settled()
        layers, steps = nb.sliders().nth(0), nb.sliders().nth(1)
        for slider in (layers, steps):
            slider.focus()
            page.keyboard.press("Home")  # 1 layer, 4 steps: seconds on a CPU
        wait_until(lambda: steps.get_attribute("aria-valuenow") == "4", 10, "4 steps")
        for run in (1, 2):
            page.get_by_role("button", name="Train").click()
            page.wait_for_selector(f"text={run} finished run(s)", timeout=LOAD_S * 1000)
            nb.settled()
        table = page.locator("table").last.inner_text()
        assert "#1 copy L=1" in table and "#2 copy L=1" in table
        # the β check lines ("run 1 `mgt`: …") are list items, not "#1 …" read as headings
        assert page.get_by_text("run 1 mgt").count() + page.get_by_text("run 2 ddl").count() >= 1
        assert page.locator("h1").count() == 1  # the notebook's title only
        assert mb.plot(page, "Training loss per step, every run")["traces"]
        # a control moved after training keeps the runs (they used to vanish)
        before = nb.shown()
        layers.focus()
        page.keyboard.press("ArrowRight")
        time.sleep(2)
        nb.settled()
        assert page.get_by_text("2 finished run(s)").count() == 1
        assert nb.shown() != before  # the layers slider shows its new value
        page.get_by_role("button", name="clear all runs").click()
        page.wait_for_selector("text=No finished runs yet", timeout=MOVE_S * 1000)


def test_07_rerun_offline_shows_a_result_or_a_readable_error(browser, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GEOLAB_DATA"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", GEOLAB_CACHE=str(tmp_path / "c"))
    with Notebook(browser, notebook("07_reproduce"), tmp_path, env=env) as nb:
        page = nb.page
        page.wait_for_selector("text=Press the button to rerun", timeout=LOAD_S * 1000)
        nb.settled()
        assert "reproduced" in page.inner_text("body")
        assert page.get_by_text("$$").count() == 0  # display maths rendered, not raw
        page.get_by_role("button", name="rerun at tiny scale").click()
        page.wait_for_selector("text=/Tiny run finished|failed/", timeout=LOAD_S * 1000)
        nb.settled()
        assert "Tiny run finished" in page.inner_text("body")  # offline: data/ has the text


def test_assignment_a1_instructor_slider(browser, tmp_path):
    with Notebook(browser, REPO / "assignments" / "instructor" / "A1_delta.py", tmp_path) as nb:
        nb.page.wait_for_selector("text=k = (1, 2, 2)", timeout=LOAD_S * 1000)
        nb.settled()
        # marimo run serves it read-only: the page says to open it with marimo edit
        assert nb.page.get_by_text("This page is read-only").count() == 1
        assert nb.each_slider_changes_the_numbers() == 1


def test_make_tour_opens_the_tour_already_run(browser, tmp_path):
    """The README's first command, ``make tour``, as printed (on a free PORT): the page shows
    the tour's slider and plots on its first render, with no click, and the slider moves a
    plot. marimo edit runs the notebook on open because pyproject.toml's [tool.marimo.runtime]
    says auto_instantiate."""
    if shutil.which("make") is None:
        pytest.skip("no make on PATH (the README's `make tour` needs it)")
    stamp = REPO / ".venv" / ".geolab-installed"  # the Makefile's: geolab[dev] installed
    if not stamp.exists() or stamp.stat().st_mtime < (REPO / "pyproject.toml").stat().st_mtime:
        pytest.skip("no venv made by make, or older than pyproject.toml (make tour would install)")
    with mb.make_tour(tmp_path / "make-tour.log") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, wait_until="domcontentloaded", timeout=LOAD_S * 1000)
        wait_until(lambda: mb.plots(page), LOAD_S, "a plot, with no click")
        slider = page.locator("[role=slider]").first
        slider.wait_for(timeout=LOAD_S * 1000)
        assert page.locator(".marimo-error").count() == 0
        # the first screen (1000 px) holds the slider and the top half of the plot, not code
        time.sleep(2)  # the layout settles once the plot has drawn
        plot_box = page.locator("marimo-plotly").first.bounding_box()
        assert slider.bounding_box()["y"] < 1000, slider.bounding_box()
        assert plot_box["y"] + plot_box["height"] / 2 < 1000, plot_box
        before = json.dumps(mb.plots(page), sort_keys=True)
        at_max = slider.get_attribute("aria-valuenow") == slider.get_attribute("aria-valuemax")
        slider.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        wait_until(lambda: json.dumps(mb.plots(page), sort_keys=True) != before, MOVE_S, "the plot")
        page.close()


CORRECT_DELTA_OPERATOR = '''def delta_operator(k, beta):
    """A(k, beta) = I - beta k k^T / |k|^2."""
    beta = torch.as_tensor(beta, dtype=k.dtype)
    outer = k.unsqueeze(-1) * k.unsqueeze(-2) / (k * k).sum(-1)[..., None, None]
    eye = torch.eye(k.shape[-1], dtype=k.dtype).expand(outer.shape)
    return eye - beta[..., None, None] * outer'''


def test_assignment_under_marimo_edit_opens_run_and_ctrl_enter_reruns_its_check(browser, tmp_path):
    """A student's path (docs/teaching.md, "The four assignments"): ``marimo edit`` of A1 shows the
    checks already run (amber: waiting for your code); after the stub is filled in and
    Ctrl+Enter pressed in it, as the notebook says, its check turns green. A copy is edited
    (marimo saves edits), beside a copy of pyproject.toml (which makes marimo edit run on
    open)."""
    (tmp_path / "notebooks" / "assignments").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    shutil.copy(REPO / "notebooks" / "offline_head.html", tmp_path / "notebooks")
    copy = tmp_path / "notebooks" / "assignments" / "A1_delta.py"
    shutil.copy(REPO / "notebooks" / "assignments" / "A1_delta.py", copy)
    assert "Ctrl+Enter" in copy.read_text()  # the notebook says what to press
    with mb.serve(copy, tmp_path / "edit.log", mode="edit") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, wait_until="domcontentloaded", timeout=LOAD_S * 1000)
        page.wait_for_selector(
            "text=A1 · delta_operator — waiting for your code", timeout=LOAD_S * 1000
        )
        editor = page.locator(".cm-content", has_text="def delta_operator").first
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(CORRECT_DELTA_OPERATOR)
        page.keyboard.press("Control+Enter")
        page.wait_for_selector(
            "text=/A1 · delta_operator — all \\d+ checks pass/", timeout=LOAD_S * 1000
        )
        assert page.get_by_text("A1 · spectrum_and_det — waiting for your code").count() == 1
        page.close()


THREAD_PROBE = """import marimo

app = marimo.App()


@app.cell
def _():
    import os

    import marimo as mo
    import torch

    from geolab.threads import use_threads

    use_threads()
    # threads of this process that did work while torch multiplied matrices
    def ticks():
        out = {}
        for task in os.listdir("/proc/self/task"):
            try:
                stat = open(f"/proc/self/task/{task}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[task] = int(stat[11]) + int(stat[12])
        return out

    a = torch.randn(800, 800)
    before = ticks()
    for _ in range(30):
        a @ a
    busy = sum(v - before.get(t, 0) >= 3 for t, v in ticks().items())
    mo.md(f"torch threads {torch.get_num_threads()}, busy threads {busy}")
    return


if __name__ == "__main__":
    app.run()
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_geolab_threads_holds_for_every_page_load_of_a_server(browser, tmp_path):
    """GEOLAB_THREADS=2 on a ``marimo run`` server started with OMP_NUM_THREADS=1: two page
    loads in a row (each a kernel of its own) both run torch on 2 threads, as geolab.threads
    sets them, and both threads do work."""
    probe = tmp_path / "probe.py"
    probe.write_text(THREAD_PROBE)
    env = {**os.environ, "GEOLAB_THREADS": "2"}
    with mb.serve(probe, tmp_path / "probe.log", env=env) as url:
        for _ in range(2):
            page = browser.new_page()
            page.goto(url, wait_until="domcontentloaded", timeout=LOAD_S * 1000)
            shown = page.wait_for_selector("text=/torch threads \\d/", timeout=LOAD_S * 1000)
            assert shown.inner_text() == "torch threads 2, busy threads 2"
            page.close()
