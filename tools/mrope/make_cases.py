"""Generate @vlmkit/mrope reference fixtures from HF transformers 5.17.

Run from the repo root with the reference env:

    .venv-ref/bin/python tools/mrope/make_cases.py

Writes test-fixtures/mrope/*.json. No weights are needed: `get_rope_index` is
called unbound on a lightweight object that carries only `config` and the
model class's own `get_vision_position_ids`, and the rotary modules are built
from minimal configs.
"""

from __future__ import annotations

import json
import random
import types
from pathlib import Path

import torch
import transformers
from transformers.models.ernie4_5_vl_moe import modeling_ernie4_5_vl_moe as ernie
from transformers.models.ernie4_5_vl_moe.configuration_ernie4_5_vl_moe import (
    Ernie4_5_VLMoeTextConfig,
    Ernie4_5_VLMoeVisionConfig,
)
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qwen25
from transformers.models.qwen2_vl import modeling_qwen2_vl as qwen2
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
from transformers.models.qwen3_vl import modeling_qwen3_vl as qwen3
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
from transformers.vision_utils import get_vision_position_ids

OUT = Path(__file__).resolve().parents[2] / "test-fixtures" / "mrope"

ERNIE_TOKENS = dict(image=100295, video=103367, image_start=101304, image_end=101305,
                    video_start=101306, video_end=101307)
QWEN_TOKENS = dict(image=151655, video=151656, vision_start=151652, vision_end=151653)


def fake_model(cls, vision_config: dict):
    """An object with just what `cls.get_rope_index` reads: config.vision_config
    and the bound `get_vision_position_ids`."""
    obj = types.SimpleNamespace()
    obj.config = types.SimpleNamespace(vision_config=types.SimpleNamespace(**vision_config))
    obj.get_vision_position_ids = types.MethodType(cls.get_vision_position_ids, obj)
    return obj


def text(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(10, 1000) for _ in range(n)]


def pad_batch(rows: list[list[int]], types_: list[list[int]], pad_to_extra: list[int]):
    """Left-pad rows to a common length (plus per-row extra padding)."""
    length = max(len(r) + e for r, e in zip(rows, pad_to_extra))
    ids, mask, tt = [], [], []
    for r, t in zip(rows, types_):
        p = length - len(r)
        ids.append([0] * p + r)
        mask.append([0] * p + [1] * len(r))
        tt.append([0] * p + t)
    return ids, mask, tt


# ---------------------------------------------------------------- ERNIE ----

def ernie_row(rng, images, videos, merge=2, tmerge=2):
    """One ERNIE row: text, then items (image/video) wrapped in start/end."""
    ids, tt = [], []
    n_items = rng.randint(1, 3)
    for _ in range(n_items):
        t = text(rng, rng.randint(1, 6))
        ids += t
        tt += [0] * len(t)
        if rng.random() < 0.5:
            g = [1, 2 * rng.randint(1, 4), 2 * rng.randint(1, 4)]
            images.append(g)
            n = g[0] * g[1] * g[2] // (merge * merge)
            ids += [ERNIE_TOKENS["image_start"]] + [ERNIE_TOKENS["image"]] * n + [ERNIE_TOKENS["image_end"]]
            tt += [0] + [1] * n + [0]
        else:
            # t' can exceed max(h', w'): where vLLM and HF differ.
            g = [tmerge * rng.randint(1, 4), 2 * rng.randint(1, 3), 2 * rng.randint(1, 3)]
            videos.append(g)
            n = g[0] * g[1] * g[2] // (merge * merge * tmerge)
            ids += [ERNIE_TOKENS["video_start"]] + [ERNIE_TOKENS["video"]] * n + [ERNIE_TOKENS["video_end"]]
            tt += [0] + [2] * n + [0]
    t = text(rng, rng.randint(0, 5))
    ids += t
    tt += [0] * len(t)
    return ids, tt


