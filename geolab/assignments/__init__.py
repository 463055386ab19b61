"""Classroom assignments (spec §11): live checks for marimo homework, the release build, a grader.

``checks`` (results, comparisons, the guard against calling geolab's reference), ``a1``–``a4``
(each assignment's checks), ``catalog`` (which notebook has which stubs), ``release`` (strip the
instructor solutions: ``geolab release``), ``grade`` and ``run_checks`` (``geolab grade``).
Instructor notebooks: ``assignments/instructor/``; student release: ``notebooks/assignments/``.
"""
