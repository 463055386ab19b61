"""Check geolab's reference flavor against a local checkout of the public E∆ code.

    python scripts/check_reference.py --reference PATH   # a clone of arash-shahmansoori/edelta

For each E∆-table model it builds the public code's model (its ``create_model``) and geolab's
``GeoConfig(flavor="reference")`` model, compares parameter counts at the published sizes,
copies the public model's weights (perturbed, so no gate sits at its init) into geolab's by name
and compares the outputs in float64; then it compares the gyroscope data of both generators.
Nothing here is needed by the tests, and nothing of the public code is kept in geolab.
"""

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from geolab import GeoConfig, GeoTransformer, count_params
from geolab.tasks import get_task

# geolab rule -> the public code's model_type and its layers / width in the E∆ table
TABLE = {
    "preln": ("gpt2", 9, 128),
    "ddl": ("ddl", 8, 128),
    "mhc": ("mhc", 9, 128),
    "jpmhc": ("jpmhc", 7, 512),
    "edelta": ("edelta", 6, 128),
}
# per residual step: the public code's module prefix -> geolab's, and the parameter names
SUBLAYER = {"attn": ("res_attn", "ln_1"), "mlp": ("res_mlp", "ln_2")}
NETS = {"edelta": ("u_net", "v_net", "k_net", "beta_net"), "ddl": ("k_net", "beta_net")}
GATES = {
    rule: (prefix, [f"{n}.{j}" for n in NETS[rule] for j in (0, 2)])
    for rule, prefix in (("edelta", "geo_{s}."), ("ddl", "delta_{s}."))
}


def public_model(model_type: str, n_layer: int, d_model: int, d_in: int, block: int):
    from src.training.train_continuous import create_model

    args = argparse.Namespace(
        model_type=model_type, n_layer=n_layer, n_embd=d_model, n_head=4, n_streams=4,
        dropout=0.0, geo_hidden_ratio=4, gate_reg_weight=0.1, init_gate_bias=0.0,
        match_proposed_params=False, geo_hidden_dim=48,
    )  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        return create_model(args, d_in, block)


def geolab_names(rule: str, n_layer: int) -> dict:
    """The public state-dict name -> geolab's, for every tensor that maps one to one."""
    names = {
        "input_proj.weight": "embed.weight",
        "input_proj.bias": "embed.bias",
        "output_proj.weight": "head.weight",
        "output_proj.bias": "head.bias",
        "core.transformer.wte.weight": "unused.wte",
        "core.transformer.wpe.weight": "unused.wpe",
        "core.transformer.ln_f.weight": "norm.weight",
    }
    for i in range(n_layer):
        ref, ours = f"core.transformer.h.{i}.", f"layers.{i}."
        for a, b in (("attn.c_attn", "attn.qkv"), ("attn.c_proj", "attn.proj")):
            names[f"{ref}{a}.weight"] = f"{ours}{b}.weight"
        for a, b in (("mlp.c_fc", "mlp.fc"), ("mlp.c_proj", "mlp.proj")):
            names[f"{ref}{a}.weight"] = f"{ours}{b}.weight"
        for s, (res, ln) in SUBLAYER.items():
            names[f"{ref}{ln}.weight"] = f"{ours}{res}.ln.weight"
            if rule in GATES:
                prefix, nets = GATES[rule]
                for net in nets:
                    for p in ("weight", "bias"):
                        names[f"{ref}{prefix.format(s=s)}{net}.{p}"] = f"{ours}{res}.{net}.{p}"
            if rule == "edelta":
                for p in ("weight", "bias"):
                    names[f"{ref}geo_{s}.gate_net.{p}"] = f"{ours}{res}.gate.{p}"
                names[f"{ref}h_pre_{s}.weight"] = f"{ours}{res}.h_pre.weight"
                names[f"{ref}h_post_{s}.weight"] = f"{ours}{res}.h_post.weight"
            if rule == "mhc":
                names[f"{ref}mhc_{s}.rms_norm.weight"] = f"{ours}{res}.norm_in.weight"
                for b in ("b_pre", "b_post", "b_res"):
                    names[f"{ref}mhc_{s}.{b}"] = f"{ours}{res}.{b}"
            if rule == "jpmhc":
                q = f"{ref}jpmhc_{s}."
                for p in ("weight", "bias"):
                    names[f"{q}norm.{p}"] = f"{ours}{res}.ln_in.{p}"
                    names[f"{q}fused_proj.{p}"] = f"{ours}{res}.w.{p}"
    return names


