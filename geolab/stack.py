"""The views' stacked model: each layer's weights drawn once, any depth a prefix of the stack.

docs/design.md §5. Notebook 04, ``geolab rank`` and the Jupyter rank explorer show the state after
every layer of 12–200-layer token stacks at init, and move with depth and init sliders. A
``GeoTransformer`` built per depth and slider value (≈ 0.6 s for 200 layers here) and run through
hooks and one ``nn.Module`` call per linear map costs several times its arithmetic. Here, per
(rule, width, sequence length, seed):

- the attention and MLP weights of all layers are (L, …) tensors (``Sublayers``), layer l drawn
  from its own generator seeded by (seed, l), so a layer's weights do not depend on how deep the
  stack was drawn, and shared by every rule with the same sublayer width (curves differ by their
  rule alone); a stack is drawn as deep as the deepest depth asked so far, and a deeper one
  draws only the layers it adds (04 opens at 24 layers and pays for 200 only when asked);
- the rules are the modules training uses, one per residual step, called through their own
  ``forward`` (the same maths, no second copy): each built once, as the stack grows, then
  ``Rule.reset_init`` re-applies slider constants (β₀, λ, α₀, γ₀) and depth constants (DeepNorm's
  a, LayerScale's s₀) without a redraw;
- GPT-2's projection init 0.02/√(steps) is the only sublayer weight that depends on the total
  depth: the stack keeps W_o ~ N(0, 0.02²) and scales the projections' output by 1/√(steps), a
  scalar per layer (``layers.attention(..., scale=)``); a rule that rescales its sublayers
  (DeepNet's ``init_sublayers``) rescales a copy made per depth.

``stack_states(cfg, seed, tokens)`` equals the module model that holds the same weights
(``as_module``): tests compare every rule, prefix against fresh build, to float32 round-off.
Training keeps the module model. Biases start at 0 in every sublayer and are left out here.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

import torch

from geolab.compiling import checked, views_compile
from geolab.config import GeoConfig
from geolab.layers import attention, gpt2_proj_std, mlp
from geolab.memory import check_allocation
from geolab.model import GeoTransformer, check_tokens
from geolab.rules import Rule, rule_class

STD = 0.02  # GPT-2's init std of every weight but the residual projections' extra 1/√(steps)
_PARAM_BUDGET = 400_000_000  # kept stacks, in parameters (≈ 1.6 GB of float32)
_SUBLAYERS: OrderedDict = OrderedDict()
_RULES: OrderedDict = OrderedDict()


def _seed(seed: int, layer: int, part: int) -> int:
    """A generator seed per (seed, layer, part): the draws of layer l never depend on L."""
    return (seed * 1_000_003 + layer) * 8 + part


def _normal(shape, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).mul_(STD)


@dataclass
class Sublayers:
    """The embedding tables and every layer's attention and MLP weights, drawn N(0, 0.02²).

    qkv (L, 3w, w), attn_proj (L, w, w), fc (L', h, w), mlp_proj (L', w, h) (the last two
    ``None`` until an MLP is asked for, and L' < L when only attention-only stacks were asked
    deeper; h = ``cfg.mlp_hidden(w)``, 4w unless ``d_mlp`` is set); embed (vocab, D), pos
    (rows, D). w is the rules' sublayer width.
    """

    embed: torch.Tensor
    pos: torch.Tensor
    qkv: torch.Tensor
    attn_proj: torch.Tensor
    fc: torch.Tensor | None
    mlp_proj: torch.Tensor | None

    @property
    def depth(self) -> int:
        return self.qkv.shape[0]

    def numel(self) -> int:
        return sum(t.numel() for t in vars(self).values() if t is not None)


def draw_sublayers(cfg: GeoConfig, seed: int, depth: int, previous=None) -> Sublayers:
    """``Sublayers`` of ``depth`` layers for ``cfg``'s widths, layer l from seeds (seed, l).
    ``previous``, a kept draw of the same widths (shallower, deeper, or attention-only), lends
    its tables and every layer it holds (the same seeds give the same values), so only the
    layers it lacks are drawn; the result is at least as deep as ``previous``."""
    w = rule_class(cfg).sublayer_width(cfg)
    rows = cfg.seq_len + 1 if cfg.flavor == "reference" else cfg.seq_len
    if previous is not None:
        depth = max(depth, previous.depth)

    def layers(name, shape, part):
        """(depth, *shape): ``previous``'s layers of ``name``, then the rest drawn into it."""
        kept = getattr(previous, name, None)
        start = 0 if kept is None else kept.shape[0]
        if start >= depth:
            return kept
        out = torch.empty(depth, *shape)
        if start:
            out[:start] = kept
        for layer in range(start, depth):  # into the stack, no per-layer tensors to copy
            gen = torch.Generator().manual_seed(_seed(seed, layer, part))
            torch.randn(shape, generator=gen, out=out[layer]).mul_(STD)
        return out

    if previous is None:
        embed = _normal((cfg.vocab_size, cfg.d_model), _seed(seed, -1, 0))
        pos = _normal((rows, cfg.d_model), _seed(seed, -1, 1))
    else:
        embed, pos = previous.embed, previous.pos
    hidden = cfg.mlp_hidden(w)
    return Sublayers(
        embed=embed,
        pos=pos,
        qkv=layers("qkv", (3 * w, w), 0),
        attn_proj=layers("attn_proj", (w, w), 1),
        fc=layers("fc", (hidden, w), 2) if cfg.mlp else getattr(previous, "fc", None),
        mlp_proj=layers("mlp_proj", (w, hidden), 3)
        if cfg.mlp
        else getattr(previous, "mlp_proj", None),
    )


