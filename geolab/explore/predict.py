"""Predict-first questions in the marimo notebooks: commit to an answer, then see what answers it.

A question is three cells (a UI element in one cell, its value read in the next)::

    get_answer, set_answer = explore.answer_state()   # the locked answer, None at first

    guess, again = explore.question(LABEL, OPTIONS, get_answer(), set_answer)
    explore.asked(guess, again, get_answer())     # the radio, or it locked and "try again"

    answer = get_answer()                         # what every hidden cell reads

Every cell that shows something answering the question (a plot, a live table, a formula, a
line of text) starts with ``mo.stop(answer is None, ...)``. Picking an option stores it in the
state, which reruns the question's cell (hence ``allow_self_loops``): the radio comes back
disabled with the pick shown, so the answer cannot be changed after the reveal, and a
"try again" button clears the state, which hides everything again and offers a fresh radio.
Headless runs and tests inject ``answer`` directly (``app.run(defs={"answer": ...})``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

WAITING = "*Pick an answer: the plot appears once you have.*"


def answer_state():
    """``(get_answer, set_answer)``: a marimo state holding the locked answer (None at first).

    ``allow_self_loops``: the radio's ``on_change`` calls the setter from the question's own
    cell, which must rerun to lock the radio."""
    import marimo as mo

    return mo.state(None, allow_self_loops=True)


def question(label: str, options: Sequence[str], answer: str | None, set_answer: Callable):
    """The question's two controls, ``(radio, try_again)``, each bound to a name in its cell.

    Unanswered: an enabled radio whose pick locks the answer (``set_answer``). Answered: the
    same radio disabled on ``answer``. "try again" calls ``set_answer(None)``."""
    import marimo as mo

    if answer is not None and answer not in options:
        raise ValueError(f"answer={answer!r} is not allowed; expected one of {list(options)}")
    radio = mo.ui.radio(
        options=list(options),
        value=answer,
        label=label,
        disabled=answer is not None,
        on_change=set_answer,
    )
    again = mo.ui.button(label="try again", on_click=lambda _: set_answer(None))
    return radio, again


def asked(radio, again, answer: str | None):
    """What the question's cell shows: the radio alone until answered, then the locked radio
    and "try again" (``answer`` is passed: a cell cannot read its own element's value)."""
    import marimo as mo

    if answer is None:
        return mo.vstack([radio])
    locked = mo.md("*Your answer is locked. To answer again, with everything below hidden:*")
    return mo.vstack([radio, mo.hstack([locked, again], justify="start")])
