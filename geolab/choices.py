"""The allowed values of settings the command line offers before it needs torch.

``geolab --help``, ``geolab tasks`` and ``geolab reproduce --list`` build their parsers from these
names alone, so they start without importing torch (about 3 s of CPU). The modules that act on
a setting import its names from here: ``geolab.compiling`` (compile modes), ``geolab.layers``
(norms), ``geolab.tasks`` (the task lines), ``geolab.experiments.runner`` (scales).
"""

NORMS = ("layernorm", "rmsnorm")
MODES = (None, "reduce-overhead")  # inductor's default, or CUDA graphs on top (a GPU)
MODE_NAMES = {"default": None, "reduce-overhead": "reduce-overhead"}  # --compile-mode's values
SCALE_NAMES = ("tiny", "small", "paper")

TASK_LINES = {
    "copy": "copy m tokens after seeing them; loss on the second half only (MGT synthetic copy)",
    "echo": "predict the next step of a noisy repeated unit key in R^64 (E∆ stability)",
    "gyroscope": "predict the next step of a plane rotation by θ ~ U[0.1, 2.5] in R^16 (E∆)",
    "inversion": "map x to y = −x in R^64; cosine alignment and final γ (E∆ reflection test)",
    "near_pi": "rotation by θ = 3.10 in plane (0,1) of R^64, close to π (E∆ near-π single)",
    "near_pi_multi": "rotation by θ = 3.14 in all 32 planes of R^64 (E∆ near-π multi)",
    "wikitext2": "word-level WikiText-2 language modelling, 33,278-word vocabulary",
    "shakespeare": "character-level tiny-shakespeare language modelling",
}
