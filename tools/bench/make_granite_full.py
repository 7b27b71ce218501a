"""Random-weight granite-4.0-3b-vision at its published config, bf16, sharded safetensors + index.

    .venv-ref/bin/python tools/bench/make_granite_full.py OUT_DIR [--layers 40] [--shard-gb 2] [--seed 1234]

The model is never instantiated with data: HF's module tree is built on the meta device only to list every
state_dict name, shape and owning module; each tensor is then drawn on its own (float32 normal, rounded to
bf16) and written shard by shard, so memory stays near one shard (2 GB by default), whatever the layer count.
Init rules follow tools/fixtures (init_weights_nondegenerate), so greedy output is not degenerate: linear /
conv N(0, 1.5/sqrt(fan_in)), norm weights 1 + N(0, 0.1), biases N(0, 0.1), embeddings N(0, 0.2) (tied
lm_head: embedding_multiplier 12 x 0.2 keeps it from echoing the input), free parameters N(0, 0.5).
--layers N keeps the published config but N text layers; below 22 (the published spatial targets reach layer
21) the four deepstack levels go to layers 3, 2, 1, 0 and the spatial ones to 4..7 (N >= 8). Writes config.json, generation_config.json, model-0000i-of-0000n.safetensors,
model.safetensors.index.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import Granite4VisionConfig, Granite4VisionForConditionalGeneration

IMAGE_TOKEN = 100352


def published_config(layers: int) -> Granite4VisionConfig:
    """granite-4.0-3b-vision as published (see /work/shared/MODEL_NOTES.md, packages/models/src/published-configs.ts)."""
    vision = dict(
        model_type="siglip_vision_model",
        hidden_size=1152,
        intermediate_size=4304,
        num_hidden_layers=27,
        num_attention_heads=16,
        num_channels=3,
        image_size=384,
        patch_size=16,
        hidden_act="gelu_pytorch_tanh",
        layer_norm_eps=1e-6,
        vision_use_head=False,
    )
    text = dict(
        model_type="granite4_vision_text",
        vocab_size=100353,
        hidden_size=2560,
        intermediate_size=8192,
        num_hidden_layers=layers,
        num_attention_heads=40,
        num_key_value_heads=8,
        hidden_act="silu",
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0},
        attention_bias=False,
        mlp_bias=False,
        embedding_multiplier=12.0,
        attention_multiplier=0.015625,
        residual_multiplier=0.22,
        logits_scaling=10.0,
        tie_word_embeddings=True,
        pad_token_id=100256,
        bos_token_id=100257,
        eos_token_id=100257,
    )
    qformer = dict(
        model_type="blip_2_qformer",
        hidden_size=1152,
        num_hidden_layers=1,
        num_attention_heads=18,
        intermediate_size=3072,
        hidden_act="gelu",
        cross_attention_frequency=1,
        encoder_hidden_size=1152,
        layer_norm_eps=1e-12,
        use_qformer_text_input=False,
    )
    full = layers >= 22
    side = [384 * i for i in range(1, 4)]
    pinpoints = [[h, w] for h in side for w in side]
    return Granite4VisionConfig(
        vision_config=vision,
        text_config=text,
        qformer_config=qformer,
        image_token_index=IMAGE_TOKEN,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        tie_word_embeddings=True,
        image_grid_pinpoints=pinpoints,
        downsample_rate="4/8",
        deepstack_layer_map=[[-19, 9], [-13, 6], [-7, 3], [-1, 0]] if full else [[-19, 3], [-13, 2], [-7, 1], [-1, 0]],
        spatial_vision_layer=-1,
        spatial_target_layers=[12, 15, 18, 21] if full else [4, 5, 6, 7],
    )


def is_norm(module: torch.nn.Module) -> bool:
    name = type(module).__name__.lower()
    return isinstance(module, torch.nn.LayerNorm) or "norm" in name


def draw(shape: torch.Size, std: float, mean: float, gen: torch.Generator) -> torch.Tensor:
    t = torch.empty(shape, dtype=torch.float32)
    t.normal_(mean, std, generator=gen)
    return t.to(torch.bfloat16)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--layers", type=int, default=40)
    ap.add_argument("--shard-gb", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    if a.layers < 8:
        print("--layers must be >= 8 (four deepstack and four spatial target layers)", file=sys.stderr)
        return 2
    cfg = published_config(a.layers)
    with torch.device("meta"):
        model = Granite4VisionForConditionalGeneration(cfg)
    owners: dict[str, torch.nn.Module] = {}
    for mname, module in model.named_modules():
        for pname, _ in module.named_parameters(recurse=False):
            owners[f"{mname}.{pname}" if mname else pname] = module
    state = model.state_dict()
    tied = {"lm_head.weight"} if cfg.tie_word_embeddings else set()
    names = [n for n in state if n not in tied]
    a.out.mkdir(parents=True, exist_ok=True)
    for old in a.out.glob("model*.safetensors*"):
        old.unlink()
    gen = torch.Generator().manual_seed(a.seed)
    limit = int(a.shard_gb * 2**30)
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    total = 0
    t0 = time.time()
    files: list[str] = []
    weight_map: dict[str, str] = {}

    def flush(last: bool) -> None:
        nonlocal size
        if not shards[-1]:
            return
        i = len(files) + 1
        name = f"model-{i:05d}-of-NNNNN.safetensors"
        save_file(shards[-1], str(a.out / name), metadata={"format": "pt"})
        files.append(name)
        for k in shards[-1]:
            weight_map[k] = name
        shards[-1] = {}
        size = 0
        print(f"  shard {i}: {time.time() - t0:.0f} s", file=sys.stderr)

    for name in names:
        meta = state[name]
        module = owners.get(name)
        leaf = name.rsplit(".", 1)[-1]
        shape = meta.shape
        if module is not None and is_norm(module):
            t = draw(shape, 0.1, 1.0 if leaf == "weight" else 0.0, gen)
        elif isinstance(module, torch.nn.Embedding):
            t = draw(shape, 0.2, 0.0, gen)
        elif leaf == "bias" or len(shape) == 1:
            t = draw(shape, 0.1 if leaf == "bias" else 0.5, 0.0, gen)
        elif isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)) or leaf == "weight":
            t = draw(shape, 1.5 / math.sqrt(math.prod(shape[1:])), 0.0, gen)
        else:
            t = draw(shape, 0.5, 0.0, gen)
        nbytes = t.numel() * 2
        if size + nbytes > limit and shards[-1]:
            flush(False)
        shards[-1][name] = t
        size += nbytes
        total += t.numel()
    flush(True)
    n = len(files)
    final: dict[str, str] = {}
    for i, f in enumerate(files, 1):
        dst = f.replace("NNNNN", f"{n:05d}")
        (a.out / f).rename(a.out / dst)
        final[f] = dst
    index = {
        "metadata": {"total_size": total * 2, "total_parameters": total},
        "weight_map": {k: final[v] for k, v in sorted(weight_map.items())},
    }
    (a.out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    cfg.dtype = torch.bfloat16
    cfg.save_pretrained(str(a.out))
    gen_cfg = {"bos_token_id": 100257, "eos_token_id": 100257, "pad_token_id": 100256}
    (a.out / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2))
    print(f"{a.out}: {total / 1e9:.3f} B parameters, {n} shards, {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
