"""Generate the @vlmkit/processors reference fixtures from HF transformers 5.17.

Run from the repo root with the reference env (see tools/processors/README.md for
the one extra package, torchvision, that the ERNIE video processor imports):

    PYTHONPATH=/tmp/tvsite .venv-ref/bin/python tools/processors/make_cases.py

Writes test-fixtures/processors/{images,video,ernie,granite}/ (not resize/, which
tools/processors/make_resize_cases.py owns), and copies the ernie/ and granite/ tokenizer,
chat template and processor configs into the tiny checkpoints test-fixtures/ernie-tiny/ and
granite-tiny/ (run it after tools/fixtures/make_fixtures.py, which recreates those folders). Everything is deterministic: images
from fixed seeds, a BPE tokenizer trained on the built-in corpus below, the HF
processors' outputs. Re-running gives byte-identical files.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import torch

# torchvision's CUDA wheel (the only one in the local index) cannot load its C++ ops on
# this CPU-only torch; its import then fails registering fake kernels for ops that do not
# exist. Defining the two op schemas first lets it import; the video processor only uses
# torchvision's resize/PIL conversions, which do not touch these ops.
try:
    import torchvision  # noqa: F401
except RuntimeError:
    _tv_lib = torch.library.Library("torchvision", "DEF")
    _tv_lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _tv_lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision  # noqa: F401

import av
import PIL
import tokenizers
import transformers
from PIL import Image
from safetensors.numpy import save_file
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer
from transformers.image_utils import load_image
from transformers.models.ernie4_5_vl_moe.image_processing_pil_ernie4_5_vl_moe import (
    Ernie4_5_VLMoeImageProcessorPil,
)
from transformers.models.ernie4_5_vl_moe.processing_ernie4_5_vl_moe import Ernie4_5_VLMoeProcessor
from transformers.models.ernie4_5_vl_moe.video_processing_ernie4_5_vl_moe import Ernie4_5_VLMoeVideoProcessor
from transformers.models.granite4_vision.processing_granite4_vision import Granite4VisionProcessor
from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil
from transformers.video_utils import VideoMetadata

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "test-fixtures" / "processors"
FIXTURES = ROOT / "test-fixtures"

# ---------------------------------------------------------------------------------------
# Corpus for the tiny tokenizers (plain English, ASCII only; every prompt below uses only
# characters that occur here, so no text falls outside the 256-token vocabularies).
# ---------------------------------------------------------------------------------------
CORPUS = [
    "The quick brown fox jumps over the lazy dog. A small picture can show a lot: a red "
    "barn, a green field, a blue sky and a few white clouds.",
    "Describe this image in one sentence. What is shown in this picture? What colour is "
    "the object in the middle? How many people are in the photo?",
    "The video shows a square that moves from the left to the right. In the first frame it "
    "is dark; in the last frame it is bright. Describe what happens in this video.",
    "Compare the two images. The first image is a photo of a street at night, the second "
    "image is a drawing of a house with a garden, a tree and a small dog.",
    "You are a helpful assistant. Answer the question about the image as briefly as "
    "possible, and say so if you are not sure.",
    "Numbers such as 0, 1, 2, 3, 4, 5, 6, 7, 8 and 9 appear in dates (2025-01-31), times "
    "(12:45) and prices ($19.99).",
    "The chart has three bars. The tallest bar is on the right; the shortest bar is on the "
    "left. The table lists the name, the size and the price of each item.",
    "Hello! Thanks for the picture. It shows a cat sitting on a wooden chair next to a "
    "window, with a plant in a pot on the floor.\nIs there anything else you want to know?",
    "Write a short story about a robot who learns to paint. The robot paints the sea, the "
    "mountains and the city lights, then gives every painting away.",
    "Question: which of the images is brighter? Answer: the second one, because its "
    "background is white while the first one is mostly grey and black.",
    "User: Picture 1: Picture 2: Video 1: Assistant: System: Thanks! OK? Yes, no; maybe.",
    # Every printable ASCII character, so no ASCII prompt hits <unk>.
    "".join(chr(c) for c in range(32, 127)),
]
# Repeat so that pair counts are stable and large enough for ~170 merges.
TRAIN_TEXT = CORPUS * 4


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def fixture_config(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


# ---------------------------------------------------------------------------------------
# Test images
# ---------------------------------------------------------------------------------------


def smooth_noise(rng: np.random.Generator, h: int, w: int, channels: int = 3) -> np.ndarray:
    """Photo-like uint8 content: smooth gradients + a blob + mild noise (asymmetric, so a
    wrong orientation or a transposed axis shows)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    out = np.empty((h, w, channels), np.float64)
    for c in range(channels):
        fx, fy, ph = rng.uniform(0.5, 2.5), rng.uniform(0.5, 2.5), rng.uniform(0, 6.28)
        out[..., c] = 110 + 60 * np.sin(fx * x / w * 3.14 + ph) * np.cos(fy * y / h * 3.14) + 50 * (x / w) - 30 * (
            y / h
        )
    cy, cx = h * 0.3, w * 0.7
    out += 60 * np.exp(-(((y - cy) / (0.2 * h)) ** 2 + ((x - cx) / (0.15 * w)) ** 2))[..., None]
    out += rng.normal(0, 6, out.shape)
    out[: max(1, h // 8), : max(1, w // 8)] = 250  # bright top-left marker
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def make_images() -> list[dict]:
    """Writes images/ and returns their descriptions (file, mode, stored and displayed size)."""
    d = OUT / "images"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20260801)
    info = []

    def add(name, img: Image.Image, note, **save_kwargs):
        img.save(d / name, **save_kwargs)
        shown = load_image(str(d / name))
        info.append(
            dict(
                file=name,
                mode=img.mode,
                stored_size=[img.width, img.height],
                displayed_size=[shown.width, shown.height],
                note=note,
            )
        )

    photo = Image.fromarray(smooth_noise(rng, 120, 160), "RGB")
    add("photo.jpg", photo, "RGB JPEG, smooth gradients + noise", quality=90)

    for name, orientation, (w, h) in (("exif-rot6.jpg", 6, (96, 64)), ("exif-rot3.jpg", 3, (80, 60))):
        img = Image.fromarray(smooth_noise(rng, h, w), "RGB")
        exif = Image.Exif()
        exif[0x0112] = orientation
        add(name, img, f"RGB JPEG with EXIF Orientation={orientation}", quality=90, exif=exif.tobytes())

    rgb = smooth_noise(rng, 56, 72)
    alpha = np.tile(np.linspace(0, 255, 72), (56, 1))
    alpha[:14] = 255
    alpha[-10:] = 0
    rgba = np.concatenate([rgb, np.rint(alpha).astype(np.uint8)[..., None]], axis=2)
    add("rgba.png", Image.fromarray(rgba, "RGBA"), "RGBA PNG, alpha ramp (opaque top rows, transparent bottom rows)")

    add("gray.png", Image.fromarray(smooth_noise(rng, 70, 50, 1)[..., 0], "L"), "grayscale (L) PNG")

    la = np.stack([smooth_noise(rng, 44, 60, 1)[..., 0], np.tile(np.linspace(255, 40, 60), (44, 1)).astype(np.uint8)], 2)
    add("gray-alpha.png", Image.fromarray(la, "LA"), "grayscale + alpha (LA) PNG")

    idx = (np.add.outer(np.arange(48) // 6, np.arange(64) // 8) % 16).astype(np.uint8)
    pal = Image.fromarray(idx, "P")
    palette = rng.integers(0, 256, (16, 3), dtype=np.uint8)
    palette[3] = (255, 0, 255)
    pal.putpalette(palette.reshape(-1).tolist())
    add("palette.png", pal, "palette (P) PNG, 16 colours, index 3 transparent (tRNS)", transparency=3)

    add("tiny.png", Image.fromarray(smooth_noise(rng, 5, 7), "RGB"), "tiny 7x5 RGB PNG")
    add("wide.png", Image.fromarray(smooth_noise(rng, 40, 900), "RGB"), "very wide 900x40 RGB PNG")
    return info


# ---------------------------------------------------------------------------------------
# Test video: 12 frames, 64x48, 6 fps, lossless (libx264rgb, qp 0) so decoded == drawn.
# ---------------------------------------------------------------------------------------
VIDEO_FPS = 6
VIDEO_FRAMES = 12


def video_frames() -> np.ndarray:
    """Frame i: background level 20*i (+ a fixed gradient), a white 4x8 block at x=4*i and
    a per-frame colour bar, so every sampled frame index is visible in the pixels."""
    frames = np.zeros((VIDEO_FRAMES, 48, 64, 3), np.uint8)
    y, x = np.mgrid[0:48, 0:64]
    for i in range(VIDEO_FRAMES):
        f = np.zeros((48, 64, 3), np.int32)
        f[..., 0] = 20 * i + x
        f[..., 1] = 200 - 10 * i + y
        f[..., 2] = (37 * i) % 256
        f[20:28, 4 * i : 4 * i + 4] = 255
        f[40:, :] = [(i * 53) % 256, (i * 97) % 256, (i * 151) % 256]
        frames[i] = np.clip(f, 0, 255)
    return frames


def make_video() -> np.ndarray:
    d = OUT / "video"
    d.mkdir(parents=True, exist_ok=True)
    frames = video_frames()
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as container:
        stream = container.add_stream("libx264rgb", rate=VIDEO_FPS)
        stream.width, stream.height = 64, 48
        stream.pix_fmt = "rgb24"
        stream.options = {"qp": "0", "preset": "medium", "threads": "1"}
        stream.thread_count = 1
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    (d / "clip.mp4").write_bytes(buf.getvalue())

    with av.open(str(d / "clip.mp4")) as container:
        decoded = np.stack([fr.to_ndarray(format="rgb24") for fr in container.decode(video=0)])
    assert decoded.shape == frames.shape and np.array_equal(decoded, frames), "video is not lossless"
    save_file({"frames": decoded}, str(d / "frames.safetensors"), metadata={"fps": str(VIDEO_FPS)})
    return decoded


# ---------------------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------------------


def train_bpe(pre_tokenizer, decoder, low_specials: list[str], high_specials: list[str], vocab: int, unk):
    """BPE trained on CORPUS: low_specials get ids 0.., the trained vocab fills up to
    vocab - len(high_specials), high_specials take the last ids (the tiny models' image/video
    token ids sit at the top of their 256-entry vocabularies)."""
    tok = Tokenizer(models.BPE(unk_token=unk, fuse_unk=unk is not None))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoder
    target = vocab - len(high_specials)
    trainer = trainers.BpeTrainer(
        vocab_size=target, special_tokens=low_specials, show_progress=False, min_frequency=2
    )
    tok.train_from_iterator(TRAIN_TEXT, trainer=trainer)
    assert tok.get_vocab_size() == target, (tok.get_vocab_size(), target)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in high_specials])
    assert tok.get_vocab_size() == vocab
    return tok


def ernie_tokenizer(cfg: dict) -> Tokenizer:
    # ERNIE-4.5's tokenizer is SentencePiece BPE loaded as LlamaTokenizer (HF convert script
    # convert_ernie4_5_vl_moe_to_hf.py): <unk>=0, <s>=1, </s>=2, "▁" metaspace, no prefix space.
    low = ["<unk>", "<s>", "</s>", "<|begin_of_sentence|>", "<|end_of_sentence|>", "<mask:1>", "<think>", "</think>"]
    ids = {
        cfg["image_token_id"]: "<|IMAGE_PLACEHOLDER|>",
        cfg["image_start_token_id"]: "<|IMAGE_START|>",
        cfg["image_end_token_id"]: "<|IMAGE_END|>",
        cfg["video_start_token_id"]: "<|VIDEO_START|>",
        cfg["video_end_token_id"]: "<|VIDEO_END|>",
        cfg["video_token_id"]: "<|VIDEO_PLACEHOLDER|>",
    }
    vocab = cfg["text_config"]["vocab_size"]
    first = vocab - len(ids)
    assert sorted(ids) == list(range(first, vocab)), "ERNIE multimodal ids must be the top ids"
    high = [ids[i] for i in range(first, vocab)]
    tok = train_bpe(
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never"),
        decoders.Metaspace(replacement="▁", prepend_scheme="never"),
        low,
        high,
        vocab,
        "<unk>",
    )
    # HF's converter adds the digits as non-special added tokens (each digit its own token).
    tok.add_tokens([AddedToken(str(i), normalized=False, special=False) for i in range(10)])
    assert tok.get_vocab_size() == vocab, "digits must already be in the vocabulary"
    return tok


def granite_tokenizer(cfg: dict) -> Tokenizer:
    # Granite 4 uses a GPT-2 style byte-level BPE with role tokens; only the ids the tiny
    # config fixes are taken from it (pad 0, bos 1, eos 2, <image> = image_token_index).
    low = ["<|pad|>", "<|start_of_text|>", "<|end_of_text|>", "<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"]
    vocab = cfg["text_config"]["vocab_size"]
    assert cfg["image_token_index"] == vocab - 1
    return train_bpe(
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        decoders.ByteLevel(),
        low,
        ["<image>"],
        vocab,
        None,
    )


# ---------------------------------------------------------------------------------------
# Chat templates
# ---------------------------------------------------------------------------------------

# Follows DEFAULT_CHAT_TEMPLATE of HF's convert_ernie4_5_vl_moe_to_hf.py (the template of the
# converted checkpoints): "<|begin_of_sentence|>", "User: " + content, images as
# "Picture N:<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>", videos likewise, thinking
# split on </think>, generation prompt "\nAssistant: " + empty think block unless
# enable_thinking. Two artefacts of that source are normalised to their evident intent: its
# string literals span an indented line break (so it emits "\n" + 12 spaces after a system
# message and before an assistant turn; here "\n"), and it closes assistant turns with
# "<|end_of_sentence |>" (stray space; here the real special token "<|end_of_sentence|>").
ERNIE_CHAT_TEMPLATE = """\
{%- set image_count = namespace(value=0) -%}
{%- set video_count = namespace(value=0) -%}
{{- '<|begin_of_sentence|>' -}}
{%- for message in messages -%}
    {%- if message.role in ['system', 'user'] -%}
        {%- if message.role == 'user' -%}{{- 'User: ' -}}{%- endif -%}
        {%- if message.content is string -%}
            {{- message.content -}}
        {%- else -%}
            {%- for item in message.content -%}
                {%- if item.type == 'text' -%}
                    {{- item.text -}}
                {%- elif item.type in ['image_url', 'image'] -%}
                    {%- set image_count.value = image_count.value + 1 -%}
                    {{- 'Picture ' ~ image_count.value ~ ':<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>' -}}
                {%- elif item.type in ['video_url', 'video'] -%}
                    {%- set video_count.value = video_count.value + 1 -%}
                    {{- 'Video ' ~ video_count.value ~ ':<|VIDEO_START|><|VIDEO_PLACEHOLDER|><|VIDEO_END|>' -}}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
        {%- if message.role == 'system' -%}{{- '\\n' -}}{%- endif -%}
    {%- elif message.role == 'assistant' -%}
        {%- set ns = namespace(text='') -%}
        {%- if message.content is string -%}
            {%- set ns.text = message.content -%}
        {%- else -%}
            {%- for item in message.content -%}
                {%- if item.type == 'text' -%}{%- set ns.text = ns.text + item.text -%}{%- endif -%}
            {%- endfor -%}
        {%- endif -%}
        {%- set content = ns.text -%}
        {%- set reasoning = message.reasoning_content if message.reasoning_content is string else '' -%}
        {%- if '</think>' in content -%}
            {%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') -%}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') -%}
        {%- endif -%}
        {%- if reasoning -%}
            {{- '\\nAssistant: <think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n' + content.lstrip('\\n') -}}
        {%- else -%}
            {{- '\\nAssistant: ' + content -}}
        {%- endif -%}
        {{- '<|end_of_sentence|>' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt is not defined or add_generation_prompt -%}
    {{- '\\nAssistant: ' -}}
    {%- if enable_thinking is not defined or enable_thinking is false -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}
    {%- if enable_thinking is defined and enable_thinking is true -%}{{- '<think>' -}}{%- endif -%}
{%- endif -%}
"""

# Granite 4 style roles (<|start_of_role|>role<|end_of_role|>text<|end_of_text|>\n), images
# rendered as "<image>\n" in place, as Granite Vision's templates do. Written for these
# fixtures (the hub template was not available offline); see tools/processors/README.md.
GRANITE_CHAT_TEMPLATE = """\
{%- for message in messages -%}
    {{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' -}}
    {%- if message['content'] is string -%}
        {{- message['content'] -}}
    {%- else -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{- '<image>\\n' -}}
            {%- elif item['type'] == 'text' -%}
                {{- item['text'] -}}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{- '<|end_of_text|>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|start_of_role|>assistant<|end_of_role|>' -}}
{%- endif -%}
"""


def save_tokenizer_files(d: Path, tok: Tokenizer, config: dict, special_map: dict, template: str) -> None:
    tok.save(str(d / "tokenizer.json"))
    # tokenizer.json written by `tokenizers` is compact; re-indent for readable diffs.
    write_json(d / "tokenizer.json", json.loads((d / "tokenizer.json").read_text()))
    write_json(d / "tokenizer_config.json", config)
    write_json(d / "special_tokens_map.json", special_map)
    (d / "chat_template.jinja").write_text(template)


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------


def to_numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def save_case(model_dir: Path, name: str, inputs: dict, outputs, prompt: str, extra: dict) -> dict:
    d = model_dir / "cases" / name
    d.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for k, v in outputs.items():
        a = to_numpy(v)
        if a.dtype == np.float64:
            raise AssertionError(f"{name}:{k} is float64")
        tensors[k] = np.ascontiguousarray(a)
    save_file(tensors, str(d / "expected.safetensors"))
    case = dict(
        inputs,
        prompt=prompt,
        outputs={k: dict(dtype=str(v.dtype), shape=list(v.shape)) for k, v in tensors.items()},
        **extra,
    )
    write_json(d / "case.json", case)
    return tensors


def env_info(**classes) -> dict:
    return dict(
        transformers_version=transformers.__version__,
        tokenizers_version=tokenizers.__version__,
        pillow_version=PIL.__version__,
        torch_version=torch.__version__.split("+")[0],
        torchvision_version=torchvision.__version__.split("+")[0],
        classes={k: f"{v.__module__}.{v.__qualname__}" for k, v in classes.items()},
        image_loading="transformers.image_utils.load_image (PIL.ImageOps.exif_transpose, then Image.convert('RGB'))",
    )


def user(*items) -> list[dict]:
    return [{"role": "user", "content": list(items)}]


def image_item(file):
    return {"type": "image", "path": f"images/{file}"}


def check_ernie(tensors: dict, cfg: dict, merge: int) -> None:
    """Ids fit the tiny vocabulary; placeholder counts and token types agree with the grids."""
    ids = tensors["input_ids"]
    assert ids.max() < cfg["text_config"]["vocab_size"] and ids.min() >= 0
    n_img = int((ids == cfg["image_token_id"]).sum())
    want = int(tensors["image_grid_thw"].prod(-1).sum()) // merge**2 if "image_grid_thw" in tensors else 0
    assert n_img == want, (n_img, want)
    if "image_grid_thw" in tensors:
        assert tensors["pixel_values"].shape[0] == tensors["image_grid_thw"].prod(-1).sum()
    n_vid = int((ids == cfg["video_token_id"]).sum())
    want = int(tensors["video_grid_thw"].prod(-1).sum()) // (merge**2 * 2) if "video_grid_thw" in tensors else 0
    assert n_vid == want, (n_vid, want)
    image = np.isin(ids, [cfg["image_token_id"]])
    video = np.isin(ids, [cfg["video_token_id"]])
    assert (tensors["mm_token_type_ids"] == np.where(image, 1, np.where(video, 2, 0))).all()
    image |= np.isin(ids, [cfg["image_start_token_id"], cfg["image_end_token_id"]])
    video |= np.isin(ids, [cfg["video_start_token_id"], cfg["video_end_token_id"]])
    assert (tensors["moe_mm_token_type_ids"] == np.where(image, 1, np.where(video, 2, 0))).all()


def ernie(images_info: list[dict], frames: np.ndarray) -> None:
    cfg = fixture_config("ernie-tiny")
    d = OUT / "ernie"
    d.mkdir(parents=True, exist_ok=True)

    tok = ernie_tokenizer(cfg)
    mm = dict(
        image_token="<|IMAGE_PLACEHOLDER|>",
        image_start_token="<|IMAGE_START|>",
        image_end_token="<|IMAGE_END|>",
        video_token="<|VIDEO_PLACEHOLDER|>",
        video_start_token="<|VIDEO_START|>",
        video_end_token="<|VIDEO_END|>",
    )
    specials = dict(
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<unk>",
        cls_token="<|begin_of_sentence|>",
        sep_token="<|end_of_sentence|>",
        mask_token="<mask:1>",
    )
    extra = ["<|IMAGE_PLACEHOLDER|>", "<|IMAGE_START|>", "<|IMAGE_END|>", "<|VIDEO_PLACEHOLDER|>",
             "<|VIDEO_START|>", "<|VIDEO_END|>", "<think>", "</think>"]
    tok_config = dict(
        specials,
        **mm,
        tokenizer_class="TokenizersBackend",
        add_bos_token=False,
        add_eos_token=False,
        clean_up_tokenization_spaces=False,
        extra_special_tokens=extra,
        model_max_length=131072,
        padding_side="right",
    )
    save_tokenizer_files(d, tok, tok_config, dict(specials, additional_special_tokens=extra), ERNIE_CHAT_TEMPLATE)

    # Realistic ERNIE values (CLIP mean/std, bicubic, 14px patches, merge 2) with small pixel
    # budgets: images resize to 4..8 merged tokens' worth, video frames to 56x56.
    image_processor = Ernie4_5_VLMoeImageProcessorPil(
        size={"shortest_edge": 28 * 28 * 4, "longest_edge": 28 * 28 * 8}, patch_size=14, merge_size=2,
        temporal_patch_size=1,
    )
    video_processor = Ernie4_5_VLMoeVideoProcessor(
        size={"shortest_edge": 28 * 28 * 4, "longest_edge": 28 * 28 * 8}, patch_size=14, merge_size=2,
        temporal_patch_size=2, min_frames=2, max_frames=8, draw_on_frames=False,
    )
    tokenizer = AutoTokenizer.from_pretrained(str(d))
    assert tokenizer.image_token_id == cfg["image_token_id"], tokenizer.image_token_id
    assert tokenizer.video_token_id == cfg["video_token_id"]
    processor = Ernie4_5_VLMoeProcessor(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor,
        chat_template=ERNIE_CHAT_TEMPLATE,
    )
    write_json(d / "preprocessor_config.json", image_processor.to_dict())
    write_json(d / "video_preprocessor_config.json", video_processor.to_dict())
    # Lets AutoProcessor find the processor class (HF 5 would nest the image/video processor
    # dicts in here; the hub-style separate files above are what the TS loader reads).
    write_json(d / "processor_config.json", dict(processor_class="Ernie4_5_VLMoeProcessor"))

    info = env_info(
        processor=Ernie4_5_VLMoeProcessor, image_processor=Ernie4_5_VLMoeImageProcessorPil,
        video_processor=Ernie4_5_VLMoeVideoProcessor, tokenizer=type(tokenizer),
    )
    merge = image_processor.merge_size

    def run(name, messages, images=(), video=None, video_kwargs=None, decode=False, template_kwargs=None):
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                               **(template_kwargs or {}))
        kwargs = dict(text=[prompt], return_tensors="pt")
        pil = [load_image(str(OUT / "images" / f)) for f in images]
        if pil:
            kwargs["images"] = pil
        inputs = dict(images=[f"images/{f}" for f in images], messages=messages,
                      apply_chat_template=dict(add_generation_prompt=True, tokenize=False, **(template_kwargs or {})))
        if video is not None:
            meta = VideoMetadata(total_num_frames=len(video), fps=VIDEO_FPS, width=64, height=48,
                                 duration=len(video) / VIDEO_FPS, video_backend="pyav")
            kwargs["videos"] = [video]
            kwargs["video_metadata"] = [meta]
            kwargs.update(video_kwargs or {})
            inputs.update(video="video/clip.mp4", video_frames="video/frames.safetensors",
                          video_metadata=dict(total_num_frames=len(video), fps=VIDEO_FPS),
                          processor_kwargs=video_kwargs or {})
        out = processor(**kwargs)
        tensors = {k: v for k, v in out.items()}
        extra = dict(info)
        if video is not None:
            # HF's sampling for this call, recomputed by the processor's own method.
            idx = video_processor.sample_frames(meta, **(video_kwargs or {}))
            extra["sampled_frame_indices"] = [int(i) for i in idx]
        if decode:
            ids = to_numpy(out["input_ids"])[0].tolist()
            extra["decoded"] = tokenizer.decode(ids, skip_special_tokens=False)
            extra["decoded_skip_special"] = tokenizer.decode(ids, skip_special_tokens=True)
            extra["tokens"] = tokenizer.convert_ids_to_tokens(ids)
        saved = save_case(d, name, inputs, tensors, prompt, extra)
        check_ernie(saved, cfg, merge)

    for im in images_info:
        stem = im["file"].rsplit(".", 1)[0]
        run(f"image-{stem}", user(image_item(im["file"]), {"type": "text", "text": "Describe this image."}),
            [im["file"]], decode=stem == "photo")
    run("two-images",
        user({"type": "text", "text": "Compare the two images. "}, image_item("photo.jpg"), image_item("wide.png"),
             {"type": "text", "text": "Which one is brighter?"}),
        ["photo.jpg", "wide.png"])
    run("text-only",
        [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "Write a short story about a robot who learns to paint."},
         {"role": "assistant", "content": "<think>\nThe user wants a story.\n</think>\n\nThe robot paints the sea."},
         {"role": "user", "content": [{"type": "text", "text": "Thanks! What colour is the sea?"}]}],
        decode=True)
    run("text-thinking", user({"type": "text", "text": "How many people are in the photo?"}),
        template_kwargs=dict(enable_thinking=True))
    run("video", user({"type": "video", "path": "video/clip.mp4"},
                      {"type": "text", "text": "Describe what happens in this video."}), video=frames)
    run("image-and-video",
        user(image_item("tiny.png"), {"type": "video", "path": "video/clip.mp4"},
             {"type": "text", "text": "Is the square in the picture?"}),
        ["tiny.png"], video=frames, video_kwargs=dict(fps=1.5))  # 3 sampled frames, last one repeated


