"""GIF, AVIF and SVG inputs for @vlmkit/processors' decodeImage, with HF's reading of each.

Run from the repo root with the reference env:

    .venv-ref/bin/python tools/processors/make_hostile_image_cases.py

Writes test-fixtures/processors/hostile-images/ (deterministic, about 70 KB):

- GIFs built to reach every branch of Pillow 12's GIF reader that HF's
  `load_image` (`exif_transpose(Image.open(f)).convert("RGB")`) meets: a
  transparent index whose palette colour is not black, interlacing, a local
  colour table, a first frame smaller than the screen (what lies outside it),
  a first frame reaching past the screen, multi-frame files with disposal,
  indices past a short colour table, grey-ramp and missing tables (mode L), a
  full LZW table without a clear code, comment / application extensions and
  stray bytes between blocks, and broken files (data cut short, an early end
  code, an invalid code). Some are written by Pillow, the rest by the small
  GIF writer below (its own LZW encoder), so the container can say anything.
- PNG and WebP files that only Pillow's extra checks refuse: a bad chunk CRC
  before the image data (and, accepted by both, after it), an EXIF block
  without a valid TIFF header.
- sample.avif, written by Pillow (sharp decodes it differently: refused).
- index.json: per file, `load_image(path).tobytes()` as `<file>.rgb` with its
  width and height, or the exception HF raises (`error`).
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image
from transformers.image_utils import load_image

OUT = Path(__file__).resolve().parents[2] / "test-fixtures" / "processors" / "hostile-images"


def lzw(indices: list[int], min_code: int, *, clear_when_full: bool = True, end: bool = True) -> bytes:
    """GIF LZW (variable code size, LSB first) of `indices`, as sub-blocks with the terminator."""
    clear, eoi = 1 << min_code, (1 << min_code) + 1
    codes: list[tuple[int, int]] = []
    size = min_code + 1

    def reset() -> dict[tuple[int, ...], int]:
        return {(i,): i for i in range(clear)}

    table = reset()
    nxt = eoi + 1
    codes.append((clear, size))
    w: tuple[int, ...] = ()
    for k in indices:
        wk = w + (k,)
        if wk in table:
            w = wk
            continue
        codes.append((table[w], size))
        if nxt < 4096:
            table[wk] = nxt
            nxt += 1
            if nxt - 1 == (1 << size) and size < 12:
                size += 1
        elif clear_when_full:
            codes.append((clear, size))
            table, nxt, size = reset(), eoi + 1, min_code + 1
        w = (k,)
    if w:
        codes.append((table[w], size))
    if end:
        # The decoder adds each entry one code later than the encoder, and grows its code size
        # on entry 2^size - 1: after the last code it may already read one bit more.
        grown = nxt == 1 << size and size < 12 and nxt < 4096
        codes.append((eoi, size + 1 if grown else size))
    bits = acc = 0
    out = bytearray()
    for code, n in codes:
        acc |= code << bits
        bits += n
        while bits >= 8:
            out.append(acc & 255)
            acc >>= 8
            bits -= 8
    if bits:
        out.append(acc & 255)
    blocks = bytearray()
    for i in range(0, len(out), 255):
        chunk = out[i : i + 255]
        blocks += bytes([len(chunk)]) + chunk
    return bytes(blocks) + b"\0"


def interlace_order(h: int) -> list[int]:
    return list(range(0, h, 8)) + list(range(4, h, 8)) + list(range(2, h, 4)) + list(range(1, h, 2))


def table_bits(n_colours: int) -> int:
    return max(1, (n_colours - 1).bit_length())


def colour_table(colours: list[tuple[int, int, int]]) -> bytes:
    bits = table_bits(len(colours))
    flat = b"".join(bytes(c) for c in colours)
    return flat + b"\0" * (3 * (1 << bits) - len(flat))


def gce(transparent: int | None, disposal: int = 0) -> bytes:
    flags = (disposal << 2) | (1 if transparent is not None else 0)
    return b"!\xf9\x04" + bytes([flags]) + b"\x00\x00" + bytes([transparent or 0]) + b"\0"


def frame(
    pixels: np.ndarray,
    *,
    left: int = 0,
    top: int = 0,
    local: list[tuple[int, int, int]] | None = None,
    interlaced: bool = False,
    min_code: int | None = None,
    **lzw_kw,
) -> bytes:
    h, w = pixels.shape
    flags = 64 if interlaced else 0
    table = b""
    if local is not None:
        flags |= 128 | (table_bits(len(local)) - 1)
        table = colour_table(local)
    rows = interlace_order(h) if interlaced else list(range(h))
    data = [int(v) for r in rows for v in pixels[r]]
    code = min_code if min_code is not None else max(2, int(pixels.max()).bit_length())
    desc = b"," + struct.pack("<HHHHB", left, top, w, h, flags) + table
    return desc + bytes([code]) + lzw(data, code, **lzw_kw)


def gif(width: int, height: int, body: bytes, colours: list[tuple[int, int, int]] | None = None) -> bytes:
    flags = 0
    table = b""
    if colours is not None:
        flags = 128 | (table_bits(len(colours)) - 1)
        table = colour_table(colours)
    return b"GIF89a" + struct.pack("<HHBBB", width, height, flags, 0, 0) + table + body + b";"


def palette(rng: np.random.Generator, n: int) -> list[tuple[int, int, int]]:
    # Bright colours, none black, so a transparent pixel decoded as black shows.
    return [tuple(int(v) for v in rng.integers(40, 256, 3)) for _ in range(n)]  # type: ignore[misc]


def pillow_gif(im: Image.Image, **kw) -> bytes:
    b = io.BytesIO()
    im.save(b, "GIF", **kw)
    return b.getvalue()


def main() -> None:
    rng = np.random.default_rng(16)
    OUT.mkdir(parents=True, exist_ok=True)
    for f in OUT.iterdir():
        f.unlink()
    files: dict[str, bytes] = {}

    # Written by Pillow: a transparent index with a non-black colour, interlaced (Pillow's default
    # from 16 rows) and not.
    pal16 = palette(rng, 16)
    idx = rng.integers(0, 16, (30, 40)).astype(np.uint8)
    idx[5:15, 8:30] = 5
    im = Image.fromarray(idx, "P")
    im.putpalette([c for rgb in pal16 for c in rgb])
    files["pillow-trns.gif"] = pillow_gif(im, transparency=5)
    files["pillow-trns-noninterlaced.gif"] = pillow_gif(im, transparency=5, interlace=False)
    # 256 colours of noise: code sizes up to 12 bits, Pillow's clears when the table fills.
    noise = rng.integers(0, 256, (48, 64)).astype(np.uint8)
    im = Image.fromarray(noise, "P")
    im.putpalette([c for rgb in palette(rng, 256) for c in rgb])
    files["pillow-noise256-trns.gif"] = pillow_gif(im, transparency=0, optimize=False)
    # Two frames, the first transparent with disposal 2: HF reads frame 0 only.
    second = Image.fromarray(((idx + 3) % 16).astype(np.uint8), "P")
    second.putpalette([c for rgb in pal16 for c in rgb])
    first = Image.fromarray(idx, "P")
    first.putpalette([c for rgb in pal16 for c in rgb])
    files["pillow-two-frames.gif"] = pillow_gif(first, save_all=True, append_images=[second], transparency=5, disposal=2)

    # Written here.
    g8 = palette(rng, 8)
    l16 = palette(rng, 16)
    px = rng.integers(0, 16, (19, 23)).astype(np.uint8)
    px[:, 3] = 9
    files["local-table-trns-interlaced.gif"] = gif(23, 19, gce(9) + frame(px, local=l16, interlaced=True), g8)
    px8 = rng.integers(0, 8, (8, 12)).astype(np.uint8)
    later = frame(rng.integers(0, 8, (20, 30)).astype(np.uint8))
    files["offset-frame-trns.gif"] = gif(30, 20, gce(2, disposal=2) + frame(px8, left=5, top=3) + gce(None) + later, g8)
    files["offset-frame-opaque.gif"] = gif(30, 20, gce(None, disposal=3) + frame(px8, left=5, top=3) + later, g8)
    files["frame-past-screen.gif"] = gif(10, 10, gce(1) + frame(rng.integers(0, 8, (8, 10)).astype(np.uint8), left=4, top=4), g8)
    files["short-table.gif"] = gif(12, 7, frame(rng.integers(0, 8, (7, 12)).astype(np.uint8), min_code=3), g8[:4])
    grey = [(i, i, i) for i in range(16)]
    files["grey-ramp.gif"] = gif(9, 6, gce(4) + frame(rng.integers(0, 16, (6, 9)).astype(np.uint8)), grey)
    files["no-table.gif"] = gif(9, 6, frame(rng.integers(0, 16, (6, 9)).astype(np.uint8)))
    # 256 colours of noise: about one code per pixel, so the table is full (4096 entries) after a
    # few thousand pixels and the rest is coded without a clear code.
    big = rng.integers(0, 256, (72, 72)).astype(np.uint8)
    files["full-table-no-clear.gif"] = gif(72, 72, frame(big, clear_when_full=False), palette(rng, 256))
    files["code-size-8-few-colours.gif"] = gif(17, 9, gce(3) + frame(rng.integers(0, 4, (9, 17)).astype(np.uint8), min_code=8), g8[:4])
    ext = b"!\xfe\x05hello\x03abc\0" + b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\0" + b"\0\0"
    files["extensions-and-stray-bytes.gif"] = gif(11, 8, ext + gce(6) + frame(rng.integers(0, 8, (8, 11)).astype(np.uint8)), g8)
    files["no-end-code.gif"] = gif(11, 8, gce(6) + frame(rng.integers(0, 8, (8, 11)).astype(np.uint8), end=False), g8)
    # Broken: Pillow raises for each.
    whole = gif(11, 8, frame(rng.integers(0, 8, (8, 11)).astype(np.uint8)), g8)
    files["broken-cut-short.gif"] = whole[: len(whole) - 12]
    files["broken-early-end.gif"] = gif(11, 8, frame(rng.integers(0, 8, (4, 11)).astype(np.uint8)).replace(b",\0\0\0\0\x0b\0\x04\0", b",\0\0\0\0\x0b\0\x08\0"), g8)
    bad = bytearray(whole)
    start = whole.index(b",") + 10 + 1  # descriptor, code size, first sub-block length
    bad[start + 1] = 0xFF  # codes past the table right after the clear code
    files["broken-invalid-code.gif"] = bytes(bad)
    files["broken-no-image.gif"] = gif(11, 8, gce(1), g8)

    # Checks Pillow makes and libvips does not: a bad CRC in a chunk before the image data (Pillow
    # refuses, libpng drops the chunk), the same after it (neither checks), and a WebP whose EXIF
    # block has no valid TIFF header (exif_transpose raises).
    b = io.BytesIO()
    small = Image.fromarray(rng.integers(0, 256, (6, 8, 3)).astype(np.uint8))
    small.save(b, "PNG")
    png = b.getvalue()
    text = b"tEXt" + b"Comment\0hello"
    chunk = struct.pack(">I", len(text) - 4) + text + struct.pack(">I", (zlib.crc32(text) ^ 1) & 0xFFFFFFFF)
    idat = png.index(b"IDAT") - 4
    iend = png.index(b"IEND") - 4
    files["png-bad-crc-before-idat.png"] = png[:idat] + chunk + png[idat:]
    files["png-bad-crc-after-idat.png"] = png[:iend] + chunk + png[iend:]
    b = io.BytesIO()
    small.save(b, "WEBP", lossless=True, exif=b"Exif\0\0" + b"\xfbM\0*\0\0\0\x08" + bytes(10))
    files["webp-bad-exif-header.webp"] = b.getvalue()

    # AVIF (Pillow 12 writes it with libavif).
    b = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (24, 32, 3)).astype(np.uint8)).save(b, "AVIF", quality=90)
    files["sample.avif"] = b.getvalue()

    index: dict[str, dict] = {}
    for name, data in files.items():
        path = OUT / name
        path.write_bytes(data)
        try:
            rgb = load_image(str(path))
        except Exception as e:  # noqa: BLE001 (any failure is HF's answer)
            index[name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        (OUT / f"{name}.rgb").write_bytes(rgb.tobytes())
        with Image.open(path) as raw:
            mode = raw.mode
        index[name] = {"mode": mode, "width": rgb.width, "height": rgb.height, "rgb": f"{name}.rgb"}
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    for name, e in index.items():
        print(name, e.get("error") or f"{e['mode']} {e['width']}x{e['height']}")


if __name__ == "__main__":
    main()
