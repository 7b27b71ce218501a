"""Qwen3-VL configs of `pnpm bench --qwen3vl` (issue 20): checkpoints and prompts; torch_side.py imports it.

  qwen3vl-2b   Qwen/Qwen3-VL-2B-Instruct's published widths (packages/models/src/qwen3vl/published-config.ts):
               text 2048 wide, 16/8 heads of 128, MLP 6144, vocab 151936, tied; vision 1024 wide, 16 heads, MLP
               4096, patch 16. Fewer layers: text --layers (default 4 of 28), vision --vision-layers (default 8 of
               24). float32 on disk.
  qwen3vl-moe  Qwen/Qwen3-VL-30B-A3B-Instruct's: text 2048 wide, 32/4 heads of 128, 128 experts of 768 top-8
               (norm_topk_prob), vocab 151936, untied; vision 1152 wide, MLP 4304. Text --layers (default 3 of 48:
               each of the 3 deepstack levels is added after its own decoder layer, and vlmkit refuses a config
               with fewer layers than levels where HF drops the extra levels), vision --vision-layers (default 9
               of 27). bf16 on disk (PyTorch and vlmkit compute in float32).

With fewer vision blocks the deepstack taps keep their relative depth: published index i of D blocks becomes
round((i + 1) * d / D) - 1 of d (2B, 8 blocks: [1, 3, 5]; MoE, 9 blocks: [2, 5, 7]). The prompt: one 512x512
image (32x32 patches of 16: 1024 patch rows, 256 image tokens) in a --prompt-token prompt (default 1280),
vision start / end around it, random text tokens elsewhere, mm_token_type_ids 1 on the image pads.
"""

import math

import torch

IDS = dict(image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653)
PAD, EOS = 151643, 151645
TEXT_RANGE = [1000, 150000]  # random prompt tokens: below the special ids
GRID = [1, 32, 32]

# Published values (the hub config.json files, as packages/models/src/qwen3vl/published-config.ts).
PUBLISHED = {
    "qwen3vl-2b": dict(
        text=dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128),
        vision=dict(depth=24, hidden_size=1024, intermediate_size=4096, num_heads=16, deepstack=[5, 11, 17]),
        tied=True, layers=4, vision_layers=8, dtype=torch.float32),
    "qwen3vl-moe": dict(
        text=dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=48, num_attention_heads=32,
                  num_key_value_heads=4, head_dim=128, num_experts=128, num_experts_per_tok=8,
                  moe_intermediate_size=768, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True),
        vision=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, deepstack=[8, 16, 24]),
        tied=False, layers=3, vision_layers=9, dtype=torch.bfloat16),
}
CONFIGS = tuple(PUBLISHED)


def qwen3vl_config(kind: str, layers: int | None, vision_layers: int | None):
    from transformers import Qwen3VLConfig, Qwen3VLMoeConfig

    pub = PUBLISHED[kind]
    n_text = layers or pub["layers"]
    v = dict(pub["vision"])
    full = v.pop("depth")
    depth = vision_layers or pub["vision_layers"]
    deepstack = [round((i + 1) * depth / full) - 1 for i in v.pop("deepstack")]
    if len(set(deepstack)) != len(deepstack) or min(deepstack) < 0 or n_text < len(deepstack):
        raise SystemExit(f"{kind}: {depth} vision blocks / {n_text} text layers are too few for 3 deepstack levels "
                         "(each on its own block, added after its own text layer: vlmkit refuses fewer layers)")
    vision = dict(v, depth=depth, deepstack_visual_indexes=deepstack, hidden_act="gelu_pytorch_tanh", in_channels=3,
                  patch_size=16, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=2048,
                  num_position_embeddings=2304)
    text = dict(pub["text"], num_hidden_layers=n_text, vocab_size=151936, hidden_act="silu",
                max_position_embeddings=262144, rms_norm_eps=1e-6, attention_bias=False,
                rope_parameters={"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [24, 20, 20],
                                 "mrope_interleaved": True},
                pad_token_id=PAD, bos_token_id=None, eos_token_id=EOS)
    cls = Qwen3VLMoeConfig if kind == "qwen3vl-moe" else Qwen3VLConfig
    return cls(vision_config=vision, text_config=text, tie_word_embeddings=pub["tied"], **IDS)


def active_params_per_token(cfg) -> int:
    """Weights a decode step reads for one token: attention, the MLP (MoE: top-k experts + router), norms, lm_head."""
    t = cfg.text_config
    D, H, KV, hd = t.hidden_size, t.num_attention_heads, t.num_key_value_heads, t.head_dim
    attn = D * H * hd + 2 * D * KV * hd + H * hd * D + 2 * D + 2 * hd
    mlp = (t.num_experts_per_tok * 3 * D * t.moe_intermediate_size + D * t.num_experts
           if hasattr(t, "num_experts") else 3 * D * t.intermediate_size)
    return t.num_hidden_layers * (attn + mlp) + D + t.vocab_size * D


def make_qwen3vl(args, dir_, init) -> tuple[dict, dict]:
    """Builds the checkpoint (HF's model, tools/fixtures' init rule `init`, save_pretrained) and the prompt."""
    from transformers import Qwen3VLForConditionalGeneration, Qwen3VLMoeForConditionalGeneration

    cfg = qwen3vl_config(args.config, args.layers, args.vision_layers)
    dtype = PUBLISHED[args.config]["dtype"]
    cls = Qwen3VLMoeForConditionalGeneration if args.config == "qwen3vl-moe" else Qwen3VLForConditionalGeneration
    torch.manual_seed(0)
    # The MoE shape in bf16 is 4-5 GB in memory (2 layers of 128 experts); init draws float32 per tensor.
    torch.set_default_dtype(dtype)
    model = cls(cfg).eval()
    torch.set_default_dtype(torch.float32)
    init(model, seed=0)
    model.save_pretrained(str(dir_))
    params = sum(p.numel() for p in model.parameters())
    del model
    g = torch.Generator().manual_seed(1)
    n_img = math.prod(GRID) // 4
    seq = args.prompt or 1280
    text = seq - n_img - 2
    before = text // 2
    tok = lambda n: torch.randint(*TEXT_RANGE, (n,), generator=g).tolist()  # noqa: E731
    p = tok(before) + [IDS["vision_start_token_id"]] + [IDS["image_token_id"]] * n_img
    p += [IDS["vision_end_token_id"]] + tok(text - before)
    input_ids = torch.tensor([p])
    patch_dim = 3 * 2 * 16 * 16
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
              "mm_token_type_ids": (input_ids == IDS["image_token_id"]).long(),
              "pixel_values": torch.randn((math.prod(GRID), patch_dim), generator=g),
              "image_grid_thw": torch.tensor([GRID])}
    info = dict(model="qwen3vl", patches=math.prod(GRID), image="512x512", image_tokens=n_img,
                text_token_range=TEXT_RANGE, dtype=str(dtype).removeprefix("torch."), params=params, seq=seq,
                text_layers=cfg.text_config.num_hidden_layers, vision_layers=cfg.vision_config.depth,
                deepstack_visual_indexes=cfg.vision_config.deepstack_visual_indexes,
                active_params_per_token=active_params_per_token(cfg))
    return info, inputs


def model_class(dir_):
    import json

    from transformers import Qwen3VLForConditionalGeneration, Qwen3VLMoeForConditionalGeneration

    moe = json.loads((dir_ / "config.json").read_text())["model_type"] == "qwen3_vl_moe"
    return Qwen3VLMoeForConditionalGeneration if moe else Qwen3VLForConditionalGeneration
