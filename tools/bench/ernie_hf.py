"""HF transformers 5.17 side of the ERNIE-4.5-VL benchmark (tools/bench/ernie-bench.mjs runs it).

Builds a mid-size random ERNIE-4.5-VL checkpoint (same family as test-fixtures/ernie-tiny,
wider and deeper) into DIR once, writes DIR/inputs.safetensors (one image, grid [1, 28, 28]
-> 196 image tokens, plus text), then times HF on CPU: load, forward (no cache), greedy
generate. Prints one JSON line with the timings and writes DIR/hf_logits.safetensors.
"""
import json
import math
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import Ernie4_5_VLMoeConfig, Ernie4_5_VLMoeForConditionalGeneration

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_fixtures import ERNIE_IDS, init_weights_nondegenerate  # noqa: E402

GRID = [1, 28, 28]
TEXT_BEFORE, TEXT_AFTER = 32, 32


def config() -> Ernie4_5_VLMoeConfig:
    vision = dict(depth=4, hidden_size=256, hidden_act="quick_gelu", num_heads=4, in_channels=3, patch_size=14,
                  spatial_merge_size=2, temporal_merge_size=2, intermediate_size=1024, rms_norm_eps=1e-6,
                  rope_parameters={"rope_type": "axial", "rope_theta": 10000.0})
    text = dict(vocab_size=2048, hidden_size=512, intermediate_size=1536, num_hidden_layers=6, num_attention_heads=8,
                num_key_value_heads=2, head_dim=64, hidden_act="silu", max_position_embeddings=4096, rms_norm_eps=1e-5,
                use_bias=False, tie_word_embeddings=True,
                rope_parameters={"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [12, 12, 8]},
                moe_intermediate_size=[512, 256], moe_k=2, moe_num_experts=8, moe_num_shared_experts=1, moe_norm_min=1e-12,
                mlp_layer_types=["dense"] + ["sparse"] * 5,
                pad_token_id=ERNIE_IDS["pad"], bos_token_id=ERNIE_IDS["bos"], eos_token_id=ERNIE_IDS["eos"])
    ids = {k: v for k, v in ERNIE_IDS.items() if k.endswith("token_id")}
    return Ernie4_5_VLMoeConfig(vision_config=vision, text_config=text, tie_word_embeddings=True, **ids)


def build(dir_: Path) -> None:
    if (dir_ / "config.json").exists():
        return
    torch.manual_seed(0)
    model = Ernie4_5_VLMoeForConditionalGeneration(config()).eval()
    init_weights_nondegenerate(model, seed=0)
    model.save_pretrained(str(dir_))
    g = torch.Generator().manual_seed(1)
    n_img = math.prod(GRID) // 4
    ids = [ERNIE_IDS["bos"]] + torch.randint(3, 240, (TEXT_BEFORE,), generator=g).tolist()
    ids += [ERNIE_IDS["image_start_token_id"]] + [ERNIE_IDS["image_token_id"]] * n_img + [ERNIE_IDS["image_end_token_id"]]
    ids += torch.randint(3, 240, (TEXT_AFTER,), generator=g).tolist()
    input_ids = torch.tensor([ids])
    mm = (input_ids == ERNIE_IDS["image_token_id"]).long()
    moe = mm.clone()
    moe[(input_ids == ERNIE_IDS["image_start_token_id"]) | (input_ids == ERNIE_IDS["image_end_token_id"])] = 1
    save_file({
        "input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "mm_token_type_ids": mm,
        "moe_mm_token_type_ids": moe, "pixel_values": torch.randn((math.prod(GRID), 588), generator=g),
        "image_grid_thw": torch.tensor([GRID]),
    }, str(dir_ / "inputs.safetensors"))


@torch.no_grad()
def main() -> None:
    dir_ = Path(sys.argv[1])
    new_tokens = int(sys.argv[2])
    threads = int(sys.argv[3])
    torch.set_num_threads(threads)
    dir_.mkdir(parents=True, exist_ok=True)
    build(dir_)
    from safetensors.torch import load_file
    inputs = load_file(str(dir_ / "inputs.safetensors"))
    t0 = time.perf_counter()
    model = Ernie4_5_VLMoeForConditionalGeneration.from_pretrained(str(dir_), dtype=torch.float32).eval()
    load_s = time.perf_counter() - t0
    fwd = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = model(**inputs, use_cache=False)
        fwd.append(time.perf_counter() - t0)
    save_file({"logits": out.logits.float().contiguous()}, str(dir_ / "hf_logits.safetensors"))
    t0 = time.perf_counter()
    gen = model.generate(**inputs, max_new_tokens=new_tokens, do_sample=False, eos_token_id=None, pad_token_id=0)
    gen_s = time.perf_counter() - t0
    print(json.dumps({
        "params": sum(p.numel() for p in model.parameters()),
        "seq": inputs["input_ids"].shape[1], "patches": math.prod(GRID),
        "load_s": load_s, "forward_s": sorted(fwd)[1], "generate_s": gen_s,
        "generated": gen[0, inputs["input_ids"].shape[1]:].tolist(),
    }))


if __name__ == "__main__":
    main()
