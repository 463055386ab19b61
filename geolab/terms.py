"""The words the notebooks use that a learner may not know, each defined once.

``TERMS`` maps a term to a one-line definition; ``term(word)`` is the word as an HTML ``<abbr>``
whose definition shows on hover (marimo's markdown keeps the tag), for the place it first
appears; ``terms_markdown(words)`` lists definitions (notebook 00's glossary, notebook 06's
table columns). The metric definitions follow ``geolab.train.evaluate`` and
``geolab.metrics``; "learned", "converged" and the baseline ratio follow the verdict rules of
``geolab.experiments.report`` (docs/design.md §8); "singular values" and "pure attention" are
notebook 04's (Dong et al. 2021, arXiv:2103.03404, Theorem 2.2 in §2); "erase term" and
"expanded state" name what the DDL controls ``ddl_write`` and ``ddl_state`` change
(docs/design.md §3.2); the LN placements and the tangent gate follow ``geolab.rules``, the Amax
gain ``geolab.metrics.amax_gain``.
"""

from __future__ import annotations

import html

TERMS = {
    "ω": "ω = ‖u‖‖v‖ sin a, the area of the parallelogram spanned by u and v: how strongly the "
    "Cayley generator u vᵀ − v uᵀ turns (0 when u ∥ v); the rotation angle is θ = 2 arctan(βω/2).",
    "loss": "cross-entropy −log p(right token), averaged over the scored positions (for vector "
    "tasks, the mean squared error): lower is better.",
    "ppl": "perplexity = e^loss: the model is as unsure as a uniform guess among ppl tokens "
    "(1 = certain and right; the vocabulary size = guessing).",
    "acc": "accuracy: the fraction of scored positions where the most likely token is the right "
    "one.",
    "mse": "mean squared error between predicted and target vectors.",
    "cos": "cosine between predicted and target vectors (1 = same direction).",
    "norm_dev": "norm deviation: the mean of |‖output‖ − ‖input‖| / ‖input‖ over vectors, how "
    "much the model changes vector lengths (0 = lengths kept exactly).",
    "norm_dev_ref": "the E∆ reference code's norm deviation: on random unit-vector inputs, how "
    "far the mean output length is from 1 (0 = lengths kept).",
    "gamma": "the mean E∆ gate γ: 1 = pure Cayley rotation, 0 = pure Householder mirror.",
    "learned": "a run has learned when its validation MSE is at most ½ of the best trivial "
    "baseline's (perplexity at most 0.9 × for text); for a gate β: set by training, not by the "
    "initialisation.",
    "converged": "the last quarter of training no longer improves the validation value by 2 % or "
    "more (and did not collapse: get worse by more than ln 2 in log-MSE, 5 % in text loss).",
    "ratio to the best trivial baseline": "the run's validation error divided by that of the best "
    "predictor that learns nothing (predict zero, copy the input, the task-aware guess; unigram "
    "or bigram for text): below 1 beats it, ≤ 0.5 counts as learned.",
    "singular values": "the lengths of the axes of the ellipsoid X maps the unit sphere onto: "
    "one per direction the tokens spread along.",
    "pure attention": "attention layers only: no skip connection around them and no MLP.",
    "erase term": "in DDL's update X' = X + β k (vᵀ − kᵀX), the part −β k kᵀX: it removes the "
    "state's old content along the direction k before the new value v is written. The rule "
    "ddl_write drops it and only writes.",
    "expanded state": "DDL's residual state with d_v = 4 columns per token (a d×4 matrix "
    "instead of a d-vector). Before each sublayer a short causal convolution and a read vector "
    "compress it to the d-vector the sublayer reads (the rule ddl_state).",
    "LN": "layer normalisation: subtract the mean of one token's channels and divide by their "
    "standard deviation (then a learned scale and shift per channel).",
    "pre-LN": "x + F(LN(x)): each layer reads a normalised copy of the stream and adds its output "
    "to the stream itself, which is never normalised (GPT-2's arrangement).",
    "post-LN": "LN(x + F(x)): the sum is normalised after every layer (the original "
    "Transformer's arrangement).",
    "Sinkhorn": "the Sinkhorn–Knopp iteration: divide every row by its sum, then every column by "
    "its sum, and repeat; a matrix of positive entries tends to a doubly stochastic one.",
    "doubly stochastic": "a matrix of entries ≥ 0 whose every row and every column sums to 1; a "
    "product of such matrices is one too.",
    "Amax": "the Amax gain of a mixing matrix: its largest absolute row sum or column sum, the "
    "most it can amplify a signal (1 for a doubly stochastic matrix).",
    "tangent gate": "MGT's g = σ(LN(X W_gate)): a number between 0 and 1 per channel that scales "
    "what the layer writes.",
}


def term(word: str, shown: str | None = None) -> str:
    """``shown`` (default ``word``) as HTML whose hover gives ``TERMS[word]``, dotted-underlined
    so it reads as a definition to look up."""
    if word not in TERMS:
        raise ValueError(f"word={word!r} is not allowed; expected one of {sorted(TERMS)}")
    title = html.escape(TERMS[word], quote=True)
    return f'<abbr title="{title}">{html.escape(shown or word)}</abbr>'


def terms_markdown(words) -> str:
    """The definitions of ``words`` as a markdown list, in the order given."""
    unknown = [w for w in words if w not in TERMS]
    if unknown:
        raise ValueError(f"words={unknown!r} are not allowed; expected any of {sorted(TERMS)}")
    return "\n".join(f"- **{w}**: {TERMS[w]}" for w in words)
