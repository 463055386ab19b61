"""``GeoTransformer``: embedding → L layers of (attention step, MLP step) → final norm → head.

docs/design.md §4. Each layer has two residual steps, each with its own residual-rule instance;
the rule named by ``cfg.residual`` decides the shortcut. Token models (``vocab_size``) map (B, S)
int64 to logits (B, S, vocab); vector models (``d_in``/``d_out``) map (B, S, d_in) to (B, S, d_out).
``model.rules`` lists the rule modules in order and ``model.aux_loss()`` returns the E∆ gate
regulariser of the last forward. ``hook_embed`` is a named probe point on the embedding output.
"""

from functools import partial

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from geolab.compiling import checked, compiled
from geolab.config import GeoConfig
from geolab.layers import MLP, CausalSelfAttention, gpt2_proj_std, init_linear, make_norm
from geolab.rules import rule_class


class Layer(nn.Module):
    """One transformer layer: attention step, then MLP step, each through its own rule."""

    def __init__(self, cfg: GeoConfig):
        super().__init__()
        rule_cls = rule_class(cfg)
        width = rule_cls.sublayer_width(cfg)
        std = gpt2_proj_std(cfg.n_steps)
        bias = cfg.flavor == "geolab"  # the reference's blocks have no biases
        rope = cfg.pos == "rope"
        self.attn = CausalSelfAttention(width, cfg.n_head, cfg.dropout, rope, std, bias)
        self.res_attn = rule_cls(cfg)
        self.mlp = MLP(width, cfg.mlp_hidden(width), cfg.dropout, std, bias) if cfg.mlp else None
        self.res_mlp = rule_cls(cfg) if cfg.mlp else None
        rule_cls.init_sublayers(cfg, self.attn, self.mlp)
        self.grad_checkpoint = cfg.grad_checkpoint

    def _wrap(self, sublayer):
        # Checkpoint the sublayers only: they hold the activations that matter (4D MLP hidden,
        # attention), and the rules' gates and regulariser stay ordinary graph nodes.
        if self.grad_checkpoint and torch.is_grad_enabled():
            return partial(checkpoint, sublayer, use_reentrant=False)
        return sublayer

    def forward(self, x):
        x = self.res_attn(x, self._wrap(self.attn))
        if self.mlp is not None:
            x = self.res_mlp(x, self._wrap(self.mlp))
        return x


class GeoTransformer(nn.Module):
    """A decoder-only transformer whose residual connections are ``cfg.residual``.

    Vector models project in and out with linear maps whose biases start at 0 (GPT-2's init for
    every linear map, and the E∆ reference's). In the reference flavor the model is built as the
    public E∆ code's continuous wrapper builds it: norms without a shift, ``seq_len + 1``
    position rows (its block size), and ``unused`` — the token and position tables of its core
    GPT, which the wrapper never reads but which count in its parameter totals.
    """

    def __init__(self, cfg: GeoConfig):
        super().__init__()
        self.cfg = cfg
        self.rule_cls = rule_class(cfg)
        d = cfg.d_model
        if cfg.vocab_size is not None:
            self.embed = nn.Embedding(cfg.vocab_size, d)
            self.head = nn.Linear(d, cfg.vocab_size, bias=False)
            nn.init.normal_(self.embed.weight, std=0.02)
        else:
            self.embed = nn.Linear(cfg.d_in, d)
            self.head = nn.Linear(d, cfg.d_out)
            init_linear(self.embed, 0.02)
        init_linear(self.head, 0.02)
        reference = cfg.flavor == "reference"
        rows = cfg.seq_len + 1 if reference else cfg.seq_len
        self.pos = nn.Embedding(rows, d) if cfg.pos == "learned" else None
        if self.pos is not None:
            nn.init.normal_(self.pos.weight, std=0.02)
        self.hook_embed = nn.Identity()
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.n_layer))
        self.layer_compile: tuple | None = None  # (mode, backend) of `compile_layers`
        self.norm = make_norm(cfg.norm, d, bias=not reference)
        if reference:
            self.unused = nn.ParameterDict(
                {"wte": nn.Parameter(torch.zeros(1, d)), "wpe": nn.Parameter(torch.zeros(rows, d))}
            )
            for table in self.unused.values():
                nn.init.normal_(table, std=0.02)

    @property
    def rules(self) -> list[nn.Module]:
        """The residual-rule modules in the order they act (attention, MLP, attention, …)."""
        out = []
        for layer in self.layers:
            out.append(layer.res_attn)
            if layer.res_mlp is not None:
                out.append(layer.res_mlp)
        return out

    def embed_input(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens (B, S) or vectors (B, S, d_in) -> (B, S, D), with learned positions if set."""
        seq = x.shape[1]
        if seq > self.cfg.seq_len and self.pos is not None:
            raise ValueError(
                f"input length {seq} exceeds GeoConfig.seq_len={self.cfg.seq_len} "
                "(learned positions); raise seq_len or use pos='rope'"
            )
        if self.cfg.vocab_size is not None:
            check_tokens(x, self.cfg.vocab_size)
        h = self.embed(x)
        if self.pos is not None:
            h = h + self.pos.weight[:seq]
        return self.hook_embed(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rule_cls.expand(self.embed_input(x), self.cfg)
        for layer in self.layers:
            if self.layer_compile is None:
                h = run_layer(layer, h)
            else:
                mode, backend = self.layer_compile
                h = checked(run_layer, layer, h, mode=mode, backend=backend)
        return self.head(self.norm(self.rule_cls.merge(h)))

    def compile_layers(self, mode: str | None = None, backend: str = "inductor") -> None:
        """Run every layer through one compiled step from now on (``geolab.compiling``: the
        first layer compiles it, the others reuse it); ``mode="reduce-overhead"`` adds CUDA
        graphs on a GPU. The embedding, final norm and head stay eager."""
        compiled(run_layer, mode, backend)  # a bad mode fails here, not at the first forward
        self.layer_compile = (mode, backend)

    def aux_loss(self) -> torch.Tensor:
        """E∆ gate regulariser of the last forward: reg_weight · Σ_operators mean 4γ(1−γ)."""
        regs = [rule.reg for rule in self.rules if rule.reg is not None]
        if not regs:
            return torch.zeros((), device=self.head.weight.device)
        return self.cfg.reg_weight * torch.stack(regs).sum()


def run_layer(layer: Layer, h: torch.Tensor) -> torch.Tensor:
    """One layer's step, the unit `GeoTransformer.compile_layers` compiles."""
    return layer(h)


def check_tokens(x: torch.Tensor, vocab_size: int) -> None:
    """ValueError unless ``x`` holds integer token ids in [0, vocab_size): the embedding would
    raise an IndexError on a CPU and a device-side assert on a GPU. The range is read back once
    per forward (skipped while torch.compile traces, where it would break the graph)."""
    if x.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"tokens of dtype {x.dtype} are not allowed; a token model (vocab_size={vocab_size}) "
            "takes integer ids (torch.long)"
        )
    if x.numel() == 0 or torch.compiler.is_compiling():
        return
    low, high = (v.item() for v in torch.aminmax(x))
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"token ids in [{low}, {high}] are not allowed; they must lie in [0, {vocab_size}) "
            f"(GeoConfig.vocab_size={vocab_size})"
        )