def qwen_row(rng, images, videos, seconds, kind: str, merge=2):
    ids, tt = [], []
    for _ in range(rng.randint(1, 3)):
        t = text(rng, rng.randint(1, 6))
        ids += t
        tt += [0] * len(t)
        if rng.random() < 0.5:
            g = [1, 2 * rng.randint(1, 4), 2 * rng.randint(1, 4)]
            images.append(g)
            n = g[0] * g[1] * g[2] // (merge * merge)
            ids += [QWEN_TOKENS["vision_start"]] + [QWEN_TOKENS["image"]] * n + [QWEN_TOKENS["vision_end"]]
            tt += [0] + [1] * n + [0]
        else:
            # Qwen video grid t is already temporally merged (frames / temporal_patch_size).
            g = [rng.randint(1, 5), 2 * rng.randint(1, 2), 2 * rng.randint(1, 3)]
            videos.append(g)
            seconds.append(rng.choice([1.0, 2.0, 0.5, 1.5]))
            per_frame = g[1] * g[2] // (merge * merge)
            if kind == "qwen3":
                # Qwen3-VL: '<t> seconds' text, then each frame wrapped in vision start/end.
                for _f in range(g[0]):
                    ts = text(rng, 2)
                    ids += ts + [QWEN_TOKENS["vision_start"]] + [QWEN_TOKENS["video"]] * per_frame
                    ids += [QWEN_TOKENS["vision_end"]]
                    tt += [0, 0, 0] + [2] * per_frame + [0]
            else:
                n = g[0] * per_frame
                ids += [QWEN_TOKENS["vision_start"]] + [QWEN_TOKENS["video"]] * n + [QWEN_TOKENS["vision_end"]]
                tt += [0] + [2] * n + [0]
    t = text(rng, rng.randint(0, 5))
    ids += t
    tt += [0] * len(t)
    return ids, tt


def make_rope_index_cases(kind: str, n_cases: int, seed: int):
    rng = random.Random(seed)
    cases = []
    for ci in range(n_cases):
        batch = rng.randint(2, 3)
        rows, tts, images, videos, seconds = [], [], [], [], []
        for _ in range(batch):
            if kind == "ernie":
                r, t = ernie_row(rng, images, videos)
            else:
                r, t = qwen_row(rng, images, videos, seconds, kind)
            rows.append(r)
            tts.append(t)
        extra = [rng.randint(0, 3) for _ in range(batch)]
        ids, mask, tt = pad_batch(rows, tts, extra)
        input_ids = torch.tensor(ids, dtype=torch.long)
        attention_mask = torch.tensor(mask, dtype=torch.long)
        mm = torch.tensor(tt, dtype=torch.int)
        img = torch.tensor(images, dtype=torch.long) if images else None
        vid = torch.tensor(videos, dtype=torch.long) if videos else None
        kwargs = dict(image_grid_thw=img, video_grid_thw=vid, attention_mask=attention_mask)
        if kind == "ernie":
            m = fake_model(ernie.Ernie4_5_VLMoeModel, dict(spatial_merge_size=2, temporal_merge_size=2))
            pos, deltas = ernie.Ernie4_5_VLMoeModel.get_rope_index(m, input_ids, mm, **kwargs)
        elif kind == "qwen2":
            m = fake_model(qwen2.Qwen2VLModel, dict(spatial_merge_size=2))
            pos, deltas = qwen2.Qwen2VLModel.get_rope_index(m, input_ids, mm, **kwargs)
        elif kind == "qwen25":
            m = fake_model(qwen25.Qwen2_5_VLModel, dict(spatial_merge_size=2, tokens_per_second=2))
            spg = torch.tensor(seconds, dtype=torch.float) if seconds else None
            pos, deltas = qwen25.Qwen2_5_VLModel.get_rope_index(
                m, input_ids, mm, second_per_grid_ts=spg, **kwargs)
        elif kind == "qwen3":
            m = fake_model(qwen3.Qwen3VLModel, dict(spatial_merge_size=2))
            # get_rope_index edits video_grid_thw in place (t := 1): pass a copy.
            kwargs["video_grid_thw"] = vid.clone() if vid is not None else None
            pos, deltas = qwen3.Qwen3VLModel.get_rope_index(m, input_ids, mm, **kwargs)
        case = dict(
            name=f"{kind}-{ci}",
            input_ids=ids,
            attention_mask=mask,
            mm_token_type_ids=tt,
            image_grid_thw=images,
            video_grid_thw=videos,
            position_ids=pos.tolist(),
            deltas=deltas.flatten().tolist(),
        )
        if kind == "qwen25":
            case["second_per_grid_ts"] = seconds
            case["tokens_per_second"] = 2
        cases.append(case)
    return cases


# ---------------------------------------------------------- rotary tables ----

def f32(t: torch.Tensor) -> list:
    return [float(x) for x in t.flatten().tolist()]