GRANITE_IMAGES = ["photo.jpg", "exif-rot6.jpg", "tiny.png", "wide.png"]


def granite_num_tokens(processor, h: int, w: int) -> int:
    return processor._get_number_of_features(h, w, processor.image_processor.size["height"],
                                             processor.image_processor.size["width"])


def granite() -> None:
    cfg = fixture_config("granite-tiny")
    d = OUT / "granite"
    d.mkdir(parents=True, exist_ok=True)
    tok = granite_tokenizer(cfg)
    specials = dict(bos_token="<|start_of_text|>", eos_token="<|end_of_text|>", pad_token="<|pad|>",
                    unk_token="<|end_of_text|>")
    extra = ["<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>", "<image>"]
    tok_config = dict(specials, image_token="<image>", tokenizer_class="TokenizersBackend", add_bos_token=False,
                      add_eos_token=False, clean_up_tokenization_spaces=False, extra_special_tokens=extra,
                      model_max_length=131072, padding_side="left")
    save_tokenizer_files(d, tok, tok_config, dict(specials, additional_special_tokens=extra), GRANITE_CHAT_TEMPLATE)

    side = cfg["vision_config"]["image_size"]
    # Granite Vision's LlavaNext image processor settings (SigLIP: mean/std 0.5, bicubic,
    # square resize + crop to the encoder size) at the tiny encoder's 64 px, and the tiny
    # model's own image_grid_pinpoints (the model unpads with the same list).
    image_processor = LlavaNextImageProcessorPil(
        size={"height": side, "width": side}, crop_size={"height": side, "width": side}, do_center_crop=True,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], image_grid_pinpoints=cfg["image_grid_pinpoints"],
        resample=3, do_pad=True,
    )
    tokenizer = AutoTokenizer.from_pretrained(str(d))
    assert tokenizer.convert_tokens_to_ids("<image>") == cfg["image_token_index"]
    processor = Granite4VisionProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=cfg["vision_config"]["patch_size"],
        vision_feature_select_strategy=cfg["vision_feature_select_strategy"], chat_template=GRANITE_CHAT_TEMPLATE,
        image_token="<image>", num_additional_image_tokens=0, downsample_rate=cfg["downsample_rate"],
    )
    assert processor.image_token_id == cfg["image_token_index"]
    write_json(d / "preprocessor_config.json", image_processor.to_dict())
    write_json(d / "processor_config.json", dict(
        processor_class="Granite4VisionProcessor", patch_size=processor.patch_size,
        vision_feature_select_strategy=processor.vision_feature_select_strategy, image_token="<image>",
        num_additional_image_tokens=0, downsample_rate=processor.downsample_rate))
    info = env_info(processor=Granite4VisionProcessor, image_processor=LlavaNextImageProcessorPil,
                    tokenizer=type(tokenizer))

    def run(name, messages, images=(), decode=False):
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        kwargs = dict(text=[prompt], return_tensors="pt")
        pil = [load_image(str(OUT / "images" / f)) for f in images]
        if pil:
            kwargs["images"] = pil
        out = processor(**kwargs)
        tensors = {k: v for k, v in out.items()}
        extra = dict(info)
        ids = to_numpy(out["input_ids"])[0]
        per_image = [granite_num_tokens(processor, im.height, im.width) for im in pil]
        extra["image_token_counts"] = per_image
        assert int((ids == cfg["image_token_index"]).sum()) == sum(per_image)
        assert ids.max() < cfg["text_config"]["vocab_size"]
        if decode:
            extra["decoded"] = tokenizer.decode(ids.tolist(), skip_special_tokens=False)
            extra["decoded_skip_special"] = tokenizer.decode(ids.tolist(), skip_special_tokens=True)
            extra["tokens"] = tokenizer.convert_ids_to_tokens(ids.tolist())
        inputs = dict(images=[f"images/{f}" for f in images], messages=messages,
                      apply_chat_template=dict(add_generation_prompt=True, tokenize=False))
        save_case(d, name, inputs, tensors, prompt, extra)

    # Decoding/colour conversion is shared by both models and covered by the ERNIE cases;
    # Granite gets the images whose geometry differs for anyres (landscape, portrait after
    # EXIF rotation, tiny, extreme aspect ratio), which keeps test-fixtures/processors small.
    for file in GRANITE_IMAGES:
        stem = file.rsplit(".", 1)[0]
        run(f"image-{stem}", user(image_item(file), {"type": "text", "text": "Describe this image."}),
            [file], decode=stem == "photo")
    run("two-images",
        user(image_item("tiny.png"), image_item("gray.png"), {"type": "text", "text": "Compare the two images."}),
        ["tiny.png", "gray.png"])
    run("text-only",
        [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": [{"type": "text", "text": "Hello! What is shown in this picture?"}]}],
        decode=True)


def check_models() -> None:
    """Feeds every case to the tiny HF models (test-fixtures/ernie-tiny, granite-tiny): HF's
    forward raises when the placeholder count differs from the image/video features, and ids
    must index the 256-entry embeddings. Nothing is written."""
    from safetensors.torch import load_file
    from transformers import Ernie4_5_VLMoeForConditionalGeneration, Granite4VisionForConditionalGeneration

    for checkpoint, cls, sub in (
        ("ernie-tiny", Ernie4_5_VLMoeForConditionalGeneration, "ernie"),
        ("granite-tiny", Granite4VisionForConditionalGeneration, "granite"),
    ):
        model = cls.from_pretrained(str(FIXTURES / checkpoint)).eval()
        for case in sorted((OUT / sub / "cases").iterdir()):
            with torch.no_grad():
                logits = model(**load_file(str(case / "expected.safetensors"))).logits
            assert torch.isfinite(logits).all(), case
        print(f"checked {sub} cases against {checkpoint}")


# The processor files a real checkpoint directory holds next to config.json and the weights, so
# that `Processor.fromPretrained(dir)` and `vlmkit run --model dir` work on the tiny fixture models.
CHECKPOINT_PROCESSOR_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "preprocessor_config.json",
    "processor_config.json",
    "video_preprocessor_config.json",
)


def copy_into_checkpoints() -> None:
    """Copies ernie/ and granite/'s processor files, byte for byte, into test-fixtures/ernie-tiny/ and
    granite-tiny/ (beside config.json and model.safetensors, as on the hub). Only these files are
    written there; tools/fixtures/make_fixtures.py recreates those folders without them, so run this
    script after it."""
    for sub, checkpoint in (("ernie", "ernie-tiny"), ("granite", "granite-tiny")):
        for name in CHECKPOINT_PROCESSOR_FILES:
            src = OUT / sub / name
            if src.exists():
                shutil.copyfile(src, FIXTURES / checkpoint / name)
        print(f"copied {sub}/ processor files into {checkpoint}/")


def main() -> None:
    for sub in ("images", "video", "ernie", "granite"):
        shutil.rmtree(OUT / sub, ignore_errors=True)
    images_info = make_images()
    write_json(OUT / "images" / "index.json", images_info)
    frames = make_video()
    ernie(images_info, frames)
    granite()
    print("wrote", OUT)
    copy_into_checkpoints()
    check_models()


if __name__ == "__main__":
    main()