def build_rules(cfg: GeoConfig, seed: int, depth: int, previous=None) -> list[Rule]:
    """One rule module per residual step of a ``depth``-layer stack (attention, MLP, …), each
    drawn from the global RNG seeded by (seed, layer, step) and restored afterwards; the steps
    of ``previous`` (a kept, shallower list) are kept and only the rest are built."""
    rule_cls = rule_class(cfg)
    cfg = cfg.replace(n_layer=depth)
    per_layer = 2 if cfg.mlp else 1
    rules = list(previous or ())
    # The CPU generator alone: torch.manual_seed also queues a CUDA seed with a stack trace
    # (≈ 0.3 ms a call here), 400 times for 200 layers.
    with torch.random.fork_rng(devices=[]):
        for layer in range(len(rules) // per_layer, depth):
            for step in range(per_layer):
                torch.default_generator.manual_seed(_seed(seed, layer, 4 + step))
                rules.append(rule_cls(cfg).eval())
    return rules


def _kept(cache: OrderedDict, key, fits, depth: int, draw):
    """The cached value for ``key`` if ``fits(value)``, else ``draw(depth, value)`` (value the
    kept one, to grow from, or None), kept least recently used first out within the parameter
    budget."""
    value, size = cache.pop(key, (None, 0))
    if value is None or not fits(value):
        value = draw(depth, value)
        size = _numel(value)
    cache[key] = value, size
    while (
        sum(n for _, n in _SUBLAYERS.values()) + sum(n for _, n in _RULES.values())
        > (_PARAM_BUDGET)
        and len(cache) > 1
    ):
        cache.popitem(last=False)
    return value


def _numel(value) -> int:
    if isinstance(value, Sublayers):
        return value.numel()
    return sum(p.numel() for rule in value for p in rule.parameters())


def clear() -> None:
    """Forget every kept stack (the next call draws again, the same numbers)."""
    _SUBLAYERS.clear()
    _RULES.clear()


def _fixed(cfg: GeoConfig) -> GeoConfig:
    """``cfg`` without what the kept weights do not depend on: depth and init constants."""
    fields = {name: getattr(GeoConfig, name) for name in rule_class(cfg).init_fields}
    return cfg.replace(n_layer=1, layerscale_init=None, **fields)


def stack_weights(cfg: GeoConfig, seed: int, draw_depth: int | None = None):
    """The kept ``Sublayers`` and rule modules serving ``cfg`` (grown to
    max(draw_depth, cfg.n_layer) layers if the kept ones are shallower), the rules reset to
    ``cfg``'s constants and depth. Returns (sublayers, rules), both possibly deeper than
    ``cfg``."""
    if cfg.vocab_size is None:
        raise ValueError("the stacked model serves token models: set GeoConfig.vocab_size")
    depth = max(draw_depth or 0, cfg.n_layer)
    rule_cls = rule_class(cfg)
    width = rule_cls.sublayer_width(cfg)
    # Attention-only stacks (pure attention) read the same attention weights as the others.
    hidden = cfg.mlp_hidden(width)
    check_draw_depth(draw_depth, depth, 4 * width * width + 2 * width * hidden)
    sub_key = (width, hidden, cfg.d_model, cfg.vocab_size, cfg.seq_len, cfg.flavor, seed)

    def deep_enough(sub):
        mlp_depth = 0 if sub.fc is None else sub.fc.shape[0]
        return sub.depth >= cfg.n_layer and (mlp_depth >= cfg.n_layer or not cfg.mlp)

    sub = _kept(_SUBLAYERS, sub_key, deep_enough, depth, partial(draw_sublayers, cfg, seed))
    fixed = _fixed(cfg)
    rules = _kept(
        _RULES,
        (fixed, seed),
        lambda rules: len(rules) >= cfg.n_steps,
        depth,
        partial(build_rules, fixed, seed),
    )
    # The steps cfg's stack runs, not all kept ones: a shallow depth resets its prefix only
    # (rules[0].cfg == cfg still means the first cfg.n_steps hold cfg's constants). A grown
    # stack always passes here: its depth, part of cfg, is new.
    if rules[0].cfg != cfg:  # a slider or the depth moved: constants only, no draw
        for rule in rules[: cfg.n_steps]:
            rule.reset_init(cfg)
    return sub, rules


def check_draw_depth(draw_depth, depth: int, floats_per_layer: int) -> None:
    """A one-line ValueError for a ``draw_depth`` that is not a whole number >= 0, or whose
    ``depth`` layers of float32 sublayer weights (qkv 3w·w, projection w·w, MLP 2·w·hidden) do
    not fit in free memory: ``draw_depth=10**6`` would otherwise draw for hours, then fail."""
    if draw_depth is None:
        return
    if isinstance(draw_depth, bool) or not isinstance(draw_depth, int) or draw_depth < 0:
        raise ValueError(
            f"draw_depth={draw_depth!r} is not allowed; it must be a whole number >= 0 (the "
            "layers of weights drawn ahead)"
        )
    check_allocation(
        4 * depth * floats_per_layer, f"draw_depth={draw_depth}", "draw fewer layers ahead"
    )


def check_token_shape(tokens, cfg: GeoConfig) -> None:
    """A one-line ValueError unless ``tokens`` is a (B, S) tensor with B >= 1 and
    1 <= S <= ``cfg.seq_len`` (the positions the stack has weights for)."""
    shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else None
    if shape is None or len(shape) != 2 or shape[0] < 1 or not 1 <= shape[1] <= cfg.seq_len:
        what = f"of shape {shape}" if shape is not None else f"of type {type(tokens).__name__}"
        raise ValueError(
            f"tokens {what} are not allowed; the stack takes a (B, S) tensor of ids with B >= 1 "
            f"and 1 <= S <= GeoConfig.seq_len={cfg.seq_len}"
        )


def _sublayer_weights(sub: Sublayers, cfg: GeoConfig) -> Sublayers:
    """The sublayer weights of ``cfg``'s depth as its rule initialises them: the kept ones, or
    a rescaled copy of the first L layers for a rule with its own ``init_sublayers``."""
    rule_cls = rule_class(cfg)
    if rule_cls.init_sublayers is Rule.init_sublayers:
        return sub
    L = cfg.n_layer
    copy = Sublayers(**{k: None if t is None else t[:L].clone() for k, t in vars(sub).items()})
    copy.embed, copy.pos = sub.embed, sub.pos
    for layer in range(L):
        attn = SimpleNamespace(
            qkv=SimpleNamespace(weight=copy.qkv[layer]),
            proj=SimpleNamespace(weight=copy.attn_proj[layer]),
        )
        ffn = None
        if cfg.mlp:
            ffn = SimpleNamespace(
                fc=SimpleNamespace(weight=copy.fc[layer]),
                proj=SimpleNamespace(weight=copy.mlp_proj[layer]),
            )
        rule_cls.init_sublayers(cfg, attn, ffn)
    return copy


@torch.no_grad()  # not inference mode: kept weights drawn inside must stay resettable outside
def stack_states(
    cfg: GeoConfig,
    seed: int,
    tokens: torch.Tensor,
    every_step: bool = False,
    draw_depth: int | None = None,
    with_input: bool = False,
) -> torch.Tensor:
    """The merged residual states of ``cfg``'s stack on ``tokens`` (B, S) int64: after every
    layer, (n_layer, B, S, D), or with ``every_step`` the embedding and then every residual
    step, (n_steps + 1, B, S, D) — what ``probe.rank_profile`` and ``record`` see; with
    ``with_input`` alone the embedding and then every layer, (n_layer + 1, B, S, D) (04's
    curves, without stacking the mid-layer steps only to drop them). A stack shallower than
    max(draw_depth, cfg.n_layer) is grown to it (the numbers do not depend on it)."""
    sub, rules = stack_weights(cfg, seed, draw_depth)
    sub = _sublayer_weights(sub, cfg)
    rule_cls = rule_class(cfg)
    scale = proj_scale(cfg)
    rope = cfg.pos == "rope"
    check_token_shape(tokens, cfg)
    check_tokens(tokens, cfg.vocab_size)  # −1 would index the last row, silently
    seq = tokens.shape[1]
    h = sub.embed[tokens]
    if cfg.pos == "learned":
        h = h + sub.pos[:seq]
    states = [h] if every_step or with_input else []
    h = rule_cls.expand(h, cfg)
    per_layer = 2 if cfg.mlp else 1
    step = _layer
    if views_compile():  # one compiled step for every layer; the depth's scale as a tensor
        step, scale = partial(checked, _layer), torch.tensor(scale)
    for layer in range(cfg.n_layer):
        mid, h = step(
            rules[per_layer * layer],
            rules[per_layer * layer + 1] if cfg.mlp else None,
            h,
            sub.qkv[layer],
            sub.attn_proj[layer],
            sub.fc[layer] if cfg.mlp else None,
            sub.mlp_proj[layer] if cfg.mlp else None,
            scale,
            cfg.n_head,
            rope,
            every_step,
        )
        if mid is not None:
            states.append(mid)
        states.append(rule_cls.merge(h))
    return torch.stack(states)


def _layer(attn_rule, mlp_rule, h, qkv_w, attn_proj_w, fc_w, mlp_proj_w, scale, n_head, rope, mid):
    """One layer of the stack: its attention step through ``attn_rule``, then (``mlp_rule`` not
    None) its MLP step; returns (the merged state between the two if ``mid``, else None; the
    state after the layer). The unit the views compile (``GEOLAB_COMPILE=1``)."""
    f = partial(
        attention,
        qkv_w=qkv_w,
        qkv_b=None,
        proj_w=attn_proj_w,
        proj_b=None,
        n_head=n_head,
        use_rope=rope,
        scale=scale,
    )
    h = attn_rule.forward(h, f)
    if mlp_rule is None:
        return None, h
    between = attn_rule.merge(h) if mid else None
    f = partial(mlp, fc_w=fc_w, fc_b=None, proj_w=mlp_proj_w, proj_b=None, scale=scale)
    return between, mlp_rule.forward(h, f)


def as_module(cfg: GeoConfig, seed: int) -> GeoTransformer:
    """The module model (``GeoTransformer(cfg)``, eval mode) holding the stack's weights at
    ``cfg``'s depth and constants (its biases are 0, as at init): the plain path the stacked
    forward is tested against. Its head and final norm keep their own init (the stack never
    reads them)."""
    sub, rules = stack_weights(cfg, seed)
    sub = _sublayer_weights(sub, cfg)
    with torch.random.fork_rng():
        model = GeoTransformer(cfg).eval()
    scale = proj_scale(cfg)
    with torch.no_grad():
        model.embed.weight.copy_(sub.embed)
        if model.pos is not None:
            model.pos.weight.copy_(sub.pos)
        for layer, block in enumerate(model.layers):
            block.attn.qkv.weight.copy_(sub.qkv[layer])
            block.attn.proj.weight.copy_(sub.attn_proj[layer] * scale)
            if cfg.mlp:
                block.mlp.fc.weight.copy_(sub.fc[layer])
                block.mlp.proj.weight.copy_(sub.mlp_proj[layer] * scale)
        for kept, rule in zip(rules, model.rules, strict=False):  # the kept may be deeper
            rule.load_state_dict(kept.state_dict())
            rule.reset_init(cfg)
    return model


def proj_scale(cfg: GeoConfig) -> float:
    """GPT-2's 1/√(steps) (``gpt2_proj_std`` over the kept std): the projections' output factor."""
    return gpt2_proj_std(cfg.n_steps) / STD
