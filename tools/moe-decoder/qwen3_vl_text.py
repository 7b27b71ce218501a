#!/usr/bin/env python3
"""Reference numbers for @vlmkit/moe-decoder's Qwen3-VL text decoder, alone.

Builds random HF transformers 5.17 Qwen3VLTextModel (dense, attention_bias,
tied head) and Qwen3VLMoeTextModel (3 layers: sparse, dense via
mlp_only_layers, sparse; 4 experts, top-2; untied head) and runs one
left-padded batch of 2 as Qwen3VLModel.forward feeds them: token embeddings
with the vision rows replaced (masked_scatter), 3D position_ids [3, B, S],
visual_pos_masks and two deepstack levels; logits = lm_head(h).

Writes test-fixtures/moe-decoder/qwen3-vl-text-{dense,moe}/:
  config.json         the whole VL config (text_config, top-level tie_word_embeddings)
  model.safetensors   HF 5.17 names (model.language_model.*, lm_head.weight; the
                      experts fused: gate_up_proj [E, 2I, H], down_proj [E, H, I])
  case.safetensors    input_ids, attention_mask, position_ids, vision_positions
                      (flattened b*S+s), vision_embeds, deepstack_0/1, logits
Deterministic (seeded, 1 thread, eager attention and experts).

Usage: .venv-ref/bin/python tools/moe-decoder/qwen3_vl_text.py
"""

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig  # noqa: E402
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextModel  # noqa: E402
from transformers.models.qwen3_vl_moe.configuration_qwen3_vl_moe import Qwen3VLMoeTextConfig  # noqa: E402
from transformers.models.qwen3_vl_moe.modeling_qwen3_vl_moe import Qwen3VLMoeTextModel  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-fixtures" / "moe-decoder"
ROPE = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2], "mrope_interleaved": True}
COMMON = dict(
    hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=64,
    rms_norm_eps=1e-6, rope_parameters=ROPE, pad_token_id=0,
)
MODELS = {
    "dense": ("qwen3_vl", Qwen3VLTextConfig, Qwen3VLTextModel,
              dict(COMMON, num_hidden_layers=2, intermediate_size=48, attention_bias=True), True),
    "moe": ("qwen3_vl_moe", Qwen3VLMoeTextConfig, Qwen3VLMoeTextModel,
            dict(COMMON, num_hidden_layers=3, intermediate_size=40, moe_intermediate_size=24, num_experts=4,
                 num_experts_per_tok=2, mlp_only_layers=[1], decoder_sparse_step=1), False),
}
B, S, LEVELS = 2, 10, 2
# Row 0: vision rows 2..5; row 1 (2 left pads): vision rows 4..6.
VISION = [(0, s) for s in range(2, 6)] + [(1, s) for s in range(4, 7)]


def positions() -> torch.Tensor:
    """[3, B, S]: text positions count up, the vision rows get a t/h/w grid (as get_rope_index would)."""
    pos = torch.zeros(3, B, S, dtype=torch.int64)
    for b, pads in ((0, 0), (1, 2)):
        p, k = 0, 0
        for s in range(pads, S):
            if (b, s) in VISION:
                pos[:, b, s] = torch.tensor([p, p + k // 2, p + k % 2])
                k += 1
                if (b, s + 1) not in VISION:
                    p += 2
            else:
                pos[:, b, s] = p
                p += 1
    return pos


@torch.no_grad()
def make(tag: str) -> None:
    model_type, Config, Model, text, tie = MODELS[tag]
    torch.manual_seed(4321)
    cfg = Config(**text)
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    model = Model(cfg).eval()
    for name, p in model.named_parameters():
        # Norms near 1, everything else N(0, 0.2): outputs stay well scaled through the layers.
        p.copy_(1 + 0.1 * torch.randn(p.shape) if "norm" in name else 0.2 * torch.randn(p.shape))
    lm_head = model.embed_tokens.weight if tie else 0.2 * torch.randn(cfg.vocab_size, cfg.hidden_size)

    ids = torch.randint(3, cfg.vocab_size, (B, S))
    mask = torch.ones(B, S, dtype=torch.int64)
    mask[1, :2] = 0
    ids[1, :2] = 0
    vis = torch.zeros(B, S, dtype=torch.bool)
    for b, s in VISION:
        vis[b, s] = True
        ids[b, s] = 1  # the placeholder id
    n = len(VISION)
    vision_embeds = torch.randn(n, cfg.hidden_size)
    deepstack = [torch.randn(n, cfg.hidden_size) for _ in range(LEVELS)]
    embeds = model.embed_tokens(ids).masked_scatter(vis[..., None], vision_embeds)
    pos = positions()
    h = model(
        inputs_embeds=embeds, attention_mask=mask, position_ids=pos, visual_pos_masks=vis,
        deepstack_visual_embeds=deepstack, use_cache=False,
    ).last_hidden_state
    logits = h @ lm_head.T

    out = OUT / f"qwen3-vl-text-{tag}"
    out.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.language_model.{k}": v.contiguous() for k, v in model.state_dict().items()}
    if not tie:
        tensors["lm_head.weight"] = lm_head.contiguous()
    save_file(tensors, str(out / "model.safetensors"))
    config = {"model_type": model_type, "text_config": {**text, "model_type": f"{model_type}_text"}, "tie_word_embeddings": tie}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    rows = torch.tensor([b * S + s for b, s in VISION])
    case = {
        "input_ids": ids, "attention_mask": mask, "position_ids": pos, "vision_positions": rows,
        "vision_embeds": vision_embeds, **{f"deepstack_{k}": d for k, d in enumerate(deepstack)}, "logits": logits,
    }
    save_file({k: v.contiguous() for k, v in case.items()}, str(out / "case.safetensors"))
    print(f"{out}: logits max |x| {logits.abs().max():.3f}")


if __name__ == "__main__":
    for tag in MODELS:
        make(tag)
