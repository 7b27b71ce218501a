"""PyTorch (HF transformers 5.17, CPU) side of `pnpm bench` (tools/bench/bench.mjs runs it).

Subcommands (each prints one JSON line last; bench.mjs reads it):

  make   --config medium|granite|ernie28b|qwen3vl-2b|qwen3vl-moe --dir D [--layers N] [--vision-layers N]
         [--experts N]
         Builds a random-weight checkpoint of that config into D (once: skipped when D/bench.json exists),
         D/inputs.safetensors (the benchmark prompt) and D/bench.json (what was built, parameter counts).
         --experts: routed experts per MoE layer other than the config's (medium and ernie28b: per modality;
         qwen3vl-moe), at the same expert width and top-k: where ORT's MoE kernel pays off (issue 20).
  size   --config ernie28b --dir D --layers N --vision-layers N
         The bytes that checkpoint will have (whole, the decoder's linear weights, the vision side), built on meta.
  run    --dir D --threads T --repeats R --new-tokens N --out F [--device cpu|cuda] [--dtype float32|bfloat16|float16]
         Times HF on D's checkpoint and inputs: load, vision (image features), prefill (the prompt with the
         vision features given, cache on, last position's logits only, as generate does), decode (greedy
         generate of N tokens, per-step times), peak RSS (VmHWM of this process); on cuda every time is taken
         after torch.cuda.synchronize() and the peak GPU memory (max allocated / reserved) is reported. Writes the
         greedy ids and the raw logits of every generated step to F (safetensors) for the comparison with vlmkit.
  curves --dir D --threads T --points JSON
         Vision time against patches, prefill time and decode ms/token against prompt (context) length.

The measuring process imports nothing from tools/fixtures (that module sets 1 thread and deterministic kernels
at import); only `make` does.
"""

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

import qwen3vl_side

HERE = Path(__file__).resolve().parent
SHARD_BYTES = 2 * 1024**3

# ---------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------

# Small special ids (as test-fixtures/ernie-tiny) for the medium config; the published ids for the 28B shape.
ERNIE_MEDIUM_IDS = dict(pad=0, bos=1, eos=2, image_token_id=250, image_start_token_id=251, image_end_token_id=252,
                        video_start_token_id=253, video_end_token_id=254, video_token_id=255)
ERNIE_28B_IDS = dict(pad=0, bos=1, eos=2, image_token_id=100295, image_start_token_id=101304,
                     image_end_token_id=101305, video_start_token_id=101306, video_end_token_id=101307,
                     video_token_id=103367)


