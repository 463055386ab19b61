"""``GeoConfig``: every knob of a ``GeoTransformer``, validated on construction (docs/design.md §4).

Errors name the field, the bad value and what is allowed, so a slider or a command line that
passes a wrong value gets a message a learner can act on. Fields are checked here for what they
mean on their own; the rule ``residual`` names then checks the fields it reads (``Rule.check``).
"""

import math
import numbers
from dataclasses import asdict, dataclass, fields, replace

from geolab.choices import NORMS
from geolab.registry import config_error, rule_class

POS = ("learned", "rope", "none")
GEOMETRIES = ("full", "streams")
POOLS = ("token", "sequence")


def _fail(field: str, value, allowed: str):
    raise config_error(field, value, allowed)


def positive_int(value) -> bool:
    """An int (not a bool) above 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def finite_number(value) -> bool:
    """An int or float (not a bool) that is neither NaN nor ±Inf."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def plain(value):
    """A numpy integer or float (``np.int64(12)``, ``np.float32(0.5)``: what arrays and some
    widgets hand over) as Python's int or float, which the checks, torch and JSON take; any
    other value unchanged (numpy's bool stays a non-bool, refused where a bool is asked)."""
    if type(value).__module__ == "numpy":
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
    return value


# The largest seed: numpy's RandomState (the reference tasks) takes no more, and a task seeds its
# splits with seed·1000 + k, which torch's generators must still take.
SEED_MAX = 2**32 - 1


def check_seed(value, what: str) -> int:
    """``value`` as a seed: an integer (a numpy one too, not a bool) in [0, SEED_MAX]; a
    one-line ValueError naming ``what`` otherwise, before any generator sees it."""
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX:
        named = f"{what} {value!r}" if what.startswith("-") else f"{what}={value!r}"
        raise ValueError(
            f"{named} is not allowed; a seed is an integer in [0, {SEED_MAX}] (2^32 - 1)"
        )
    return value


@dataclass(frozen=True)
class GeoConfig:
    """Model configuration. Token models set ``vocab_size``; vector models set ``d_in``/``d_out``.

    Rule fields (docs/design.md §3.1–§3.5): ``lam``, ``eps``, ``alpha0``, ``beta0`` (None = the
    rule's own default: 0.5 for the MGT family, 1.0 for ``ddl``), ``gamma0`` (E∆ gate at init, ½
    in the paper), ``reg_weight`` (E∆ gate regulariser), ``layerscale_init`` (None = CaiT's depth
    rule), ``n_streams`` (hyper-connection streams), ``geometry`` and ``pool`` (E∆ family).

    ``d_mlp``: the MLP's hidden width (None: 4 × the sublayer width, GPT-2's); ``match_params``
    moves it to bring models of different rules to one parameter count.

    ``flavor``: "geolab" (default; geolab's own causal models) or "reference" (the E∆ table's
    models — preln as its GPT, ddl, mhc, jpmhc, edelta — rebuilt as the public E∆ code builds them,
    for vector tasks; its ddl and edelta read the mean over the whole sequence, so they are not
    causal; docs/design.md §12).
    """

    # the stack
    residual: str = "preln"
    n_layer: int = 6
    d_model: int = 128
    n_head: int = 4
    # input and output: tokens (vocab_size) or vectors (d_in, d_out), windows of seq_len positions
    vocab_size: int | None = None
    d_in: int | None = None
    d_out: int | None = None
    seq_len: int = 64
    # the block around the residual
    mlp: bool = True
    d_mlp: int | None = None
    norm: str = "layernorm"
    pos: str = "learned"
    dropout: float = 0.0
    # the rules' own fields (each rule's Rule.check validates those it reads)
    lam: float = 1.0
    eps: float = 0.0
    alpha0: float = 0.1
    beta0: float | None = None
    gamma0: float = 0.5
    reg_weight: float = 0.1
    layerscale_init: float | None = None
    n_streams: int = 4
    geometry: str = "full"
    pool: str = "token"
    # how it runs
    grad_checkpoint: bool = False
    flavor: str = "geolab"

    def __post_init__(self):
        for f in fields(self):  # numpy numbers as Python's, so checks and JSON take them
            object.__setattr__(self, f.name, plain(getattr(self, f.name)))
        rule = rule_class(self)
        for name in ("n_layer", "d_model", "n_head", "seq_len", "n_streams"):
            value = getattr(self, name)
            if not positive_int(value):
                _fail(name, value, "must be a positive integer")
        self._check_io()
        if self.d_mlp is not None and not positive_int(self.d_mlp):
            _fail("d_mlp", self.d_mlp, "must be a positive integer, or None for 4 × the width")
        if self.d_model % self.n_head:
            _fail("n_head", self.n_head, f"must divide d_model={self.d_model} (heads split it)")
        for name in ("mlp", "grad_checkpoint"):
            if not isinstance(getattr(self, name), bool):
                _fail(name, getattr(self, name), "must be True or False")
        if self.norm not in NORMS:
            _fail("norm", self.norm, f"allowed: {', '.join(NORMS)}")
        if self.pos not in POS:
            _fail("pos", self.pos, f"allowed: {', '.join(POS)}")
        if self.geometry not in GEOMETRIES:
            _fail("geometry", self.geometry, f"allowed: {', '.join(GEOMETRIES)}")
        if self.pool not in POOLS:
            _fail("pool", self.pool, f"allowed: {', '.join(POOLS)}")
        self._check_rule_numbers()
        rule.check(self)

    def _check_io(self):
        if self.vocab_size is not None:
            if self.d_in is not None or self.d_out is not None:
                _fail("vocab_size", self.vocab_size, "set vocab_size or d_in/d_out, not both")
            value = self.vocab_size
            if not positive_int(value):
                _fail("vocab_size", self.vocab_size, "must be a positive integer")
            return
        for name in ("d_in", "d_out"):
            value = getattr(self, name)
            if not positive_int(value):
                _fail(name, value, "set vocab_size (token model) or positive d_in and d_out")

    def _check_rule_numbers(self):
        for name in ("lam", "eps", "alpha0", "gamma0", "reg_weight", "dropout"):
            if not finite_number(getattr(self, name)):
                _fail(name, getattr(self, name), "must be a finite number")
        for name in ("beta0", "layerscale_init"):  # None: the rule's own default
            value = getattr(self, name)
            if value is not None and not finite_number(value):
                _fail(name, value, "must be a finite number, or None for the rule's default")
        if self.lam <= 0:
            _fail("lam", self.lam, "λ must be > 0")
        if not 0 <= self.dropout < 1:
            _fail("dropout", self.dropout, "must lie in [0, 1)")
        if self.reg_weight < 0:
            _fail("reg_weight", self.reg_weight, "must be >= 0")
        if not 0 < self.gamma0 < 1:
            _fail("gamma0", self.gamma0, "γ₀ must lie in the open interval (0, 1)")
        if self.layerscale_init is not None and not self.layerscale_init > 0:
            _fail("layerscale_init", self.layerscale_init, "must be > 0 (or None for CaiT's rule)")

    @property
    def n_steps(self) -> int:
        """Residual steps in the stack: two per layer (attention, MLP), one without the MLP."""
        return self.n_layer * (2 if self.mlp else 1)

    def mlp_hidden(self, width: int) -> int:
        """The MLP's hidden width for sublayers of ``width`` channels: ``d_mlp`` or 4 × width."""
        return 4 * width if self.d_mlp is None else self.d_mlp

    def replace(self, **changes) -> "GeoConfig":
        """A validated copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "GeoConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"GeoConfig has no field(s) {unknown}; allowed: {sorted(known)}")
        return cls(**data)
