"""Generate @vlmkit/processors image references from Pillow 12 and HF transformers 5.17 (PIL backend).

Run from the repo root with the reference env:

    .venv-ref/bin/python tools/processors/make_resize_cases.py

Writes (all deterministic, a few hundred KB in total):

- test-fixtures/processors/resize/: source images and Pillow's `Image.resize`
  outputs (raw interleaved uint8 RGB) for many size pairs and filters, and
  index.json listing them. HF's PIL backend resizes uint8 PIL images with
  `reducing_gap=None` (image_transforms.resize), which is what these are.
- test-fixtures/processors/image-processors/decode/: small image files of every
  PIL mode HF meets and `exif_transpose(Image.open(f)).convert("RGB")` of each
  (HF image_utils.load_image), as raw RGB.
- test-fixtures/processors/image-processors/{ernie,anyres}/: HF's
  Ernie4_5_VLMoeImageProcessorPil and LlavaNextImageProcessorPil (the Granite 4
  Vision image processor) outputs for a few decode images and small configs:
  pixel_values as raw float32 little-endian, grids / image_sizes in JSON.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms, ImageOps

ROOT = Path(__file__).resolve().parents[2] / "test-fixtures" / "processors"
RESIZE = ROOT / "resize"
DECODE = ROOT / "image-processors" / "decode"
ERNIE = ROOT / "image-processors" / "ernie"
ANYRES = ROOT / "image-processors" / "anyres"

FILTERS = {
    "bicubic": Image.Resampling.BICUBIC,
    "bilinear": Image.Resampling.BILINEAR,
    "box": Image.Resampling.BOX,
    "hamming": Image.Resampling.HAMMING,
    "lanczos": Image.Resampling.LANCZOS,
}


def photo(rng: np.random.Generator, h: int, w: int, noise: float = 20.0) -> np.ndarray:
    """Smooth gradients plus noise: photo-like content with edges that exercise the negative lobes."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / max(w, 1), y * 255 / max(h, 1), (x + y) * 127 / (h + w) + 60], -1)
    return np.clip(base + rng.normal(0, noise, (h, w, 3)), 0, 255).astype(np.uint8)


def make_resize() -> None:
    rng = np.random.default_rng(8)
    RESIZE.mkdir(parents=True, exist_ok=True)
    sources = {
        "photo": photo(rng, 45, 67),
        # Full-range noise: the bicubic overshoot reaches the clip table on both ends.
        "noise": rng.integers(0, 256, (40, 40, 3), dtype=np.uint8),
        # Taller than 100x its width: Pillow 12 resizes vertically first for these.
        "tall": photo(rng, 350, 3, 40.0),
        "wide": photo(rng, 4, 300, 40.0),
        "tiny": photo(rng, 5, 7, 60.0),
    }
    sizes = {
        "photo": [(33, 22), (34, 23), (20, 45), (67, 20), (100, 70), (134, 90), (29, 13), (1, 1),
                  (1, 45), (67, 1), (50, 60), (200, 31), (67, 45), (66, 45), (56, 28)],
        "noise": [(17, 23), (80, 80), (39, 41), (13, 13), (41, 39), (120, 7), (28, 56)],
        "tall": [(2, 37), (3, 100), (5, 349), (1, 3)],
        "wide": [(37, 3), (600, 2), (299, 4)],
        "tiny": [(14, 10), (28, 28), (3, 2), (56, 84), (8, 5)],
    }
    extra = {  # other filters on a subset
        "bilinear": [("photo", 33, 22), ("photo", 100, 70), ("noise", 17, 23), ("tiny", 14, 10), ("tall", 2, 37)],
        "box": [("photo", 33, 22), ("noise", 80, 80)],
        "hamming": [("photo", 29, 13), ("noise", 41, 39)],
        "lanczos": [("photo", 34, 23), ("noise", 13, 13), ("tiny", 28, 28)],
    }
    index = {"sources": {}, "cases": []}
    for name, arr in sources.items():
        arr.tofile(RESIZE / f"src-{name}.rgb")
        index["sources"][name] = {"width": arr.shape[1], "height": arr.shape[0], "file": f"src-{name}.rgb"}
    todo = [("bicubic", s, w, h) for s, pairs in sizes.items() for (w, h) in pairs]
    todo += [(f, s, w, h) for f, lst in extra.items() for (s, w, h) in lst]
    for filt, src, w, h in todo:
        out = np.asarray(Image.fromarray(sources[src]).resize((w, h), FILTERS[filt]))
        file = f"out-{src}-{filt}-{w}x{h}.rgb"
        out.tofile(RESIZE / file)
        index["cases"].append({"source": src, "filter": filt, "width": w, "height": h, "file": file})
    (RESIZE / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"resize: {len(index['cases'])} cases")