def ernie_config(kind: str, layers: int | None, vision_layers: int | None, experts: int | None = None):
    from transformers import Ernie4_5_VLMoeConfig

    if kind == "medium":
        # The medium ERNIE-4.5-VL: vision 8 x 512, text 8 x 1024, 16/4 heads, 8+8 experts top-2,
        # one shared expert, vocab 32000.
        ids = ERNIE_MEDIUM_IDS
        n_layers = layers or 8
        vision = dict(depth=vision_layers or 8, hidden_size=512, num_heads=8, intermediate_size=2048)
        text = dict(vocab_size=32000, hidden_size=1024, intermediate_size=1024, num_hidden_layers=n_layers,
                    num_attention_heads=16, num_key_value_heads=4, head_dim=64,
                    rope_parameters={"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [12, 12, 8]},
                    moe_intermediate_size=[1024, 512], moe_k=2, moe_num_experts=experts or 8, moe_num_shared_experts=1)
    else:
        # ERNIE-4.5-VL-28B-A3B at its published width (MODEL_NOTES.md, packages/models/src/published-configs.ts),
        # fewer layers: layer 0 dense, the rest MoE, as the published model.
        ids = ERNIE_28B_IDS
        n_layers = layers or 2
        vision = dict(depth=vision_layers or 4, hidden_size=1280, num_heads=16, intermediate_size=5120)
        text = dict(vocab_size=103424, hidden_size=2560, intermediate_size=12288, num_hidden_layers=n_layers,
                    num_attention_heads=20, num_key_value_heads=4, head_dim=128,
                    rope_parameters={"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [22, 22, 20]},
                    moe_intermediate_size=[1536, 512], moe_k=6, moe_num_experts=experts or 64, moe_num_shared_experts=2)
    vision.update(hidden_act="quick_gelu", in_channels=3, patch_size=14, spatial_merge_size=2, temporal_merge_size=2,
                  rms_norm_eps=1e-6, rope_parameters={"rope_type": "axial", "rope_theta": 10000.0})
    text.update(hidden_act="silu", max_position_embeddings=8192, rms_norm_eps=1e-5, use_bias=False,
                tie_word_embeddings=True, moe_norm_min=1e-12,
                mlp_layer_types=["dense"] + ["sparse"] * (n_layers - 1),
                pad_token_id=ids["pad"], bos_token_id=ids["bos"], eos_token_id=ids["eos"])
    tok = {k: v for k, v in ids.items() if k.endswith("token_id")}
    return Ernie4_5_VLMoeConfig(vision_config=vision, text_config=text, tie_word_embeddings=True, **tok), ids


GRANITE_IDS = dict(pad=100256, bos=100257, eos=100257, image_token_index=100352)


def granite_config(layers: int | None):
    """granite-4.0-3b-vision exactly as published (MODEL_NOTES.md), text layers optionally fewer (then the
    deepstack and spatial target layers, 0..21 in the published config, are spread over the layers there are)."""
    from transformers import Granite4VisionConfig

    n_layers = layers or 40
    vision = dict(model_type="siglip_vision_model", num_hidden_layers=27, hidden_size=1152, intermediate_size=4304,
                  num_attention_heads=16, num_channels=3, image_size=384, patch_size=16,
                  hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=False)
    text = dict(model_type="granite4_vision_text", vocab_size=100353, hidden_size=2560, intermediate_size=8192,
                num_hidden_layers=n_layers, num_attention_heads=40, num_key_value_heads=8, hidden_act="silu",
                max_position_embeddings=131072, rms_norm_eps=1e-5,
                rope_parameters={"rope_type": "default", "rope_theta": 1e7}, attention_bias=False, mlp_bias=False,
                embedding_multiplier=12.0, attention_multiplier=0.015625, residual_multiplier=0.22,
                logits_scaling=10.0, tie_word_embeddings=True, pad_token_id=GRANITE_IDS["pad"],
                bos_token_id=GRANITE_IDS["bos"], eos_token_id=GRANITE_IDS["eos"])
    pinpoints = [[384, 768], [768, 384], [768, 768], [384, 1152], [1152, 384], [1152, 1152]]
    deepstack = [[-19, 9], [-13, 6], [-7, 3], [-1, 0]]
    spatial = [12, 15, 18, 21]
    if n_layers <= 21:
        # Fewer layers than the published targets reach: the 8 projectors keep feeding distinct layers, in the
        # published order (targets ranked, spread over the layers there are).
        targets = sorted([t for _, t in deepstack] + spatial)
        at = {t: (rank * n_layers) // len(targets) for rank, t in enumerate(targets)}
        deepstack = [[v, at[t]] for v, t in deepstack]
        spatial = [at[t] for t in spatial]
    # The qformer config is HF's default for this vision width: 1 layer, hidden 1152, 18 heads, intermediate 3072.
    return Granite4VisionConfig(
        vision_config=vision, text_config=text, image_token_index=GRANITE_IDS["image_token_index"],
        vision_feature_select_strategy="full", vision_feature_layer=-1, tie_word_embeddings=True,
        image_grid_pinpoints=pinpoints, downsample_rate="4/8",
        deepstack_layer_map=deepstack, spatial_vision_layer=-1, spatial_target_layers=spatial, projector_dropout=0.1)


def active_params_per_token(kind: str, cfg) -> dict:
    """Parameters a decode step reads for one text token (weights only): attention, the dense MLP or the routed
    top-k + shared experts and the router, norms, the lm_head. Embedding rows are not counted (one row)."""
    t = cfg.text_config
    D, H, KV = t.hidden_size, t.num_attention_heads, t.num_key_value_heads
    hd = getattr(t, "head_dim", None) or D // H
    attn = D * H * hd + 2 * D * KV * hd + H * hd * D + 2 * D
    total = 0
    for layer in range(t.num_hidden_layers):
        total += attn
        if kind == "granite":
            total += 3 * D * t.intermediate_size
        elif t.mlp_layer_types[layer] == "dense":
            total += 3 * D * t.intermediate_size
        else:
            i_text = t.moe_intermediate_size[0]
            total += (t.moe_k + t.moe_num_shared_experts) * 3 * D * i_text + D * t.moe_num_experts
    total += D + t.vocab_size * D
    return {"active_params_per_token": total}


# ---------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------


@torch.no_grad()
def random_like(name: str, shape, gen: torch.Generator, embed_std: float) -> torch.Tensor:
    """tools/fixtures' init rule (init_weights_nondegenerate) by parameter name, for models built on meta."""
    leaf = name.rsplit(".", 1)[-1]
    lname = name.lower()
    if "norm" in lname and leaf == "weight" and len(shape) == 1:
        return 1.0 + torch.randn(shape, generator=gen) * 0.1
    if "embed_tokens" in lname:
        return torch.randn(shape, generator=gen) * embed_std
    if leaf == "bias" or len(shape) == 1:
        return torch.randn(shape, generator=gen) * (0.1 if leaf == "bias" else 0.5)
    if len(shape) >= 2 and leaf == "weight":
        return torch.randn(shape, generator=gen) * (1.5 / math.sqrt(math.prod(shape[1:])))
    return torch.randn(shape, generator=gen) * 0.5


def save_streaming(model, dir_: Path, dtype: torch.dtype, tied: set[str]) -> int:
    """Writes random weights for a model built on the meta device, shard by shard (never the whole model in
    memory), with model.safetensors.index.json. Returns the parameter count."""
    gen = torch.Generator().manual_seed(0)
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    n = 0
    for name, p in model.state_dict().items():
        if name in tied:
            continue
        shards[-1][name] = random_like(name, tuple(p.shape), gen, 0.2).to(dtype)
        n += p.numel()
        size += p.numel() * shards[-1][name].element_size()
        if size >= SHARD_BYTES:
            write_shard(dir_, shards, final=False)
            shards.append({})
            size = 0
    write_shard(dir_, shards, final=True)
    return n


def save_ernie_streaming(model, dir_: Path, init) -> int:
    """Writes random weights for an ERNIE-4.5-VL built on the meta device, module by module (each text layer, the
    vision tower, the resampler, the embedding, the final norm): each is allocated, drawn with tools/fixtures'
    rule (`init`, seeded by its position), renamed to the checkpoint's names as save_pretrained does
    (`revert_weight_conversion`: the fused expert stacks split per expert) and written, then freed. Shards of about
    SHARD_BYTES with model.safetensors.index.json. Returns the parameter count (the tied lm_head not counted)."""
    from transformers.core_model_loading import revert_weight_conversion

    inner = model.model
    units = [("model.language_model.embed_tokens", inner.language_model.embed_tokens)]
    units += [(f"model.language_model.layers.{i}", m) for i, m in enumerate(inner.language_model.layers)]
    units += [("model.language_model.norm", inner.language_model.norm), ("model.vision_tower", inner.vision_tower),
              ("model.resampler_model", inner.resampler_model)]
    expected = {k for k in model.state_dict() if k != "lm_head.weight"}
    written: set[str] = set()
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    n = 0
    for seed, (prefix, unit) in enumerate(units):
        unit.to_empty(device="cpu")
        init(unit, seed=seed)
        state = {f"{prefix}.{k}": v for k, v in unit.state_dict().items()}
        written.update(state)
        n += sum(v.numel() for v in state.values())
        for name, t in revert_weight_conversion(model, state).items():
            shards[-1][name] = t.contiguous()
            size += t.numel() * t.element_size()
        del state
        unit.to("meta")
        if size >= SHARD_BYTES:
            write_shard(dir_, shards, final=False)
            shards.append({})
            size = 0
    write_shard(dir_, shards, final=True)
    if written != expected:
        raise SystemExit(f"streamed names differ from the model's: missing {sorted(expected - written)[:5]}, "
                         f"extra {sorted(written - expected)[:5]}")
    return n


_weight_map: dict[str, str] = {}


def write_shard(dir_: Path, shards, final: bool) -> None:
    i = len(shards)
    name = f"model-{i:05d}.safetensors"
    if shards[-1]:
        save_file(shards[-1], str(dir_ / name), metadata={"format": "pt"})
        for k in shards[-1]:
            _weight_map[k] = name
        shards[-1].clear()
    if final:
        total = sum((dir_ / f).stat().st_size for f in set(_weight_map.values()))
        (dir_ / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": total}, "weight_map": _weight_map}, indent=1))


def make(args) -> dict:
    dir_ = Path(args.dir)
    done = dir_ / "bench.json"
    if done.exists():
        return json.loads(done.read_text())
    dir_.mkdir(parents=True, exist_ok=True)
    for f in dir_.iterdir():
        if f.is_file():
            f.unlink()
    sys.path.insert(0, str(HERE.parent / "fixtures"))
    from make_fixtures import init_weights_nondegenerate  # noqa: PLC0415 (sets 1 thread: make only)

    torch.set_num_threads(os.cpu_count() or 1)
    g = torch.Generator().manual_seed(1)
    info: dict = {"config": args.config, **({"experts": args.experts} if args.experts else {})}
    if args.config in qwen3vl_side.CONFIGS:  # `pnpm bench --qwen3vl` (issue 20): qwen3vl_side.py
        if args.experts:
            if "num_experts" not in qwen3vl_side.PUBLISHED[args.config]["text"]:
                raise SystemExit(f"--experts: {args.config} has no routed experts")
            qwen3vl_side.PUBLISHED[args.config]["text"]["num_experts"] = args.experts
        made, inputs = qwen3vl_side.make_qwen3vl(args, dir_, init_weights_nondegenerate)
        info.update(made)
        save_file({k: v.contiguous() for k, v in inputs.items()}, str(dir_ / "inputs.safetensors"))
        done.write_text(json.dumps(info, indent=1))
        return info
    if args.config in ("medium", "ernie28b"):
        from transformers import Ernie4_5_VLMoeForConditionalGeneration

        cfg, ids = ernie_config(args.config, args.layers, args.vision_layers, args.experts)
        torch.manual_seed(0)
        dtype = torch.float32 if args.config == "medium" else torch.bfloat16
        if dtype == torch.float32:
            model = Ernie4_5_VLMoeForConditionalGeneration(cfg).eval()
            init_weights_nondegenerate(model, seed=0)
            model.save_pretrained(str(dir_))
            params = sum(p.numel() for p in model.parameters())
        else:
            # Built on meta in bf16 and written one module at a time (a text layer is 2.1 GB in bf16; the
            # published 28 layers are 56 GB): never the whole model in memory.
            torch.set_default_dtype(dtype)
            with torch.device("meta"):
                model = Ernie4_5_VLMoeForConditionalGeneration(cfg).eval()
            torch.set_default_dtype(torch.float32)
            # What save_pretrained writes besides the weights.
            cfg.architectures = [type(model).__name__]
            cfg.dtype = "bfloat16"
            cfg.save_pretrained(str(dir_))
            model.generation_config.save_pretrained(str(dir_))
            params = save_ernie_streaming(model, dir_, init_weights_nondegenerate)
        del model
        grid = [1, 32, 32]  # 448x448: 32x32 patches of 14 -> 256 image tokens
        n_img = math.prod(grid) // 4
        seq = args.prompt or 1280
        text = seq - n_img - 3
        before = text // 2
        tok = lambda n: torch.randint(3, 240, (n,), generator=g).tolist()  # noqa: E731
        p = [ids["bos"]] + tok(before) + [ids["image_start_token_id"]] + [ids["image_token_id"]] * n_img
        p += [ids["image_end_token_id"]] + tok(text - before)
        input_ids = torch.tensor([p])
        mm = (input_ids == ids["image_token_id"]).long()
        moe = mm.clone()
        moe[(input_ids == ids["image_start_token_id"]) | (input_ids == ids["image_end_token_id"])] = 1
        inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "mm_token_type_ids": mm,
                  "moe_mm_token_type_ids": moe, "pixel_values": torch.randn((math.prod(grid), 588), generator=g),
                  "image_grid_thw": torch.tensor([grid])}
        info.update(model="ernie", patches=math.prod(grid), image="448x448", image_tokens=n_img,
                    text_token_range=[3, 240], dtype=str(dtype).removeprefix("torch."))
    else:
        from transformers import Granite4VisionForConditionalGeneration

        cfg = granite_config(args.layers)
        with torch.device("meta"):
            model = Granite4VisionForConditionalGeneration(cfg)
        cfg.save_pretrained(str(dir_))
        params = save_streaming(model, dir_, torch.bfloat16, {"lm_head.weight"})
        del model
        n_img = granite_num_tokens([768, 768], cfg)
        seq = args.prompt or 768
        text = seq - n_img - 1
        tok = lambda n: torch.randint(1000, 50000, (n,), generator=g).tolist()  # noqa: E731
        before = text // 2
        p = [GRANITE_IDS["bos"]] + tok(before) + [GRANITE_IDS["image_token_index"]] * n_img + tok(text - before)
        input_ids = torch.tensor([p])
        inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
                  "pixel_values": torch.randn((1, 5, 3, 384, 384), generator=g),
                  "image_sizes": torch.tensor([[768, 768]])}
        info.update(model="granite", patches=5 * 24 * 24, image="768x768 (2x2 tiles + base)", image_tokens=n_img,
                    text_token_range=[1000, 50000], dtype="bfloat16")
    save_file({k: v.contiguous() for k, v in inputs.items()}, str(dir_ / "inputs.safetensors"))
    info.update(params=params, seq=seq, text_layers=cfg.text_config.num_hidden_layers,
                vision_layers=getattr(cfg.vision_config, "depth", None) or cfg.vision_config.num_hidden_layers,
                **active_params_per_token("granite" if args.config == "granite" else "ernie", cfg))
    if args.config == "granite":
        check_granite_names(dir_)
    done.write_text(json.dumps(info, indent=1))
    return info


def size(args) -> dict:
    """Bytes of the ernie28b checkpoint at --layers / --vision-layers (bf16) before it is made, from the model
    built on meta: the whole checkpoint, the decoder's linear weights (what the quantized modes quantize: attention,
    MLPs, experts and the tied LM head) and the vision side's (tower and resampler)."""
    from transformers import Ernie4_5_VLMoeForConditionalGeneration

    cfg, _ = ernie_config(args.config, args.layers, args.vision_layers, args.experts)
    with torch.device("meta"):
        model = Ernie4_5_VLMoeForConditionalGeneration(cfg)
    total = linear = vision = 0
    for name, p in model.state_dict().items():
        n = p.numel() * 2
        if name == "lm_head.weight":
            linear += n
            continue
        total += n
        if name.startswith(("model.vision_tower.", "model.resampler_model.")):
            vision += n
        elif p.ndim >= 2 and "embed_tokens" not in name and ".gate." not in name:
            linear += n
    return {"checkpoint_bytes": total, "decoder_linear_bytes": linear, "vision_bytes": vision,
            "text_layers": cfg.text_config.num_hidden_layers, "vision_layers": cfg.vision_config.depth}


def granite_num_tokens(image_size, cfg) -> int:
    """Placeholder count as Granite4VisionProcessor._get_number_of_features computes it."""
    from transformers.models.granite4_vision.processing_granite4_vision import Granite4VisionProcessor

    class _IP:
        image_grid_pinpoints = cfg.image_grid_pinpoints

    proc = Granite4VisionProcessor.__new__(Granite4VisionProcessor)
    proc.image_processor = _IP()
    proc.patch_size = cfg.vision_config.patch_size
    proc.downsample_rate = cfg.downsample_rate
    proc.num_additional_image_tokens = 0
    side = cfg.vision_config.image_size
    return proc._get_number_of_features(image_size[0], image_size[1], side, side)


def check_granite_names(dir_: Path) -> None:
    """The streamed checkpoint must have exactly the names HF loads (no missing / unexpected keys)."""
    from transformers import Granite4VisionForConditionalGeneration

    with torch.device("meta"):
        _, info = Granite4VisionForConditionalGeneration.from_pretrained(str(dir_), output_loading_info=True,
                                                                         device_map="meta")
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"granite checkpoint in {dir_}: names do not match HF's model: {bad}")


# ---------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def sync(device: str) -> None:
    """Waits for the GPU: CUDA kernels run asynchronously, so a wall-clock time is only true after this."""
    if device == "cuda":
        torch.cuda.synchronize()


def load_model(dir_: Path, info: dict, device: str = "cpu", dtype: str = "float32"):
    if info["model"] == "ernie":
        from transformers import Ernie4_5_VLMoeForConditionalGeneration as Cls
    elif info["model"] == "qwen3vl":
        Cls = qwen3vl_side.model_class(dir_)
    else:
        from transformers import Granite4VisionForConditionalGeneration as Cls
    # HF 5.17 defaults, spelled out: sdpa attention, grouped_mm experts (ERNIE).
    kw = {"attn_implementation": "sdpa"}
    if info["model"] == "ernie" or info.get("config") == "qwen3vl-moe":
        kw["experts_implementation"] = "grouped_mm"
    return Cls.from_pretrained(str(dir_), dtype=DTYPES[dtype], **kw).to(device).eval()


def vision_features(model, info: dict, inputs: dict):
    if info["model"] in ("ernie", "qwen3vl"):
        return model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"])
    return model.model.get_image_features(inputs["pixel_values"], inputs["image_sizes"])


class StepClock:
    """A logits processor that notes the time each time generate asks for the next token's scores."""

    def __init__(self, device: str = "cpu"):
        self.times: list[float] = []
        self.device = device

    def __call__(self, input_ids, scores):
        sync(self.device)
        self.times.append(time.perf_counter())
        return scores


def greedy(model, inputs: dict, n: int, device: str = "cpu"):
    from transformers import LogitsProcessorList

    clock = StepClock(device)
    t0 = time.perf_counter()
    out = model.generate(**inputs, max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None,
                         pad_token_id=0, logits_processor=LogitsProcessorList([clock]), output_logits=True,
                         return_dict_in_generate=True)
    steps = [b - a for a, b in zip(clock.times, clock.times[1:])]
    return out, clock.times[0] - t0, steps


@torch.no_grad()
def run(args) -> dict:
    torch.set_num_threads(args.threads)
    dir_ = Path(args.dir)
    info = json.loads((dir_ / "bench.json").read_text())
    dev = args.device
    inputs = {k: v.to(dev) for k, v in load_file(str(dir_ / "inputs.safetensors")).items()}
    if args.dtype != "float32" and "pixel_values" in inputs:
        inputs["pixel_values"] = inputs["pixel_values"].to(DTYPES[args.dtype])
    t0 = time.perf_counter()
    model = load_model(dir_, info, dev, args.dtype)
    sync(dev)
    load_s = time.perf_counter() - t0
    vision = []
    feats = None
    # One untimed run of each first, on every device (vlmkit_side.mjs does the same): the medians are steady-state
    # times, without the first run's one-time costs (allocator growth, oneDNN primitives, cuBLAS/cuDNN plans).
    for r in range(args.repeats + 1):
        sync(dev)
        t0 = time.perf_counter()
        feats = vision_features(model, info, inputs)
        sync(dev)
        if r:
            vision.append(time.perf_counter() - t0)
    # Prefill alone: the forward that generate runs first (cache on, last position's logits only), with the
    # image features already computed (the model's own get_image_features answers from the last run).
    real = model.model.get_image_features
    model.model.get_image_features = lambda *a, **k: feats
    prefill = []
    for r in range(args.repeats + 1):
        sync(dev)
        t0 = time.perf_counter()
        model(**inputs, use_cache=True, logits_to_keep=1)
        sync(dev)
        if r:
            prefill.append(time.perf_counter() - t0)
    model.model.get_image_features = real
    decode = []
    gen_total = []
    out = None
    for _ in range(max(1, args.decode_repeats)):
        sync(dev)
        t0 = time.perf_counter()
        out, first_s, steps = greedy(model, inputs, args.new_tokens, dev)
        gen_total.append(time.perf_counter() - t0)
        decode.append(median(steps))
    seq = inputs["input_ids"].shape[1]
    ids = out.sequences[0, seq:]
    save_file({"ids": ids.cpu().contiguous(), "logits": torch.cat(out.logits, 0).float().cpu().contiguous()}, args.out)
    gpu = {}
    if dev == "cuda":
        gpu = {"gpu": torch.cuda.get_device_name(), "gpu_peak_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
               "gpu_peak_reserved_mb": torch.cuda.max_memory_reserved() / 2**20}
    return {
        "system": "pytorch", "torch": torch.__version__, "device": dev, "dtype": args.dtype, **gpu,
        "threads": torch.get_num_threads(),
        "load_ms": load_s * 1e3, "vision_ms": median(vision) * 1e3, "prefill_ms": median(prefill) * 1e3,
        "decode_ms": median(decode) * 1e3, "generate_ms": median(gen_total) * 1e3,
        "vision_runs_ms": [x * 1e3 for x in vision], "prefill_runs_ms": [x * 1e3 for x in prefill],
        "decode_runs_ms": [x * 1e3 for x in decode], "peak_rss_mb": vm_hwm_mb(), "ids": ids.tolist(),
    }


@torch.no_grad()
def curves(args) -> dict:
    """Medium ERNIE: vision against patches, prefill and decode ms/token against prompt length (text only)."""
    torch.set_num_threads(args.threads)
    dir_ = Path(args.dir)
    info = json.loads((dir_ / "bench.json").read_text())
    points = json.loads(args.points)
    model = load_model(dir_, info)
    g = torch.Generator().manual_seed(2)
    res = {"vision": [], "prefill": [], "decode": []}
    for h, w in points["grids"]:
        grid = torch.tensor([[1, h, w]])
        px = torch.randn((h * w, 588), generator=g)
        ts = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            model.model.get_image_features(px, grid)
            ts.append(time.perf_counter() - t0)
        res["vision"].append({"patches": h * w, "ms": median(ts) * 1e3})
    lo, hi = info["text_token_range"]
    for n in points["lengths"]:
        ids = torch.tensor([[1] + torch.randint(lo, hi, (n - 1,), generator=g).tolist()])
        inp = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if info["model"] == "ernie":
            inp["mm_token_type_ids"] = torch.zeros_like(ids)
            inp["moe_mm_token_type_ids"] = torch.zeros_like(ids)
        ts = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            model(**inp, use_cache=True, logits_to_keep=1)
            ts.append(time.perf_counter() - t0)
        res["prefill"].append({"tokens": n, "ms": median(ts) * 1e3})
        _, _, steps = greedy(model, inp, args.new_tokens)
        res["decode"].append({"context": n, "ms": median(steps) * 1e3})
        print(json.dumps({"progress": n}), file=sys.stderr, flush=True)
    return {**res, "torch": torch.__version__}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["make", "size", "run", "curves"])
    ap.add_argument("--config", choices=["medium", "granite", "ernie28b", *qwen3vl_side.CONFIGS])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--vision-layers", type=int)
    ap.add_argument("--prompt", type=int)
    ap.add_argument("--experts", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--decode-repeats", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--points")
    ap.add_argument("--out")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=list(DTYPES), default="float32")
    args = ap.parse_args()
    from transformers import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    res = {"make": make, "size": size, "run": run, "curves": curves}[args.cmd](args)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
