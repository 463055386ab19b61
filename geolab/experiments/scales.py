"""The sizes the text protocols share, for their ``SCALES`` tables (docs/design.md §8).

One character-level model per scale below the paper's, so the committed small results of
different protocols measure the same network; each protocol adds what is its own (depth, rules,
seeds, steps, reductions). ``paper_train`` is training at the papers' batch on an accelerator.
The paper scales drop out at 0.1 (``PAPER``, read by ``runs.model_config``).
"""

SMOKE = {"everything": "a smoke test of the code path, not a measurement"}
TINY = {"task": "shakespeare", "seq_len": 16, "d_model": 16, "n_head": 2}
SMALL = {"task": "shakespeare", "seq_len": 32, "d_model": 32, "n_head": 4}
SMALL_TRAIN = {"steps": 800, "batch_size": 16, "warmup": 40, "eval_batches": 8}
# dropout 0.1 fixed before any GPU run (issue 54): 80–160 M parameters trained 50–100 epochs on
# WikiText-2's 2 M tokens overfit without it (GPT-2's and the transformer's usual 0.1)
PAPER = {"task": "wikitext2", "seq_len": 128, "d_model": 256, "n_head": 8, "dropout": 0.1}


def smoke(steps: int, **own) -> dict:
    """A protocol's ``tiny`` scale: the TINY sizes, ``steps`` AdamW steps of batch 4, SMOKE as
    its reductions, then the protocol's ``own`` keys (depth, rules, seeds, ...) over those."""
    train = {"steps": steps, "batch_size": 4, "warmup": 1, "eval_batches": 1}
    return {**TINY, "train": train, "reductions": SMOKE, **own}


def paper_train(steps: int, warmup: int = 500, eval_batches: int | None = 50) -> dict:
    """``train`` settings at paper scale: batch 64 × 128 tokens, device "auto", bf16."""
    return {
        "steps": steps,
        "batch_size": 64,
        "warmup": warmup,
        "eval_batches": eval_batches,
        "device": "auto",
        "bf16": True,
    }
