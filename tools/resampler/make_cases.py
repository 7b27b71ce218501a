#!/usr/bin/env python3
"""Reference cases for @vlmkit/resampler that the main fixtures do not cover.

The ERNIE fixtures run images and videos through the resampler in separate
calls (HF's get_image_features / get_video_features). This script runs HF
5.17's Ernie4_5_VLMoeVariableResolutionResamplerModel, with the ernie-tiny
weights, on one call that mixes images and videos, and checks on the way that
vLLM's slicing (VariableResolutionResamplerModel.fwd_placeholder: the even and
odd frame offsets built in two separate loops, no zip) selects the same rows
as HF's _temporal_slicing for these grids.

Writes test-fixtures/resampler/cases/mixed/{inputs,expected}.safetensors and
case.json. Deterministic (fixed seed, one thread); run it twice, same bytes.

Usage: .venv-ref/bin/python tools/resampler/make_cases.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

import transformers  # noqa: E402
from transformers import Ernie4_5_VLMoeForConditionalGeneration  # noqa: E402

transformers.logging.set_verbosity_error()

REPO = Path(__file__).resolve().parents[2]
CKPT = REPO / "test-fixtures" / "ernie-tiny"
OUT = REPO / "test-fixtures" / "resampler" / "cases"
SEED = 7001

# image, video, image, 2-frame video, 8-frame video, image: videos between images,
# a video whose frames are 1x2 merged tokens, and the two image orientations.
MIXED_GRIDS = [[1, 4, 6], [4, 4, 4], [1, 2, 2], [2, 2, 4], [8, 2, 4], [1, 6, 4]]


def vllm_slice_offsets(grid_thw: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Our transcription of vLLM's fwd_placeholder offset arithmetic (two loops, first then second)."""
    per_item = grid_thw.prod(-1) // (s * s)
    starts = np.concatenate([[0], np.cumsum(per_item)[:-1]])
    first, second = [], []
    for (t, h, w), b in zip(grid_thw, starts):
        n = h * w // (s * s)
        first += [np.arange(b + f * n, b + (f + 1) * n) for f in range(0, t, 2)]
    for (t, h, w), b in zip(grid_thw, starts):
        n = h * w // (s * s)
        second += [np.arange(b + f * n, b + (f + 1) * n) for f in range(1 if t > 1 else 0, t, 2)]
    return np.concatenate(first), np.concatenate(second)


def resampler_weights_sha256() -> str:
    """sha256 over the resampler's tensors in the checkpoint (sorted hub names, raw bytes): the test
    compares it to catch a regenerated ernie-tiny whose weights this case no longer matches."""
    from safetensors import safe_open

    h = hashlib.sha256()
    with safe_open(str(CKPT / "model.safetensors"), "pt") as f:
        for name in sorted(k for k in f.keys() if k.startswith("model.resampler_model.")):
            h.update(name.encode())
            h.update(f.get_tensor(name).contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def main() -> None:
    model = Ernie4_5_VLMoeForConditionalGeneration.from_pretrained(str(CKPT), dtype=torch.float32).eval()
    resampler = model.model.resampler_model
    dv = model.config.vision_config.hidden_size
    s = model.config.vision_config.spatial_merge_size

    grid = torch.tensor(MIXED_GRIDS, dtype=torch.long)
    num_patches = int(grid.prod(-1).sum())
    gen = torch.Generator().manual_seed(SEED)
    hidden = torch.randn(num_patches, dv, generator=gen)

    with torch.no_grad():
        embeds = resampler(hidden, grid)
        # HF's slicing vs vLLM's, on the spatially merged tokens.
        merged = resampler.spatial_linear(hidden.reshape(-1, dv * s * s))
        hf_pairs = resampler._temporal_slicing(merged, grid)
        first, second = vllm_slice_offsets(grid.numpy(), s)
        vllm_pairs = torch.cat([merged[torch.from_numpy(first)], merged[torch.from_numpy(second)]], dim=-1)
        assert torch.equal(hf_pairs, vllm_pairs), "HF and vLLM temporal slicing disagree"

    tokens = [int(t if t == 1 else t // 2) * int(h * w // (s * s)) for t, h, w in MIXED_GRIDS]
    assert embeds.shape[0] == sum(tokens)

    case = OUT / "mixed"
    case.mkdir(parents=True, exist_ok=True)
    save_file({"vision_hidden": hidden.contiguous(), "grid_thw": grid.contiguous()}, str(case / "inputs.safetensors"))
    save_file({"embeds": embeds.contiguous()}, str(case / "expected.safetensors"))
    meta = {
        "checkpoint": "ernie-tiny",
        "generator": "tools/resampler/make_cases.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "seed": SEED,
        "resampler_weights_sha256": resampler_weights_sha256(),
        "notes": "One resampler call over images and videos mixed (HF Ernie4_5_VLMoeVariableResolutionResamplerModel, "
        "float32). vision_hidden ~ N(0, 1) stands in for the tower output. HF and vLLM slicing checked equal.",
        "grid_thw": MIXED_GRIDS,
        "tokens_per_item": tokens,
        "inputs": {"vision_hidden": list(hidden.shape), "grid_thw": list(grid.shape)},
        "expected": {"embeds": list(embeds.shape)},
    }
    (case / "case.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {case}: {num_patches} patches -> {embeds.shape[0]} tokens")


if __name__ == "__main__":
    main()
