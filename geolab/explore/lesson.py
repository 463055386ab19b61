"""The guided path through the notebooks: the lessons' order, what each one teaches, and the
transfer question each ends with.

``LESSONS`` holds one ``Lesson`` per notebook, in the order a learner takes them: its file stem,
its title, its one line on 00's map, the two or three things the learner will be able to
explain afterwards, and its transfer question: a new case of the same idea, asked after the
lesson's own question is answered, committed and revealed the same way
(``geolab.explore.predict``). Notebooks only wire it::

    explore.opening(NAME)                              # under the title
    guess2, again2 = explore.transfer_question(NAME, get_transfer(), set_transfer)
    explore.transfer_shown(NAME, get_transfer())       # waiting, or the verdict and why
    mo.md(explore.next_markdown(NAME, linked))         # the last cell

A transfer's answer is derived in its ``why`` from the lesson's own maths (01: the spectrum of
A(k, β); 04: erank's floor 1/S, Su & You 2026 Eq. 8; 03b: E∆ Theorem 7.3), so it holds
whatever the sliders show.
"""

from __future__ import annotations

from dataclasses import dataclass

from geolab.terms import term


@dataclass(frozen=True)
class Transfer:
    """A second question: ``label``, its ``options``, the ``right`` one and ``why``."""

    label: str
    options: tuple[str, ...]
    right: str
    why: str


@dataclass(frozen=True)
class Lesson:
    """One notebook on the path: ``name`` is its file stem under notebooks/."""

    name: str
    title: str
    line: str
    explain: tuple[str, ...]
    transfer: Transfer | None = None  # None: the notebook asks its own