def png16(arr: np.ndarray, color_type: int) -> bytes:
    """A 16-bit PNG (Pillow cannot write 16-bit RGB/LA), big-endian samples as the PNG spec says."""
    h, w = arr.shape[:2]
    raw = b"".join(b"\x00" + arr[y].astype(">u2").tobytes() for y in range(h))

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def swap_primaries(icc: bytes) -> bytes:
    """The ICC profile with its rXYZ and gXYZ tags' data offsets exchanged (ICC.1 tag table at byte 128)."""
    b = bytearray(icc)
    count = struct.unpack(">I", b[128:132])[0]
    entries = {bytes(b[132 + 12 * i : 136 + 12 * i]): 132 + 12 * i for i in range(count)}
    r, g = entries[b"rXYZ"], entries[b"gXYZ"]
    b[r + 4 : r + 12], b[g + 4 : g + 12] = b[g + 4 : g + 12], b[r + 4 : r + 12]
    return bytes(b)


def make_decode() -> list[str]:
    rng = np.random.default_rng(9)
    DECODE.mkdir(parents=True, exist_ok=True)
    h, w = 23, 31
    rgba = np.concatenate([photo(rng, h, w), rng.integers(0, 256, (h, w, 1), dtype=np.uint8)], -1)
    pal = Image.fromarray(photo(rng, h, w)).quantize(16)
    files: dict[str, bytes] = {}

    def enc(im: Image.Image, fmt: str, **kw) -> bytes:
        b = io.BytesIO()
        im.save(b, fmt, **kw)
        return b.getvalue()

    files["rgb.jpg"] = enc(Image.fromarray(photo(rng, h, w)), "JPEG", quality=90)
    files["rgb420.jpg"] = enc(Image.fromarray(photo(rng, h, w)), "JPEG", quality=75, subsampling=2)
    files["rgb.png"] = enc(Image.fromarray(photo(rng, h, w)), "PNG")
    files["rgba.png"] = enc(Image.fromarray(rgba, "RGBA"), "PNG")
    files["la.png"] = enc(Image.fromarray(rgba[..., [0, 3]], "LA"), "PNG")
    files["l.png"] = enc(Image.fromarray(rgba[..., 0], "L"), "PNG")
    files["l.jpg"] = enc(Image.fromarray(rgba[..., 0], "L"), "JPEG")
    files["p.png"] = enc(pal, "PNG")
    files["p-trns.png"] = enc(pal, "PNG", transparency=3)
    files["p-trns-bytes.png"] = enc(pal, "PNG", transparency=bytes(range(0, 256, 16)))
    g16 = rng.integers(0, 65536, (h, w)).astype(np.uint16)
    g16[0, :5] = [0, 100, 255, 256, 65535]
    files["i16.png"] = enc(Image.fromarray(g16), "PNG")
    files["rgb16.png"] = png16(rng.integers(0, 65536, (h, w, 3)), 2)
    files["la16.png"] = png16(rng.integers(0, 65536, (h, w, 2)), 4)
    files["one.png"] = enc(Image.fromarray(rgba[..., 0] > 128), "PNG")
    for o in [2, 3, 6, 8]:
        ex = Image.Exif()
        ex[0x0112] = o
        files[f"exif{o}.jpg"] = enc(Image.fromarray(photo(rng, h, w)), "JPEG", exif=ex.tobytes(), quality=95)
    files["cmyk.jpg"] = enc(Image.fromarray(rgba, "CMYK"), "JPEG", quality=95)
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    srgb = srgb[:24] + bytes(12) + srgb[36:]  # the creation date (ICC header bytes 24-35), for reproducible files
    files["icc.jpg"] = enc(Image.fromarray(photo(rng, h, w)), "JPEG", quality=90, icc_profile=srgb)
    # A valid RGB profile far from sRGB (red and green primaries swapped): colour management would
    # change every pixel, PIL applies none.
    files["icc-swapped.png"] = enc(Image.fromarray(photo(rng, h, w)), "PNG", icc_profile=swap_primaries(srgb))
    files["rgb.webp"] = enc(Image.fromarray(photo(rng, h, w)), "WEBP", lossless=True)
    files["p.gif"] = enc(pal, "GIF")
    files["rgb.tif"] = enc(Image.fromarray(photo(rng, h, w)), "TIFF")
    # The other orientations (transpose / transverse), and EXIF in PNG and WebP containers.
    for o, fmt, ext in [(4, "JPEG", "jpg"), (5, "JPEG", "jpg"), (7, "JPEG", "jpg"), (6, "PNG", "png"), (8, "WEBP", "webp")]:
        ex = Image.Exif()
        ex[0x0112] = o
        kw = {"quality": 95} if fmt == "JPEG" else {"lossless": True} if fmt == "WEBP" else {}
        files[f"exif{o}.{ext}"] = enc(Image.fromarray(photo(rng, h, w)), fmt, exif=ex.tobytes(), **kw)
    index = {}
    for name, data in files.items():
        (DECODE / name).write_bytes(data)
        im = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))  # HF image_utils.load_image
        mode = im.mode
        rgb = np.asarray(im.convert("RGB"))
        rgb.tofile(DECODE / f"{name}.rgb")
        index[name] = {"mode": mode, "width": rgb.shape[1], "height": rgb.shape[0], "rgb": f"{name}.rgb"}
    (DECODE / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"decode: {len(index)} images")
    return list(index)


