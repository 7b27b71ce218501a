#!/usr/bin/env python3
"""Reference cases for @vlmkit/qformer, computed with HF transformers 5.17 (torch 2.13, CPU).

Writes <repo>/test-fixtures/qformer/:

  <case>/config.json          the config the module was built from (HF field names)
  <case>/model.safetensors    the module's parameters under its HF module names
  <case>/inputs.safetensors   forward inputs
  <case>/expected.safetensors forward outputs (float32)
  README.md                   what each case holds (generated)

Cases:
  qformer       Blip2QFormerModel alone: 3 layers, cross-attention every 2nd layer (layers 0 and 2),
                encoder_hidden_size 24 != hidden 32, 4 heads; batch 3, 5 queries, 7 encoder states.
  window-2-4    Granite4VisionWindowQFormerDownsampler, image side 12 patches, downsample_rate "2/4"
                (3x3 windows of 4x4 keys, 2x2 queries each), 3 tiles: one area projector
                (layerwise_projectors.0) and the four spatial projectors (offsets TL, TR, BL, BR).
  window-4-8    the same with side 16 and "4/8" (2x2 windows of 8x8 keys, 4x4 queries), hidden 16.
  area-2-3      area projector only, side 6, "2/3": area interpolation 6 -> 4 with a non-integer
                ratio (overlapping adaptive-pool cells). The spatial projectors cannot run with a
                rate other than 1/2 (HF and vLLM both fail), so this case has none.

Parameters follow tools/fixtures/make_fixtures.py's non-degenerate init: Linear weights
N(0, 1.5/sqrt(fan_in)), norm weights 1 + N(0, 0.1), biases N(0, 0.1), free parameters (query,
image_positions) N(0, 0.5); inputs N(0, 1). Eager attention, eval mode (no dropout), one thread,
fixed seeds: re-running gives byte-identical files.

Usage: /work/main/.venv-ref/bin/python tools/qformer/make_cases.py
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

import transformers  # noqa: E402
from transformers import Blip2QFormerConfig, Blip2QFormerModel, Granite4VisionConfig  # noqa: E402
from transformers.models.granite4_vision.modeling_granite4_vision import (  # noqa: E402
    Granite4VisionWindowQFormerDownsampler,
)

transformers.logging.set_verbosity_error()

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-fixtures" / "qformer"
SIZE_LIMIT = 2 * 1024 * 1024


@torch.no_grad()
def init_nondegenerate(module: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for name, p in sorted(module.named_parameters()):
        leaf = name.rsplit(".", 1)[-1]
        owner = module.get_submodule(name.rsplit(".", 1)[0]) if "." in name else module
        if isinstance(owner, torch.nn.LayerNorm):
            base = 1.0 if leaf == "weight" else 0.0
            p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
        elif isinstance(owner, torch.nn.Linear) and leaf == "weight":
            p.copy_(torch.randn(p.shape, generator=g) * (1.5 / math.sqrt(p.shape[1])))
        elif leaf == "bias":
            p.copy_(0.1 * torch.randn(p.shape, generator=g))
        else:  # query, image_positions
            p.copy_(0.5 * torch.randn(p.shape, generator=g))


def state_dict_f32(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to(torch.float32).contiguous() for k, v in sorted(module.state_dict().items())}


def write_case(name: str, config: dict, params: dict, inputs: dict, expected: dict, notes: str) -> dict:
    d = OUT / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file(params, str(d / "model.safetensors"))
    save_file({k: v.contiguous() for k, v in inputs.items()}, str(d / "inputs.safetensors"))
    save_file({k: v.contiguous() for k, v in expected.items()}, str(d / "expected.safetensors"))
    return {"name": name, "notes": notes, "params": params, "inputs": inputs, "expected": expected}


QFORMER_FIELDS = [
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "layer_norm_eps",
    "cross_attention_frequency",
    "encoder_hidden_size",
    "use_qformer_text_input",
]


def qformer_dict(cfg: Blip2QFormerConfig) -> dict:
    return {"model_type": "blip_2_qformer", **{k: getattr(cfg, k) for k in QFORMER_FIELDS}}


@torch.no_grad()
def case_qformer() -> dict:
    cfg = Blip2QFormerConfig(
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=48,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        cross_attention_frequency=2,
        encoder_hidden_size=24,
        use_qformer_text_input=False,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(100)
    model = Blip2QFormerModel(cfg).eval()
    init_nondegenerate(model, 101)
    g = torch.Generator().manual_seed(102)
    query_embeds = torch.randn(3, 5, 32, generator=g)
    encoder_hidden_states = torch.randn(3, 7, 24, generator=g)
    out = model(query_embeds=query_embeds, encoder_hidden_states=encoder_hidden_states, return_dict=True)
    return write_case(
        "qformer",
        qformer_dict(cfg),
        state_dict_f32(model),
        {"query_embeds": query_embeds, "encoder_hidden_states": encoder_hidden_states},
        {"last_hidden_state": out.last_hidden_state.float()},
        "Blip2QFormerModel(query_embeds, encoder_hidden_states).last_hidden_state; 3 layers, cross-attention "
        "in layers 0 and 2 (cross_attention_frequency 2), encoder_hidden_size 24, hidden 32, 4 heads.",
    )


def granite_config(side: int, patch: int, dv: int, d: int, rate: str, heads: int, inter: int) -> Granite4VisionConfig:
    qf = dict(
        hidden_size=dv,
        num_hidden_layers=1,
        num_attention_heads=heads,
        intermediate_size=inter,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        cross_attention_frequency=1,
        encoder_hidden_size=dv,
        use_qformer_text_input=False,
        model_type="blip_2_qformer",
    )
    cfg = Granite4VisionConfig(
        vision_config=dict(
            model_type="siglip_vision_model",
            hidden_size=dv,
            image_size=side * patch,
            patch_size=patch,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=2 * dv,
        ),
        text_config=dict(model_type="granite4_vision_text", hidden_size=d, num_hidden_layers=1, num_attention_heads=2),
        downsample_rate=rate,
        qformer_config=qf,
        projector_dropout=0.1,
    )
    cfg.qformer_config._attn_implementation = "eager"
    return cfg


def granite_dict(cfg: Granite4VisionConfig) -> dict:
    v = cfg.vision_config
    return {
        "model_type": "granite4_vision",
        "downsample_rate": cfg.downsample_rate,
        "projector_dropout": cfg.projector_dropout,
        "vision_config": {"hidden_size": v.hidden_size, "image_size": v.image_size, "patch_size": v.patch_size},
        "text_config": {"hidden_size": cfg.text_config.hidden_size},
        "qformer_config": qformer_dict(cfg.qformer_config),
    }


@torch.no_grad()
def case_window(name: str, side: int, dv: int, d: int, rate: str, heads: int, inter: int, tiles: int, spatial: bool, seed: int) -> dict:
    cfg = granite_config(side, 4, dv, d, rate, heads, inter)
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(tiles, side * side, dv, generator=g)
    params: dict[str, torch.Tensor] = {}
    expected: dict[str, torch.Tensor] = {}
    modules = [("layerwise_projectors.0", "layerwise_projector_0", None)]
    if spatial:
        modules += [(f"spatial_projectors.{k}", f"spatial_projector_{k}", k) for k in range(4)]
    for i, (prefix, out_name, offset) in enumerate(modules):
        torch.manual_seed(seed + 1 + i)
        m = Granite4VisionWindowQFormerDownsampler(cfg, spatial_offset=offset).eval()
        init_nondegenerate(m, seed + 11 + i)
        for k, v in state_dict_f32(m).items():
            params[f"{prefix}.{k}"] = v
        expected[out_name] = m(features).float()
    q, w = (int(x) for x in rate.split("/"))
    n = side // w
    notes = (
        f"Granite4VisionWindowQFormerDownsampler on features [{tiles}, {side}*{side}, {dv}] (image side {side} "
        f"patches), downsample_rate '{rate}': {n}x{n} windows of {w}x{w} keys and {q}x{q} queries per tile -> "
        f"[{tiles}, {(n * q) ** 2}, {d}]. layerwise_projector_0 = area interpolation"
        + ("; spatial_projector_k = corner k of each 2x2 block (TL, TR, BL, BR)." if spatial else "; no spatial projectors.")
    )
    return write_case(name, granite_dict(cfg), params, {"features": features}, expected, notes)


def describe(t: torch.Tensor) -> str:
    return f"{str(t.dtype).replace('torch.', '')} {list(t.shape)}"


def write_readme(cases: list[dict]) -> None:
    lines = [
        "# test-fixtures/qformer",
        "",
        "**Generated** by `tools/qformer/make_cases.py` (HF transformers 5.17.0, torch 2.13.0 CPU). Do not edit by",
        "hand: change the script and re-run it. Deterministic (fixed seeds, one thread, eager attention, eval mode).",
        "",
        "Each case directory: `config.json` (HF field names), `model.safetensors` (parameters under the HF",
        "module names: Q-Former `layernorm.*`, `encoder.layer.{i}.*`; downsamplers prefixed",
        "`layerwise_projectors.0.` / `spatial_projectors.{k}.` as in a Granite checkpoint), `inputs.safetensors`,",
        "`expected.safetensors`. Weights: Linear N(0, 1.5/sqrt(fan_in)), norm weights 1 + N(0, 0.1), biases",
        "N(0, 0.1), `query` / `image_positions` N(0, 0.5); inputs N(0, 1).",
        "",
    ]
    for c in cases:
        size = sum((OUT / c["name"] / f).stat().st_size for f in ("model.safetensors", "inputs.safetensors", "expected.safetensors"))
        lines += [f"## `{c['name']}`", "", c["notes"], "", f"{size} bytes.", "", "| file | tensor | dtype, shape |", "|---|---|---|"]
        for k, v in c["inputs"].items():
            lines.append(f"| inputs | `{k}` | {describe(v)} |")
        for k, v in c["expected"].items():
            lines.append(f"| expected | `{k}` | {describe(v)} |")
        lines += ["", f"{len(c['params'])} parameters, e.g. `{sorted(c['params'])[0]}`.", ""]
    (OUT / "README.md").write_text("\n".join(lines))


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    cases = [
        case_qformer(),
        case_window("window-2-4", side=12, dv=32, d=48, rate="2/4", heads=2, inter=64, tiles=3, spatial=True, seed=200),
        case_window("window-4-8", side=16, dv=16, d=24, rate="4/8", heads=2, inter=32, tiles=2, spatial=True, seed=300),
        case_window("area-2-3", side=6, dv=16, d=24, rate="2/3", heads=4, inter=32, tiles=2, spatial=False, seed=400),
    ]
    write_readme(cases)
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    assert total < SIZE_LIMIT, f"test-fixtures/qformer is {total} bytes (limit {SIZE_LIMIT})"
    for c in cases:
        for k, v in c["expected"].items():
            print(f"{c['name']}/{k}: {describe(v)} max|x| {v.abs().max().item():.4g} std {v.std().item():.4g}")
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