LESSONS = (
    Lesson(
        "01_delta_operator",
        "01 · The Delta operator",
        "one matrix, one number β: what it keeps, erases or flips",
        (
            "what the eigenvalues of $A(k, \\beta)$ are, and why",
            "what $\\det A$ tells about the operator at each $\\beta$",
            "how erase-and-write replaces the value stored along $k$",
        ),
        Transfer(
            r"**A new case.** In $\mathbb{R}^4$, at $\beta = 1$: what is the rank of $A$?",
            ("4", "3", "1", "0"),
            "3",
            r"At $\beta = 1$ the eigenvalue along $k$ is $1 - \beta = 0$ and the other three"
            r" stay $1$: $A$ erases one direction and keeps three, so $\operatorname{rank} A = 3$"
            r" (and $\det A = 0$).",
        ),
    ),
    Lesson(
        "02_mgt_block",
        "02 · Does MGT keep the Delta operator's spectrum?",
        "MGT's per-channel update, seen through its Jacobian",
        (
            "how many eigenvalues of MGT's Jacobian stay at $1$, and why",
            "what it means for an update to move one direction or every direction",
        ),
        Transfer(
            r"**A new case.** A layer only rescales channel $i$ by its own factor"
            r" $c_i = 1 - \alpha\beta_i$, with $\alpha > 0$ and 16 different $\beta_i \ne 0$."
            r" How many of its 16 eigenvalues equal $1$?",
            ("15 of 16", "8 of 16", "1 of 16", "none of them"),
            "none of them",
            r"The map is the diagonal matrix $\operatorname{diag}(c_1, \dots, c_{16})$: its"
            r" eigenvalues are the $c_i$, and $c_i = 1$ only where $\alpha\beta_i = 0$."
            r" Rescaling every channel moves every direction; the Delta operator moves one.",
        ),
    ),
    Lesson(
        "02b_mgt_gates",
        "02b · MGT's gates: keep, erase or amplify",
        f"MGT's gate β, its decay α and the {term('tangent gate')}",
        (
            "how one number per channel decides between accumulating and erasing",
            "what a negative $\\beta$ does to the old state",
            "what the tangent gate scales, and what it leaves alone",
        ),
        Transfer(
            r"**A new case.** Decay $\alpha = 2$ and gate $\beta = 0.5$ on one channel: what is"
            r" left of that channel's old value after one step?",
            (
                "nothing: it is erased and replaced",
                "half of it",
                "all of it",
                "twice as much",
            ),
            "nothing: it is erased and replaced",
            r"The retention is $1 - \alpha\beta = 1 - 2 \cdot 0.5 = 0$: the step keeps none of"
            r" the old value and writes $\beta V$ in its place.",
        ),
    ),
    Lesson(
        "03_cayley_householder",
        "03 · Cayley rotations and Householder mirrors",
        "whether a rotation built by the Cayley map can turn a vector into its opposite",
        (
            "whether a Cayley rotation can turn a vector into its opposite, and why",
            "why a rotation has $\\det = +1$ and a mirror $\\det = -1$",
        ),
        Transfer(
            r"**A new case.** A Householder mirror $H = I - 2kk^\top$ ($k$ a unit vector): can"
            r" it map $k$ to $-k$?",
            (
                "yes: H k = −k exactly",
                "no: like a Cayley rotation it only comes close",
                "only in two dimensions",
            ),
            "yes: H k = −k exactly",
            r"$Hk = k - 2k\,(k^\top k) = -k$, at once. The Cayley map needs $\theta = \pi$,"
            r" which no finite $\beta$ gives; a mirror flips $k$ by construction. That is why"
            r" E∆ mixes the two.",
        ),
    ),
    Lesson(
        "03b_hybrid",
        "03b · The hybrid of a rotation and a mirror",
        "E∆'s gate γ between a rotation and a mirror, and its regulariser",
        (
            "why $\\gamma Q + (1-\\gamma) H$ is orthogonal only at the ends",
            "what happens to its determinant between the ends, for every $Q$",
            "why the gate regulariser cannot move a gate that starts at $\\tfrac12$",
        ),
        Transfer(
            r"**A new case.** Gradient descent on the regulariser"
            r" $L(\gamma) = 4\gamma(1-\gamma)$ alone, starting at $\gamma = 0.5$: where is"
            r" $\gamma$ after 1000 steps?",
            ("still 0.5", "0", "1", "0.25"),
            "still 0.5",
            r"$L'(\gamma) = 4 - 8\gamma$ is $0$ at $\gamma = \tfrac12$: no step moves it. Any"
            r" symmetric $r(\gamma) = r(1-\gamma)$ has $r'(\tfrac12) = 0$ (E∆ Theorem 7.3):"
            r" only the task's own gradient can move the gate off $\tfrac12$.",
        ),
    ),
    Lesson(
        "04_rank_collapse",
        "04 · Rank collapse in deep stacks",
        "effective rank per layer, 12–200 layers, for every residual rule",
        (
            f"what {term('pure attention')} does to the tokens over depth",
            "where the effective rank of collapsed tokens ends, and why",
            "which residual rules keep the tokens apart at depth",
        ),
        Transfer(
            r"**A new case.** Pure attention with $S = 8$ tokens (width $D = 128$): where"
            r" does its effective rank end, once the tokens have collapsed?",
            ("1/8 = 0.125", "1/32 ≈ 0.031", "exactly 0", "1/√8 ≈ 0.354"),
            "1/8 = 0.125",
            r"Collapsed tokens span one direction: the entropy is $H = 0$, so"
            r" $\mathrm{erank} = e^0 / \min(S, D) = 1/8$. The floor is $1/S$.",
        ),
    ),
    # 05 and 05b ask their transfer questions in their own cells (streams' views compute them)
    Lesson(
        "05_streams",
        "05 · Streams: what the mixer does over depth",
        "the product of one stream mixer per layer, and its two largest eigenvalues",
        (
            "why hyper-connections multiply one small mixing matrix per layer",
            "what $\\lvert\\lambda_1\\rvert$ and $\\lvert\\lambda_2\\rvert$ of that product"
            " say about the streams",
            "what a doubly stochastic and an orthogonal mixer each do over depth",
        ),
    ),
    Lesson(
        "05b_sinkhorn",
        "05b · Sinkhorn–Knopp: from logits to a doubly stochastic mixer",
        f"{term('Sinkhorn')} rounds, step by step, and mHC-lite's exact sums",
        (
            "what one Sinkhorn–Knopp round does to a positive matrix",
            "how close to doubly stochastic a given number of rounds gets",
            "how mHC-lite gets exact sums with no rounds at all",
        ),
    ),
    Lesson(
        "06_training_lab",
        "06 · Training lab",
        "train small models live and compare residual rules side by side",
        (
            "what a loss curve and a validation accuracy each measure",
            "whether a Delta gate $\\beta$ moves during a short training run",
        ),
        Transfer(
            r"**A new case.** A run ends at validation loss $0.36$ with accuracy $1.000$."
            r" About what probability does it give the right token?",
            ("about 70 %", "100 %", "36 %", "about 64 %"),
            "about 70 %",
            r"The loss is $-\log p(\text{right token})$ averaged over positions, so"
            r" $e^{-0.36} \approx 0.70$ is the geometric mean of $p$: the model picks the right"
            r" token every time but gives it only about 70 % of the probability.",
        ),
    ),
    Lesson(
        "07_reproduce",
        "07 · What a verdict means",
        "how the MGT proposal's predictions and the E∆ paper's claims are judged on small runs"
        " (the full ledger behind an accordion)",
        (  # the verdicts' words on hover where the page first uses them
            f"when a run counts as {term('learned')} and as {term('converged')}",
            f"what a run's {term('ratio to the best trivial baseline')} says",
            "why a claim without such runs reads inconclusive, not false",
        ),
        Transfer(
            r"**A new case.** A run's validation MSE is $0.6\times$ the best trivial"
            r" baseline's, and its last quarter of training improved it by 1 %. Can a claim be"
            r" judged on it?",
            ("no: it has not learned", "no: it has not converged", "yes"),
            "no: it has not learned",
            r"It has converged (a gain below 2 %), but learned needs a ratio of at most"
            r" $\tfrac12$: at $0.6$ it is not clearly better than a predictor that learns"
            r" nothing, so the verdict reads *inconclusive: not learned*.",
        ),
    ),
    Lesson(
        "08_gradients",
        "08 · What depth does to gradients",
        "per-layer gradient norms and Jacobian singular values at init",
        (
            "what a stack with no shortcut does to the gradient",
            "why an identity shortcut keeps the Jacobian's singular values near $1$",
        ),
        Transfer(
            r"**A new case.** Pure attention at 48 layers instead of 24. Its"
            r" $\sigma_{max}(J_0)$ is …",
            (
                "far smaller still: 24 more factors below 1",
                "about the same: attention has saturated",
                "larger: depth averages the shrinking out",
            ),
            "far smaller still: 24 more factors below 1",
            r"With no skip, the only way from the output to the embedding crosses every"
            r" layer, and each added layer multiplies in one more factor below $1$. Set the"
            r" depth to 48 above, with the pure attention reference, and read"
            r" $\sigma_{max}(J_0)$.",
        ),
    ),
    Lesson(
        "09_trained_rank",
        "09 · Rank after training",
        "the same rank curves before and after training, and what the runs reached",
        (
            "how training moved the effective rank of the committed runs",
            "what a change of rank after training does and does not mean",
        ),
        Transfer(
            r"**A new case.** A trained model's tokens leave the last layer at effective rank"
            r" exactly $1/S$. What has training done?",
            (
                "collapsed them: every token is one vector",
                "compressed them into the few useful directions",
                "nothing: that is where initialisation starts",
            ),
            "collapsed them: every token is one vector",
            r"$1/S$ is the floor: one direction for all $S$ tokens, which can no longer be told"
            r" apart. A rank below the initial one but above $1/S$ keeps several directions;"
            r" only the floor is collapse.",
        ),
    ),
)

