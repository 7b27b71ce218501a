"""Record how HF transformers 5.17 reads processor folders: which file wins, which keys it drops,
what it refuses. Writes test-fixtures/processors/hf-saved/.

Run from the repo root with the reference env and the torchvision of tools/processors/README.md:

    PYTHONPATH=/tmp/tvsite .venv-ref/bin/python tools/processors/make_hf_saved_cases.py

1. `AutoProcessor.from_pretrained` on the fixture folders test-fixtures/processors/{ernie,granite},
   then `save_pretrained` into hf-saved/{ernie,granite}/: the layout HF 5.17 writes (image and
   video processor settings nested in processor_config.json, no preprocessor_config.json, a
   tokenizer.json with a post-processor, add_bos_token / add_eos_token left out).
2. Each case starts from one of those folders (`base`, relative to test-fixtures/processors/),
   applies a few file operations (`ops`), loads the result with `AutoProcessor.from_pretrained`,
   templates one user message (an image, or a video, and a question) and calls the processor on
   the prompt and the image / video. `hf` records what came out: the prompt, the ids, every other
   tensor's shape (integer tensors whole; float tensors as their sum, sum of absolute values and 33
   values at evenly spaced flat indices), or the exception HF raised and at which stage.
3. `vlmkit` is what @vlmkit/processors must do where HF raises: throw a ProcessorError with that
   code whose message names these strings. Written here by hand, beside the case it belongs to.

The image processors are the PIL backends (as make_cases.py's cases); AutoImageProcessor is made
to pick them (it prefers torchvision when that is importable, and the ERNIE video processor needs
torchvision). Everything is deterministic; re-running gives byte-identical files.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

try:
    import torchvision  # noqa: F401
except RuntimeError:  # see make_cases.py: the CUDA wheel's ops cannot load on CPU-only torch
    _tv_lib = torch.library.Library("torchvision", "DEF")
    _tv_lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _tv_lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision  # noqa: F401

import transformers
from safetensors.numpy import load_file
from transformers import AutoProcessor
from transformers.image_utils import load_image
from transformers.models.auto import image_processing_auto
from transformers.video_utils import VideoMetadata

# The PIL backends, as every other processors fixture (AutoImageProcessor's own choice is torchvision here).
image_processing_auto._resolve_backend = lambda backend, use_fast, base_class_name: "pil"

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "test-fixtures" / "processors"
OUT = FIX / "hf-saved"
SAMPLES = 33

QUESTION = "Describe this image."
IMAGE = "images/photo.jpg"

# A tokenizer.json post-processor that adds the BOS token (as many hub tokenizer.json files do).
BOS_TEMPLATE = {
    "ernie": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [
            {"SpecialToken": {"id": "<s>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"Sequence": {"id": "B", "type_id": 1}},
        ],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
    },
    "granite": {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<|start_of_text|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [
            {"SpecialToken": {"id": "<|start_of_text|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"Sequence": {"id": "B", "type_id": 1}},
        ],
        "special_tokens": {"<|start_of_text|>": {"id": "<|start_of_text|>", "ids": [1], "tokens": ["<|start_of_text|>"]}},
    },
}

ERNIE_IMAGE_NESTED_DIFFERENT = {
    "image_processor_type": "Ernie4_5_VLMoeImageProcessor",
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 1,
    "size": {"shortest_edge": 6272, "longest_edge": 12544},
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "resample": 2,
}
GRANITE_IMAGE_NESTED_DIFFERENT = {
    "image_processor_type": "LlavaNextImageProcessor",
    "crop_size": {"height": 64, "width": 64},
    "size": {"height": 64, "width": 64},
    "image_grid_pinpoints": [[64, 128], [128, 64], [128, 128]],
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "resample": 2,
}


def flat(model: str) -> dict:
    return json.loads((FIX / model / "preprocessor_config.json").read_text())


def saved_processor_config(model: str) -> dict:
    return json.loads((OUT / model / "processor_config.json").read_text())


def refuse(code: str, *mentions: str) -> dict:
    return {"code": code, "mentions": list(mentions)}


def cases() -> list[dict]:
    """(name, model, base, ops, what it shows, vlmkit's refusal where HF raises)."""
    out = []

    def add(name, model, base, ops, why, vlmkit=None, media="image", prompt=None, image=IMAGE):
        out.append(
            dict(name=name, model=model, base=base, ops=ops, why=why, vlmkit=vlmkit, media=media, prompt=prompt, image=image)
        )

    for m in ("ernie", "granite"):
        saved = f"hf-saved/{m}"
        nested_diff = ERNIE_IMAGE_NESTED_DIFFERENT if m == "ernie" else GRANITE_IMAGE_NESTED_DIFFERENT
        add(f"{m}-saved", m, saved, [], "save_pretrained's layout: image settings only inside processor_config.json")
        add(
            f"{m}-both-disagree",
            m,
            saved,
            [
                {"op": "merge", "file": "processor_config.json", "json": {"image_processor": nested_diff}},
                {"op": "write", "file": "preprocessor_config.json", "json": flat(m)},
            ],
            "processor_config.json's image_processor and preprocessor_config.json disagree: the nested one wins",
        )
        add(
            f"{m}-nested-null",
            m,
            saved,
            [
                {"op": "merge", "file": "processor_config.json", "json": {"image_processor": None}},
                {"op": "write", "file": "preprocessor_config.json", "json": {**flat(m), **{"image_mean": [0.5, 0.5, 0.5], "image_std": [0.25, 0.25, 0.25]}}},
            ],
            '"image_processor": null counts as absent: preprocessor_config.json is read',
        )
        add(
            f"{m}-no-image-settings",
            m,
            saved,
            [{"op": "merge", "file": "processor_config.json", "json": {"image_processor": None}}],
            "no image_processor in processor_config.json and no preprocessor_config.json: HF refuses to load",
            refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "processor_config.json", "image_processor"),
        )
        add(
            f"{m}-legacy-missing-preprocessor",
            m,
            m,
            [{"op": "delete", "file": "preprocessor_config.json"}],
            "the hub layout without preprocessor_config.json: HF refuses to load",
            refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json"),
        )
        add(
            f"{m}-preprocessor-is-directory",
            m,
            m,
            [{"op": "delete", "file": "preprocessor_config.json"}, {"op": "mkdir", "file": "preprocessor_config.json"}],
            "HF treats a processor file that is not a regular file as absent",
            refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json"),
        )
        add(
            f"{m}-chat-template-is-directory",
            m,
            saved,
            [{"op": "delete", "file": "chat_template.jinja"}, {"op": "mkdir", "file": "chat_template.jinja"}],
            "chat_template.jinja that is a directory is absent for HF: no chat template",
            refuse("TOKENIZER_ERROR", "chat template"),
        )
        add(
            f"{m}-add-bos-eos-true",
            m,
            m,
            [{"op": "merge", "file": "tokenizer_config.json", "json": {"add_bos_token": True, "add_eos_token": True}}],
            "tokenizer_config.json add_bos_token / add_eos_token true: dropped because tokenizer.json exists",
        )
        add(
            f"{m}-add-bos-false-post-processor-bos",
            m,
            m,
            [
                {"op": "merge", "file": "tokenizer_config.json", "json": {"add_bos_token": False, "add_eos_token": False}},
                {"op": "merge", "file": "tokenizer.json", "json": {"post_processor": BOS_TEMPLATE[m]}},
            ],
            "tokenizer_config.json add_bos_token false while tokenizer.json's post-processor adds BOS: BOS kept",
        )
        add(
            f"{m}-resample-99",
            m,
            m,
            [{"op": "merge", "file": "preprocessor_config.json", "json": {"resample": 99}}],
            "resample 99 is no PIL filter",
            refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "resample", "99 is not a PIL resampling filter"),
        )
        template = (FIX / m / "chat_template.jinja").read_text()
        add(
            f"{m}-template-json-beats-jinja",
            m,
            m,
            [{"op": "write", "file": "chat_template.json", "json": {"chat_template": "LEGACY " + template}}],
            "chat_template.json (legacy) and chat_template.jinja: HF's processor takes chat_template.json",
        )
        add(
            f"{m}-template-in-processor-config",
            m,
            "hf-saved/" + m,
            [{"op": "merge", "file": "processor_config.json", "json": {"chat_template": "CONFIG " + template}}],
            "processor_config.json chat_template beats chat_template.jinja",
        )
        add(
            f"{m}-template-only-in-tokenizer-config",
            m,
            m,
            [
                {"op": "delete", "file": "chat_template.jinja"},
                {"op": "merge", "file": "tokenizer_config.json", "json": {"chat_template": template}},
            ],
            "a template only in tokenizer_config.json: HF's processor has none (it never takes the tokenizer's)",
            refuse("TOKENIZER_ERROR", "chat template"),
        )
    # Classes HF rebuilds from tokenizer.json's vocabulary (other ids): vlmkit rebuilds these the same way
    # (see tools/processors/make_tokenizer_class_cases.py for more), and refuses the others by name.
    for cls in ("LlamaTokenizerFast", "Qwen2Tokenizer", "GPT2Tokenizer", "T5TokenizerFast"):
        add(
            f"ernie-tokenizer-class-{cls}",
            "ernie",
            "ernie",
            [{"op": "merge", "file": "tokenizer_config.json", "json": {"tokenizer_class": cls}}],
            "tokenizer_class other than TokenizersBackend: HF rebuilds the tokenizer with that class (other ids)",
            refuse("TOKENIZER_ERROR", "tokenizer_config.json", "tokenizer_class", cls) if cls == "T5TokenizerFast" else None,
            media="none",
            prompt="Hello! What is  shown in this picture?",
        )
    add(
        "ernie-tokenizer-class-fast",
        "ernie",
        "ernie",
        [{"op": "merge", "file": "tokenizer_config.json", "json": {"tokenizer_class": "PreTrainedTokenizerFast"}}],
        "PreTrainedTokenizerFast is TokenizersBackend in HF 5: tokenizer.json as it is",
        media="none",
        prompt="Hello! What is  shown in this picture?",
    )
    for m in ("ernie", "granite"):
        for key in ("resample", "do_normalize"):
            add(
                f"{m}-{key}-null",
                m,
                m,
                [{"op": "merge", "file": "preprocessor_config.json", "json": {key: None}}],
                f"{key} null is None for HF (not the default): it fails or skips the step",
                refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", key, "is null"),
            )
        add(
            f"{m}-padding-side-bogus",
            m,
            m,
            [{"op": "merge", "file": "tokenizer_config.json", "json": {"padding_side": "middle"}}],
            "padding_side other than left / right: HF's tokenizer refuses it",
            refuse("TOKENIZER_ERROR", "tokenizer_config.json", "padding_side", "middle"),
        )
        add(
            f"{m}-no-image-processor-type",
            m,
            m,
            [{"op": "merge", "file": "preprocessor_config.json", "json": {"image_processor_type": None}}],
            "no image_processor_type and no config.json: HF's AutoImageProcessor refuses",
            refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "image_processor_type"),
        )
    add(
        "ernie-image-processor-type-other",
        "ernie",
        "ernie",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"image_processor_type": "LlavaNextImageProcessor"}}],
        "another family's image processor class: HF builds it and fails",
        refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "image_processor_type", "LlavaNextImageProcessor"),
    )
    add(
        "granite-image-processor-type-pil",
        "granite",
        "granite",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"image_processor_type": "LlavaNextImageProcessorPil"}}],
        "the Pil spelling of the class: the same image processor",
    )
    add(
        "ernie-video-max-frames-1",
        "ernie",
        "ernie",
        [{"op": "merge", "file": "video_preprocessor_config.json", "json": {"max_frames": 1}}],
        "max_frames 1: one sampled frame makes HF's video processor fail",
        refuse("INVALID_PROCESSOR_CONFIG", "video_preprocessor_config.json", "max_frames"),
        media="video",
    )
    for name, crop in (("granite-crop-128", {"height": 128, "width": 128}), ("granite-crop-missing", None)):
        ops = [{"op": "merge", "file": "preprocessor_config.json", "json": {"crop_size": crop}}]
        if crop is None:  # absent, not null: the class default 224 x 224
            ops = [{"op": "write", "file": "preprocessor_config.json", "json": {k: v for k, v in flat("granite").items() if k != "crop_size"}}]
        add(
            name,
            "granite",
            "granite",
            ops,
            "a tile (crop_size) higher than the pinpoint an image gets: HF divides by zero counting its tokens"
            if crop is None
            else "crop_size 128: the photo's pinpoint is 128 high, so HF processes it",
            refuse("INVALID_PROCESSOR_CONFIG", "image_grid_pinpoints", "crop_size") if crop is None else None,
        )
    add(
        "granite-crop-128-wide-image",
        "granite",
        "granite",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"crop_size": {"height": 128, "width": 128}}}],
        "crop_size 128 and a 900x40 image: HF processes it (its pinpoint is not lower than the tile)",
        image="images/wide.png",
    )
    add(
        "granite-crop-128-tiny-image",
        "granite",
        "granite",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"crop_size": {"height": 128, "width": 128}}}],
        "crop_size 128 and a 7x5 image, tiled into the 64-high pinpoint: HF divides by zero counting its tokens",
        refuse("INVALID_PROCESSOR_CONFIG", "image_grid_pinpoints", "[64, 128]", "crop_size"),
        image="images/tiny.png",
    )
    add(
        "granite-no-patch-size",
        "granite",
        "granite",
        [{"op": "merge", "file": "processor_config.json", "json": {"patch_size": None}}],
        "processor_config.json without patch_size: HF's Granite4VisionProcessor fails on the first image",
        refuse("INVALID_PROCESSOR_CONFIG", "processor_config.json has no patch_size"),
    )
    add(
        "granite-size-shortest-longest",
        "granite",
        "granite",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"size": {"shortest_edge": 64, "longest_edge": 128}}}],
        "a LlavaNext size {shortest_edge, longest_edge}: vlmkit does not follow HF's resize here and refuses it",
        refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "size must be"),
    )
    add(
        "ernie-draw-on-frames-no-font",
        "ernie",
        "ernie",
        [{"op": "merge", "file": "video_preprocessor_config.json", "json": {"draw_on_frames": True}}],
        "draw_on_frames true without the font file beside it: HF refuses to load the folder",
        refuse("INVALID_PROCESSOR_CONFIG", "video_preprocessor_config.json", "draw_on_frames", "Roboto-Regular.ttf"),
    )
    add(
        "ernie-legacy-no-video-settings",
        "ernie",
        "ernie",
        [{"op": "delete", "file": "video_preprocessor_config.json"}],
        "no video settings: HF builds the video processor from preprocessor_config.json, whose temporal_patch_size 1 it refuses",
        refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "temporal_patch_size"),
    )
    add(
        "ernie-size-height-width",
        "ernie",
        "ernie",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"size": {"height": 56, "width": 84}}}],
        "ERNIE's smart_resize needs size.shortest_edge and size.longest_edge: HF refuses {height, width}",
        refuse("INVALID_PROCESSOR_CONFIG", "preprocessor_config.json", "size", "shortest_edge", "longest_edge"),
    )
    add(
        "ernie-nested-size-height-width",
        "ernie",
        "hf-saved/ernie",
        [
            {
                "op": "merge",
                "file": "processor_config.json",
                "json": {"image_processor": {**saved_processor_config("ernie")["image_processor"], "size": {"height": 56, "width": 84}}},
            }
        ],
        "the same inside processor_config.json: the message names that file",
        refuse("INVALID_PROCESSOR_CONFIG", "processor_config.json", "image_processor", "size", "shortest_edge"),
    )
    add(
        "granite-size-shortest-edge",
        "granite",
        "granite",
        [{"op": "merge", "file": "preprocessor_config.json", "json": {"size": {"shortest_edge": 64}}}],
        "LlavaNext takes size {shortest_edge} as well as {height, width}",
    )
    video_nested = {**saved_processor_config("ernie")["video_processor"], "max_frames": 4, "image_mean": [0.5, 0.5, 0.5]}
    add(
        "ernie-video-saved",
        "ernie",
        "hf-saved/ernie",
        [],
        "save_pretrained's layout: video settings only inside processor_config.json",
        media="video",
    )
    add(
        "ernie-video-both-disagree",
        "ernie",
        "hf-saved/ernie",
        [
            {"op": "merge", "file": "processor_config.json", "json": {"video_processor": video_nested}},
            {"op": "write", "file": "video_preprocessor_config.json", "json": json.loads((FIX / "ernie" / "video_preprocessor_config.json").read_text())},
        ],
        "processor_config.json's video_processor and video_preprocessor_config.json disagree: the nested one wins",
        media="video",
    )
    add(
        "ernie-video-from-preprocessor",
        "ernie",
        "ernie",
        [
            {"op": "delete", "file": "video_preprocessor_config.json"},
            {
                "op": "merge",
                "file": "preprocessor_config.json",
                "json": {"temporal_patch_size": 2, "draw_on_frames": False, "min_frames": 2, "max_frames": 6},
            },
        ],
        "no video settings: HF's video processor reads preprocessor_config.json",
        media="video",
    )
    add(
        "ernie-lone-surrogate",
        "ernie",
        "ernie",
        [],
        "a lone surrogate in the prompt: HF's tokenizer raises",
        refuse("INVALID_INPUT", "surrogate", "position 8"),
        media="none",
        prompt="Picture \ud800 here",
    )
    return out