def copy_weights(rule: str, n_layer: int, public: torch.nn.Module, ours: torch.nn.Module):
    """Perturb the public model's weights, then load the same numbers into geolab's model."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in public.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    sd = public.state_dict()
    names = geolab_names(rule, n_layer)
    new = {ours_name: sd[ref_name] for ref_name, ours_name in names.items()}
    new["pos.weight"] = sd["pos_emb"][0]
    if rule == "mhc":
        for i in range(n_layer):
            for s, (res, _) in SUBLAYER.items():
                q = f"core.transformer.h.{i}.mhc_{s}."
                parts = ("pre", "post", "res")
                new[f"layers.{i}.{res}.phi.weight"] = torch.cat(
                    [sd[f"{q}phi_{k}.weight"] for k in parts]
                )
                new[f"layers.{i}.{res}.alpha"] = torch.stack([sd[f"{q}alpha_{k}"] for k in parts])
    ours.load_state_dict(new)


def check_models(seq: int = 31, d_in: int = 16) -> bool:
    ok = True
    for rule, (model_type, n_layer, d_model) in TABLE.items():
        cfg = GeoConfig(
            residual=rule, n_layer=n_layer, d_model=d_model, n_head=4, seq_len=255, d_in=16,
            d_out=16, flavor="reference",
        )  # fmt: skip
        with torch.device("meta"):
            ours_count = count_params(GeoTransformer(cfg))
        full = public_model(model_type, n_layer, d_model, 16, 256)
        counts = (ours_count, sum(p.numel() for p in full.parameters()))
        torch.manual_seed(0)
        layers, width = 2, d_model // 2
        public = public_model(model_type, layers, width, d_in, seq + 1).double()
        small = cfg.replace(n_layer=layers, d_model=width, seq_len=seq, d_in=d_in, d_out=d_in)
        ours = GeoTransformer(small).double()
        copy_weights(rule, layers, public, ours)
        x = torch.randn(3, seq, d_in, dtype=torch.float64)
        with torch.no_grad():
            diff = (public(x, x)[0] - ours(x)).abs().max().item()
        good = counts[0] == counts[1] and diff < 1e-6
        ok &= good
        print(
            f"{rule:<7} parameters geolab {counts[0]:,} / public {counts[1]:,}; "
            f"max |output difference| {diff:.2e}  {'ok' if good else 'MISMATCH'}"
        )
    return ok


def check_gyroscope(n_train: int = 64, n_val: int = 16, seed: int = 42) -> bool:
    from src.data.gyroscope import generate_gyroscope_data

    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        generate_gyroscope_data(tmp, n_train=n_train, n_val=n_val, seed=seed)
        public = {s: np.load(Path(tmp) / f"{s}_x.npy") for s in ("train", "val")}
    ours = get_task("gyroscope", seed=seed, n_train=n_train, n_val=n_val, flavor="reference")
    diff = max(np.abs(ours.x[s].numpy() - public[s]).max() for s in public)
    print(f"gyroscope draws: max |difference| {diff:.2e}  {'ok' if diff < 1e-6 else 'MISMATCH'}")
    return diff < 1e-6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, help="a local clone of the public E∆ code")
    args = parser.parse_args(argv)
    root = Path(args.reference)
    if not (root / "src" / "training" / "train_continuous.py").is_file():
        print(f"--reference {str(root)!r} is not a checkout of the public E∆ code", file=sys.stderr)
        return 2
    sys.path.insert(0, str(root))
    ok = check_models() & check_gyroscope()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
