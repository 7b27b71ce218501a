"""Corrupted image files with HF's reading of each, for tools/processors/fuzz-image-decode.mjs.

    .venv-ref/bin/python tools/processors/fuzz_image_decode.py /tmp/fuzz [rounds]

Each round takes every GIF of test-fixtures/processors/hostile-images/ and every non-GIF file of
image-processors/decode/ and damages a copy (one byte, eight bytes, a truncation, a byte inserted
or a few bytes cut off the end; seeded). For each copy, index.json records
`load_image(path).tobytes()` (as <file>.rgb) or the exception HF raises. Nothing is kept in the
repository; run the .mjs script on the folder to compare decodeImage with it.
"""

from __future__ import annotations

import json
import random
import sys
import warnings
from pathlib import Path

from transformers.image_utils import load_image

ROOT = Path(__file__).resolve().parents[2] / "test-fixtures" / "processors"


def main() -> None:
    out = Path(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    out.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    rng = random.Random(16)
    sources = sorted((ROOT / "hostile-images").glob("*.gif")) + sorted(
        f for f in (ROOT / "image-processors" / "decode").iterdir() if f.suffix not in (".rgb", ".json", ".gif")
    )
    index: dict[str, dict] = {}
    for r in range(rounds):
        for src in sources:
            b = bytearray(src.read_bytes())
            kind = rng.choice(["flip", "flip8", "truncate", "insert", "tail"])
            start = 6 if src.suffix == ".gif" else 16
            if kind == "flip":
                b[rng.randrange(start, len(b))] = rng.randrange(256)
            elif kind == "flip8":
                for _ in range(8):
                    b[rng.randrange(start, len(b))] = rng.randrange(256)
            elif kind == "truncate":
                b = b[: rng.randrange(start, len(b))]
            elif kind == "insert":
                i = rng.randrange(start, len(b))
                b[i:i] = bytes([rng.randrange(256)])
            else:
                b = b[: len(b) - rng.randrange(1, 8)]
            name = f"{r:03d}-{kind}-{src.name}"
            (out / name).write_bytes(b)
            try:
                im = load_image(str(out / name))
                if im.width * im.height > 4_000_000:
                    raise ValueError("over the fuzz's pixel limit")
                (out / f"{name}.rgb").write_bytes(im.tobytes())
                index[name] = {"width": im.width, "height": im.height}
            except Exception as e:  # noqa: BLE001 (any failure is HF's answer)
                index[name] = {"error": f"{type(e).__name__}: {e}"[:200]}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(len(index), "files,", sum("error" in e for e in index.values()), "refused by HF")


if __name__ == "__main__":
    main()