def save_f32(path: Path, arr: np.ndarray) -> list[int]:
    a = np.ascontiguousarray(arr, dtype="<f4")
    a.tofile(path)
    return list(a.shape)


def make_ernie() -> None:
    from transformers.models.ernie4_5_vl_moe.image_processing_pil_ernie4_5_vl_moe import (
        Ernie4_5_VLMoeImageProcessorPil,
    )

    ERNIE.mkdir(parents=True, exist_ok=True)
    # Small max_pixels so a 100x150 photo is downscaled and a 23x31 one upscaled to min_pixels.
    config = {"size": {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 12}, "patch_size": 14, "merge_size": 2}
    proc = Ernie4_5_VLMoeImageProcessorPil(**config)
    rng = np.random.default_rng(10)
    big = Image.fromarray(photo(rng, 100, 150))
    big.save(ERNIE / "photo-150x100.png")
    cases = []
    for name, files in [("one-image", ["photo-150x100.png"]), ("two-images", ["../decode/rgba.png", "../decode/exif6.jpg"])]:
        images = [ImageOps.exif_transpose(Image.open(ERNIE / f)) for f in files]
        out = proc(images=images, return_tensors="np")
        shape = save_f32(ERNIE / f"{name}.pixel_values.f32", out["pixel_values"])
        cases.append({"name": name, "images": files, "pixel_values": {"file": f"{name}.pixel_values.f32", "shape": shape},
                      "image_grid_thw": out["image_grid_thw"].tolist()})
    pc = {**config, "image_mean": proc.image_mean, "image_std": proc.image_std, "rescale_factor": proc.rescale_factor,
          "resample": int(proc.resample), "temporal_patch_size": proc.temporal_patch_size}
    (ERNIE / "preprocessor_config.json").write_text(json.dumps(pc, indent=1) + "\n")
    (ERNIE / "index.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"ernie: {len(cases)} cases")


def make_anyres() -> None:
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    ANYRES.mkdir(parents=True, exist_ok=True)
    # Granite 4 Vision's layout (SigLIP mean/std 0.5, shortest_edge = crop = tile) at a 28-pixel tile.
    config = {
        "size": {"shortest_edge": 28},
        "crop_size": {"height": 28, "width": 28},
        "image_grid_pinpoints": [[28, 56], [56, 28], [56, 56], [28, 84], [84, 28], [56, 84]],
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
    }
    proc = LlavaNextImageProcessorPil(**config)
    rng = np.random.default_rng(11)
    Image.fromarray(photo(rng, 40, 90)).save(ANYRES / "photo-90x40.png")
    cases = []
    for name, files in [("wide", ["photo-90x40.png"]), ("two-images", ["../decode/rgb.jpg", "../decode/exif6.jpg"]),
                        ("palette", ["../decode/p-trns.png"])]:
        images = [ImageOps.exif_transpose(Image.open(ANYRES / f)) for f in files]
        out = proc(images=images, return_tensors="np")
        shape = save_f32(ANYRES / f"{name}.pixel_values.f32", out["pixel_values"])
        cases.append({"name": name, "images": files, "pixel_values": {"file": f"{name}.pixel_values.f32", "shape": shape},
                      "image_sizes": np.asarray(out["image_sizes"]).tolist()})
    pc = {**config, "rescale_factor": proc.rescale_factor, "resample": int(proc.resample), "do_pad": True}
    (ANYRES / "preprocessor_config.json").write_text(json.dumps(pc, indent=1) + "\n")
    (ANYRES / "index.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"anyres: {len(cases)} cases")


if __name__ == "__main__":
    make_resize()
    make_decode()
    make_ernie()
    make_anyres()