def count_params(model: nn.Module) -> int:
    """Number of trainable parameters (shared tensors counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def param_count(cfg: GeoConfig) -> int:
    """``count_params(GeoTransformer(cfg))`` without building its L layers: N = N_rest + L·N_layer.

    ``GeoTransformer`` builds each of its ``cfg.n_layer`` layers as ``Layer(cfg)``, all alike and
    sharing nothing, so one layer is counted and multiplied; the rest (embedding, positions,
    final norm, head) does not depend on the depth and is counted on a one-layer model. Both are
    built on the meta device (no memory): two layers instead of L (a 48-layer count took ≈ 0.45 s
    of CPU, most of it meta-device weight initialisation, for every step of ``match_params``).
    """
    with torch.device("meta"):
        shallow = GeoTransformer(cfg.replace(n_layer=1))
        rest = count_params(shallow) - count_params(shallow.layers[0])
        return rest + cfg.n_layer * count_params(Layer(cfg))


VARY = ("n_layer", "d_model", "d_mlp")


def match_params(cfg: GeoConfig, budget: int, vary: str = "n_layer") -> GeoConfig:
    """The config, varying one field of ``VARY``, whose parameter count is nearest ``budget``.

    Counts are exact (models built on the meta device, no memory). ``d_model`` moves in steps that
    keep it divisible by ``n_head`` (and by ``n_streams`` where the rule reshapes D): the rule's
    ``d_model_step``; ``d_mlp`` (the MLP's hidden width) moves one unit at a time, the fine
    adjustment that brings rules of different sizes within a few parameters of one budget.
    """
    if vary not in VARY:
        raise ValueError(f"vary={vary!r} is not allowed; allowed: {', '.join(map(repr, VARY))}")
    if not budget > 0:
        raise ValueError(f"budget={budget!r} is not allowed; it must be a positive count")
    if vary == "d_mlp" and not cfg.mlp:
        raise ValueError("vary='d_mlp' is not allowed for mlp=False; the model has no MLP")
    step = rule_class(cfg).d_model_step(cfg) if vary == "d_model" else 1

    def count_at(units: int) -> int:
        return param_count(cfg.replace(**{vary: units * step}))

    # Counts grow monotonically with depth and width: double, then bisect for the first
    # value at or above the budget, and keep whichever neighbour is nearer.
    hi = 1
    while count_at(hi) < budget:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count_at(mid) < budget:
            lo = mid
        else:
            hi = mid
    candidates = [u for u in (lo, hi) if u >= 1]
    best = min(candidates, key=lambda u: abs(count_at(u) - budget))
    return cfg.replace(**{vary: best * step})
