"""Qwen3-VL processor cases from HF transformers 5.17: test-fixtures/processors/qwen3vl/.

    PYTHONPATH=/tmp/tvsite .venv-ref/bin/python tools/processors/make_qwen3vl_cases.py

Writes the processor folder HF's `processor.save_pretrained` makes (tokenizer.json,
tokenizer_config.json, chat_template.jinja, processor_config.json with the nested image and video
processor settings; the same files as test-fixtures/qwen3-vl-tiny/, built by
tools/fixtures/qwen3vl_tokenizer.py) and cases/<case>/{case.json, expected.safetensors} in the format
of make_cases.py's ERNIE/Granite cases. Reads images/ and video/frames.safetensors (make_cases.py's).
Deterministic: re-running gives byte-identical files. Every case is also run through the tiny model
test-fixtures/qwen3-vl-tiny (HF raises when placeholders and features disagree).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "fixtures"))

import qwen3vl_tokenizer as qt  # noqa: E402  (imports the torchvision shim before transformers)
import numpy as np  # noqa: E402
import PIL  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402
from transformers.image_utils import load_image  # noqa: E402
from transformers.video_utils import VideoMetadata  # noqa: E402

OUT = ROOT / "test-fixtures" / "processors"
D = OUT / "qwen3vl"
VIDEO_FPS = 6


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def user(*items) -> list[dict]:
    return [{"role": "user", "content": list(items)}]


def image_item(file):
    return {"type": "image", "path": f"images/{file}"}


def text(t):
    return {"type": "text", "text": t}


VIDEO = {"type": "video", "path": "video/clip.mp4"}


def env_info(processor) -> dict:
    classes = dict(processor=type(processor), image_processor=type(processor.image_processor),
                   video_processor=type(processor.video_processor), tokenizer=type(processor.tokenizer))
    return dict(
        transformers_version=transformers.__version__,
        tokenizers_version=tokenizers.__version__,
        pillow_version=PIL.__version__,
        torch_version=torch.__version__.split("+")[0],
        torchvision_version=torchvision.__version__.split("+")[0],
        classes={k: f"{v.__module__}.{v.__qualname__}" for k, v in classes.items()},
        image_loading="transformers.image_utils.load_image (PIL.ImageOps.exif_transpose, then Image.convert('RGB'))",
    )


def check(tensors: dict, merge: int) -> None:
    ids = tensors["input_ids"]
    assert ids.max() < qt.VOCAB and ids.min() >= 0
    img, vid = qt.IDS["image_token_id"], qt.IDS["video_token_id"]
    if "image_grid_thw" in tensors:
        assert (ids == img).sum() == tensors["image_grid_thw"].prod(-1).sum() // merge**2
    if "video_grid_thw" in tensors:
        assert (ids == vid).sum() == tensors["video_grid_thw"].prod(-1).sum() // merge**2
    want = np.where(ids == img, 1, np.where(ids == vid, 2, 0))
    assert (tensors["mm_token_type_ids"] == want).all()


def main() -> None:
    shutil.rmtree(D, ignore_errors=True)
    D.mkdir(parents=True)
    processor = qt.build_processor()
    processor.save_pretrained(str(D))
    frames_all = load_file(str(OUT / "video" / "frames.safetensors"))["frames"]
    info = env_info(processor)
    merge = processor.image_processor.merge_size

    def run(name, messages, images=(), video_frames=None, video_fps=VIDEO_FPS, video_kwargs=None, template_kwargs=None,
            decode=False):
        tk = dict(add_generation_prompt=True, tokenize=False, **(template_kwargs or {}))
        prompt = processor.apply_chat_template(messages, **tk)
        kwargs = dict(text=[prompt], return_tensors="pt")
        inputs = dict(images=[f"images/{f}" for f in images], messages=messages, apply_chat_template=tk)
        if images:
            kwargs["images"] = [load_image(str(OUT / "images" / f)) for f in images]
        extra = dict(info)
        if video_frames is not None:
            video = frames_all[:video_frames]
            meta = VideoMetadata(total_num_frames=len(video), fps=video_fps, width=64, height=48,
                                 duration=len(video) / video_fps, video_backend="pyav")
            kwargs.update(videos=[video], video_metadata=[meta], **(video_kwargs or {}))
            inputs.update(video="video/clip.mp4", video_frames="video/frames.safetensors",
                          video_frames_used=video_frames,
                          video_metadata=dict(total_num_frames=len(video), fps=video_fps),
                          processor_kwargs=video_kwargs or {})
        out = processor(**kwargs)
        tensors = {k: np.ascontiguousarray(v.numpy()) for k, v in out.items() if isinstance(v, torch.Tensor)}
        if video_frames is not None:
            # HF's sampling for this call, recomputed by the video processor's own method
            fresh = VideoMetadata(total_num_frames=len(video), fps=video_fps)
            idx = processor.video_processor.sample_frames(fresh, **(video_kwargs or {}))
            extra["sampled_frame_indices"] = [int(i) for i in idx]
        ids = tensors["input_ids"][0].tolist()
        extra["expanded_prompt"] = processor.tokenizer.decode(ids, skip_special_tokens=False)
        if decode:
            extra["decoded_skip_special"] = processor.tokenizer.decode(ids, skip_special_tokens=True)
            extra["tokens"] = processor.tokenizer.convert_ids_to_tokens(ids)
        for k, v in tensors.items():
            assert v.dtype != np.float64, k
        check(tensors, merge)
        d = D / "cases" / name
        d.mkdir(parents=True)
        save_file(tensors, str(d / "expected.safetensors"))
        write_json(d / "case.json", dict(
            inputs, prompt=prompt,
            outputs={k: dict(dtype=str(v.dtype), shape=list(v.shape)) for k, v in tensors.items()}, **extra))

    ask = text("Describe this image.")
    for f in ("photo.jpg", "exif-rot3.jpg", "exif-rot6.jpg", "rgba.png", "tiny.png", "wide.png"):
        run(f"image-{f.rsplit('.', 1)[0]}", user(image_item(f), ask), [f], decode=f == "photo.jpg")
    run("two-images-vision-id",
        user(text("Compare the two images. "), image_item("tiny.png"), image_item("exif-rot3.jpg"),
             text("Which one is brighter?")),
        ["tiny.png", "exif-rot3.jpg"], template_kwargs=dict(add_vision_id=True))
    run("text-only",
        [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "Write a short story about a robot who learns to paint."},
         {"role": "assistant", "content": "The robot paints the sea."},
         {"role": "user", "content": [text("Thanks! What colour is the sea?")]}],
        decode=True)
    # the template's tool branches: tools in the system turn, an assistant tool call (arguments as a dict, so
    # tojson), two tool responses in one user turn, one with an image
    # (keys in sorted order, as case.json stores them, so that tojson renders the same text from either)
    weather = {"function": {"description": "Weather at a place.", "name": "get_weather",
                            "parameters": {"properties": {"city": {"type": "string"}}, "required": ["city"],
                                           "type": "object"}},
               "type": "function"}
    run("tools",
        [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "What is the weather in Paris and Rome?"},
         {"role": "assistant", "content": "",
          "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                         {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
         {"role": "tool", "content": "Sunny, 21 C."},
         {"role": "tool", "content": [text("Rain, 14 C. "), image_item("tiny.png")]},
         {"role": "user", "content": "Thanks!"}],
        ["tiny.png"], template_kwargs=dict(tools=[weather]))
    describe = text("Describe what happens in this video.")
    # default sampling: fps 2 of a 6 fps clip -> 4 frames [0, 4, 7, 11]; timestamps 0.3 and 1.5
    run("video", user(VIDEO, describe), video_frames=12)
    # fps 2.5: int(12 / 6 * 2.5) = 5 frames, linspace(0, 11, 5) = [0, 2.75, 5.5, 8.25, 11] -> [0, 3, 6, 8, 11], the
    # last frame repeated to 6; the first timestamp (0 + 3/6) / 2 = 0.25 prints "0.2" (Python rounds half to even).
    # (num_frames cannot be asked for: the processor's fps 2 is always passed too, and HF refuses both.)
    run("video-fps2.5-odd", user(VIDEO, describe), video_frames=12, video_kwargs=dict(fps=2.5))
    # 11 frames at fps 3: int(11 / 6 * 3) = 5 frames, linspace(0, 10, 5) = [0, 2.5, 5, 7.5, 10] -> [0, 2, 5, 8, 10]
    # (half to even); smart_resize's t_bar = round(5 / 2) * 2 = 4 keeps 64x64
    run("video-11-frames-fps3", user(VIDEO, describe), video_frames=11, video_kwargs=dict(fps=3))
    # a 4 fps clip sampled at 2 fps: 6 frames, over the 16384-pixel budget -> 32x32 frames, 3 temporal patches;
    # timestamps 0.25 ("0.2"), 1.375 ("1.4"), 2.5
    run("video-fps4-budget", user(VIDEO, describe), video_frames=12, video_fps=4)
    run("image-and-video", user(image_item("tiny.png"), VIDEO, text("Is the square in the picture?")),
        ["tiny.png"], video_frames=12)
    print("wrote", D)
    check_model()


def check_model() -> None:
    from transformers import Qwen3VLForConditionalGeneration

    model = Qwen3VLForConditionalGeneration.from_pretrained(str(ROOT / "test-fixtures" / "qwen3-vl-tiny")).eval()
    for case in sorted((D / "cases").iterdir()):
        t = {k: torch.from_numpy(v) for k, v in load_file(str(case / "expected.safetensors")).items()}
        with torch.no_grad():
            logits = model(**t).logits
        assert torch.isfinite(logits).all(), case
    print("checked the cases against qwen3-vl-tiny")


if __name__ == "__main__":
    main()
