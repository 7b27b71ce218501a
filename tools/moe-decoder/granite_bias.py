#!/usr/bin/env python3
"""Reference numbers for @vlmkit/moe-decoder's Granite paths the granite-tiny
fixture does not reach: attention_bias, mlp_bias and an untied lm_head.

Builds a random 3-layer HF transformers 5.17 Granite4VisionTextModel (D 32,
4 q / 2 kv heads of 8, intermediate 48, vocab 40, biases on, GQA) and runs a
left-padded batch of 2 with 4 image rows and two deepstack levels (LLM
layers 2 and 0) exactly as Granite4VisionModel.forward feeds it: token
embeddings with the image rows zeroed (masked_fill), vision_mask and
deepstack_features; logits = lm_head(h) / logits_scaling as
Granite4VisionForConditionalGeneration does. position_ids are HF generate's
(cumsum(mask) - 1, 0 on padding).

Writes test-fixtures/moe-decoder/granite-text-bias/:
  config.json           the text config (HF fields)
  weights.safetensors   parameters under the decoder's names (q/k/v packed
                        into qkv_proj, gate/up into gate_up_proj, as
                        @vlmkit/weight-mapper's mapGranite4Vision emits them)
  case.safetensors      input_ids, attention_mask, position_ids,
                        image_positions (flattened b*S+s), deepstack_0/1,
                        logits, hidden_layer_{i}
Deterministic (seeded, 1 thread, eager attention).

Usage: .venv-ref/bin/python tools/moe-decoder/granite_bias.py
"""

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

from transformers.models.granite4_vision.configuration_granite4_vision import Granite4VisionTextConfig  # noqa: E402
from transformers.models.granite4_vision.modeling_granite4_vision import Granite4VisionTextModel  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-fixtures" / "moe-decoder" / "granite-text-bias"
LEVELS = [2, 0]  # level k -> LLM layer

TEXT = dict(
    model_type="granite4_vision_text", hidden_size=32, intermediate_size=48, num_hidden_layers=3,
    num_attention_heads=4, num_key_value_heads=2, vocab_size=40, rms_norm_eps=1e-5,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attention_bias=True, mlp_bias=True,
    embedding_multiplier=3.0, attention_multiplier=0.3, residual_multiplier=0.5, logits_scaling=2.0,
    tie_word_embeddings=False, pad_token_id=0,
)


@torch.no_grad()
def main() -> None:
    torch.manual_seed(1234)
    cfg = Granite4VisionTextConfig(**TEXT)
    cfg._attn_implementation = "eager"
    model = Granite4VisionTextModel(cfg).eval()
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            p.copy_(1 + 0.1 * torch.randn_like(p))
        elif p.ndim == 1:
            p.copy_(0.1 * torch.randn_like(p))
        elif name == "embed_tokens.weight":
            p.copy_(0.35 * torch.randn_like(p))
        else:
            p.copy_(torch.randn_like(p) * 1.5 / p.shape[1] ** 0.5)
    lm_head = torch.randn(cfg.vocab_size, cfg.hidden_size) * 1.5 / cfg.hidden_size**0.5

    B, S, D = 2, 6, cfg.hidden_size
    ids = torch.tensor([[0, 0, 5, 39, 39, 4], [6, 39, 39, 7, 3, 8]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    vision = ids == 39
    feats = [torch.randn(int(vision.sum()), D) for _ in LEVELS]
    embeds = model.embed_tokens(ids).masked_fill(vision.unsqueeze(-1), 0.0)
    hidden = {}
    hooks = [layer.register_forward_hook(lambda m, a, o, i=i: hidden.__setitem__(i, o[0] if isinstance(o, tuple) else o)) for i, layer in enumerate(model.layers)]
    out = model(
        inputs_embeds=embeds, attention_mask=mask, position_ids=pos, vision_mask=vision.unsqueeze(-1),
        deepstack_features={layer: f for layer, f in zip(LEVELS, feats)},
    )
    for h in hooks:
        h.remove()
    logits = out.last_hidden_state @ lm_head.T / cfg.logits_scaling

    OUT.mkdir(parents=True, exist_ok=True)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    w = {"embed_tokens.weight": sd["embed_tokens.weight"], "norm.weight": sd["norm.weight"], "lm_head.weight": lm_head}
    for i in range(cfg.num_hidden_layers):
        p = f"layers.{i}."
        for n in ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.o_proj.weight", "self_attn.o_proj.bias", "mlp.down_proj.weight", "mlp.down_proj.bias"):
            w[p + n] = sd[p + n]
        for kind in ("weight", "bias"):
            w[f"{p}self_attn.qkv_proj.{kind}"] = torch.cat([sd[f"{p}self_attn.{x}_proj.{kind}"] for x in "qkv"])
            w[f"{p}mlp.gate_up_proj.{kind}"] = torch.cat([sd[f"{p}mlp.{x}_proj.{kind}"] for x in ("gate", "up")])
    save_file({k: v.contiguous() for k, v in sorted(w.items())}, str(OUT / "weights.safetensors"))
    case = {
        "input_ids": ids, "attention_mask": mask, "position_ids": pos,
        "image_positions": vision.flatten().nonzero().flatten(),
        **{f"deepstack_{k}": f for k, f in enumerate(feats)},
        "logits": logits.float(),
        **{f"hidden_layer_{i}": h for i, h in hidden.items()},
    }
    save_file({k: v.contiguous() for k, v in case.items()}, str(OUT / "case.safetensors"))
    (OUT / "config.json").write_text(json.dumps({"text_config": TEXT, "levels": LEVELS}, indent=2) + "\n")
    print(f"wrote {OUT}: logits max |x| {logits.abs().max():.3f}")


if __name__ == "__main__":
    main()