def ernie_text_rotary():
    cfg = Ernie4_5_VLMoeTextConfig(hidden_size=256, num_attention_heads=2, num_key_value_heads=1,
                                   num_hidden_layers=1)
    cfg.rope_parameters = {"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [22, 22, 20]}
    rot = ernie.Ernie4_5_VLMoeTextRotaryEmbedding(cfg)
    rng = random.Random(7)
    s = 12
    t = [rng.randrange(0, 400) for _ in range(s)]
    h = [x + rng.randrange(0, 9) for x in t]
    w = [x + rng.randrange(0, 9) for x in t]
    pos = torch.tensor([[t], [h], [w]], dtype=torch.long)  # [3, 1, S]
    cos, sin = rot(torch.zeros(1, dtype=torch.float), pos)  # [1, S, 128], pairs repeated
    return dict(head_dim=128, rope_theta=500000.0, freq_allocation=20, position_ids=pos.tolist(),
                inv_freq_hf_permuted=f32(rot.inv_freq), cos=f32(cos), sin=f32(sin), shape=list(cos.shape))


def qwen_text_rotary(kind: str):
    if kind == "qwen2":
        cfg = Qwen2VLTextConfig(hidden_size=256, num_attention_heads=2, num_key_value_heads=1, num_hidden_layers=1)
        cfg.rope_parameters = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]}
        rot = qwen2.Qwen2VLRotaryEmbedding(cfg)
        section = [16, 24, 24]
        theta = 1000000.0
    else:
        cfg = Qwen3VLTextConfig(hidden_size=256, num_attention_heads=2, num_key_value_heads=1,
                                num_hidden_layers=1, head_dim=128)
        cfg.rope_parameters = {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [24, 20, 20],
                               "mrope_interleaved": True}
        rot = qwen3.Qwen3VLTextRotaryEmbedding(cfg)
        section = [24, 20, 20]
        theta = 5000000.0
    rng = random.Random(11)
    b, s = 2, 9
    pos = torch.tensor([[[rng.randrange(0, 300) for _ in range(s)] for _ in range(b)] for _ in range(3)])
    cos, sin = rot(torch.zeros(1, dtype=torch.float), pos)  # [B, S, 128], halves repeated
    return dict(head_dim=128, rope_theta=theta, mrope_section=section, position_ids=pos.tolist(),
                inv_freq=f32(rot.inv_freq), cos=f32(cos), sin=f32(sin), shape=list(cos.shape))


def vision_rotary():
    cfg = Ernie4_5_VLMoeVisionConfig(hidden_size=160, num_heads=2, depth=1)  # head_dim 80, as the real 1280/16
    rot = ernie.Ernie4_5_VLMoeVisionRotaryEmbedding(cfg)
    grids = [[1, 4, 6], [2, 2, 4], [1, 6, 2]]
    g = torch.tensor(grids)
    ids = get_vision_position_ids(g, 2)  # [N, 2]
    cos, sin = rot(torch.zeros(1), ids)  # [N, 80]
    # The same ids through Qwen2-VL's vision rotary (identical scheme, head_dim 80).
    qcfg = transformers.Qwen2VLConfig().vision_config
    qcfg.embed_dim, qcfg.num_heads = 160, 2
    qrot = qwen2.Qwen2VLVisionRotaryEmbedding(qcfg)
    qcos, _ = qrot(torch.zeros(1), ids)
    assert torch.equal(qcos, cos), "Qwen2-VL vision rotary differs from ERNIE's"
    return dict(head_dim=80, theta=10000.0, spatial_merge_size=2, grid_thw=grids, position_ids=ids.tolist(),
                inv_freq=f32(rot.inv_freq), cos=f32(cos), sin=f32(sin), shape=list(cos.shape))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    meta = dict(generator="tools/mrope/make_cases.py", transformers=transformers.__version__,
                torch=torch.__version__)
    files = {
        "ernie_rope_index.json": dict(meta=meta, spatial_merge_size=2, temporal_merge_size=2,
                                      tokens=ERNIE_TOKENS, cases=make_rope_index_cases("ernie", 8, 1)),
        "qwen2_vl_rope_index.json": dict(meta=meta, spatial_merge_size=2, tokens=QWEN_TOKENS,
                                         cases=make_rope_index_cases("qwen2", 5, 2)),
        "qwen2_5_vl_rope_index.json": dict(meta=meta, spatial_merge_size=2, tokens=QWEN_TOKENS,
                                           cases=make_rope_index_cases("qwen25", 5, 3)),
        "qwen3_vl_rope_index.json": dict(meta=meta, spatial_merge_size=2, tokens=QWEN_TOKENS,
                                         cases=make_rope_index_cases("qwen3", 5, 4)),
        "rotary_tables.json": dict(meta=meta, ernie_text=ernie_text_rotary(), qwen2_text=qwen_text_rotary("qwen2"),
                                   qwen3_text=qwen_text_rotary("qwen3"), vision=vision_rotary()),
    }
    total = 0
    for name, data in files.items():
        text_ = json.dumps(data, separators=(",", ":"))
        (OUT / name).write_text(text_ + "\n")
        total += len(text_)
        print(f"{name}: {len(text_)} bytes")
    print(f"total {total} bytes")
    assert total < 1_000_000


if __name__ == "__main__":
    main()
