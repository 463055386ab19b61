"""Classroom assignments (docs/design.md §11): live checks for marimo homework, the release
build, a grader.

``checks`` (results, comparisons, the guard against calling geolab's reference), ``a1``–``a4``
(each assignment's checks), ``catalog`` (which notebook has which stubs), ``release`` (strip the
instructor solutions: ``geolab release``). The grader (``geolab grade``): ``grade`` (the run),
``sandbox`` (bwrap or a limited process), ``worker`` (what runs there: one process per stub),
``remote`` (the grader's proxies for the student's stubs), ``remote_rule`` (A4's rule as a black
box the grader drives), ``probes`` (the only code touching student objects: raw questions),
``wire`` (plain data across), ``run_checks`` (loading a notebook),
``gradebook`` and ``feedback`` (the teacher's files). Instructor notebooks:
``assignments/instructor/`` (hidden checks in its ``hidden/``); student release:
``notebooks/assignments/``.
"""