def apply_ops(d: Path, ops: list[dict]) -> None:
    for op in ops:
        p = d / op["file"]
        if op["op"] == "delete":
            p.unlink()
        elif op["op"] == "mkdir":
            p.mkdir()
        elif op["op"] == "write":
            p.write_text(json.dumps(op["json"], indent=2) + "\n")
        elif op["op"] == "merge":
            obj = json.loads(p.read_text())
            for k, v in op["json"].items():
                obj[k] = v
            p.write_text(json.dumps(obj, indent=2) + "\n")
        else:
            raise ValueError(op)


def describe(name: str, t) -> dict:
    a = t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    if a.dtype.kind in "iub":
        return {"shape": list(a.shape), "values": a.reshape(-1).astype(np.int64).tolist()}
    f = a.astype(np.float32).reshape(-1)
    idx = [(i * len(f)) // SAMPLES for i in range(SAMPLES)] if len(f) else []
    return {
        "shape": list(a.shape),
        "sum": float(f.astype(np.float64).sum()),
        "abs_sum": float(np.abs(f.astype(np.float64)).sum()),
        "samples": [[i, float(f[i])] for i in idx],
    }


def video_input():
    st = load_file(str(FIX / "video" / "frames.safetensors"))
    frames = st["frames"]
    meta = VideoMetadata(total_num_frames=len(frames), fps=6, width=64, height=48, frames_indices=list(range(len(frames))))
    return frames, meta


def run_case(case: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "model"
        shutil.copytree(FIX / case["base"], d, ignore=shutil.ignore_patterns("cases"))
        apply_ops(d, case["ops"])
        stage = "load"
        try:
            processor = AutoProcessor.from_pretrained(str(d))
            stage = "template"
            if case["prompt"] is not None:
                prompt = case["prompt"]
            else:
                part = {"type": "video"} if case["media"] == "video" else {"type": "image"}
                messages = [{"role": "user", "content": [part, {"type": "text", "text": QUESTION}]}]
                prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            stage = "call"
            kwargs = {}
            if case["media"] == "image":
                kwargs["images"] = [load_image(str(FIX / case["image"]))]
            elif case["media"] == "video":
                frames, meta = video_input()
                kwargs["videos"] = [frames]
                kwargs["video_metadata"] = [meta]
            out = processor(text=[prompt], return_tensors="pt", **kwargs)
        except Exception as e:  # the outcome being recorded
            message = str(e).replace(str(d), "<dir>")[:400]
            return {"error": {"stage": stage, "type": type(e).__name__, "message": message}}
        tensors = {k: describe(k, v) for k, v in out.items() if k not in ("input_ids", "attention_mask")}
        return {"prompt": prompt, "input_ids": out["input_ids"][0].tolist(), "tensors": tensors}


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    for m in ("ernie", "granite"):
        AutoProcessor.from_pretrained(str(FIX / m)).save_pretrained(str(OUT / m))
    results = []
    for case in cases():
        case["hf"] = run_case(case)
        results.append(case)
        hf = case["hf"]
        print(case["name"], hf["error"]["type"] if "error" in hf else f"{len(hf['input_ids'])} ids")
    index = {
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "image": IMAGE,
        "video": "video/frames.safetensors (fps 6)",
        "question": QUESTION,
        "samples": SAMPLES,
        "cases": results,
    }
    # One case per line: small diffs, no line per array element.
    lines = [json.dumps({k: v for k, v in index.items() if k != "cases"}, ensure_ascii=True)[:-1] + ', "cases": [']
    lines += [" " + json.dumps(c, ensure_ascii=True) + ("," if i < len(results) - 1 else "") for i, c in enumerate(results)]
    (OUT / "cases.json").write_text("\n".join(lines) + "\n]}\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