_BY_NAME = {lesson.name: lesson for lesson in LESSONS}
EXERCISES = "notebooks/assignments/ (A1–A4: build the operators yourself, checked automatically)"


def lesson(name: str) -> Lesson:
    """The lesson whose notebook is ``notebooks/{name}.py``."""
    if name not in _BY_NAME:
        raise ValueError(f"name={name!r} is not allowed; expected one of {list(_BY_NAME)}")
    return _BY_NAME[name]


def _link(name: str, linked: bool) -> str:
    """A link to notebook ``name`` when marimo serves the folder (``?file=``), else the command
    that opens it (a link would only answer "File … not found")."""
    return f"[`{name}`](?file={name}.py)" if linked else f"`marimo run notebooks/{name}.py`"


def path_markdown(linked: bool) -> str:
    """00's map: one line per lesson, in order."""
    rows = [
        f"{i}. **{x.title}**: {x.line}. {_link(x.name, linked)}" for i, x in enumerate(LESSONS, 1)
    ]
    return "\n".join(rows) + f"\n\nThen the exercises: {EXERCISES}."


def opening(name: str) -> str:
    """The lesson's first lines: what the learner will be able to explain afterwards."""
    items = "\n".join(f"- {item}" for item in lesson(name).explain)
    return f"**You will be able to explain**\n\n{items}"


def next_markdown(name: str, linked: bool) -> str:
    """The lesson's last line: the next lesson on the path (after the last, the exercises)."""
    at = LESSONS.index(lesson(name))
    if at + 1 == len(LESSONS):
        return f"**Next:** the exercises, {EXERCISES}. The map of every lesson: `00_tour`."
    after = LESSONS[at + 1]
    return f"**Next:** {after.title} ({after.line}): {_link(after.name, linked)}"


def _transfer(name: str) -> Transfer:
    ask = lesson(name).transfer
    if ask is None:
        raise ValueError(f"name={name!r} has no transfer question here; it asks its own")
    return ask


def transfer_verdict(name: str, answer: str) -> tuple[str, bool]:
    """(markdown, right) of the transfer question's reveal for the locked ``answer``."""
    ask = _transfer(name)
    right = answer == ask.right
    head = "**Right.** " if right else f"**Not quite: {ask.right}.** "
    return head + "**Why?** " + ask.why, right


def transfer_question(name: str, answer: str | None, set_answer):
    """The transfer question's ``(radio, try_again)`` (``predict.question``)."""
    from geolab.explore.predict import question

    ask = _transfer(name)
    return question(ask.label, ask.options, answer, set_answer)


def transfer_shown(name: str, answer: str | None):
    """What follows the transfer question: a waiting line, then its verdict and why."""
    import marimo as mo

    if answer is None:
        # 06 and 07 ask no question of their own, so no "this one too"
        return mo.md("*Choose an answer above: the reason appears once you have chosen.*")
    text, right = transfer_verdict(name, answer)
    return mo.callout(mo.md(text), kind="success" if right else "warn")
