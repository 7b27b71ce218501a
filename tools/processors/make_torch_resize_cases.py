"""Writes test-fixtures/processors/torch-resize/: torchvision's uint8 antialiased BICUBIC resize (the
one HF's torchvision-backed video processors use) on small random and gradient RGB images, up and
down, one axis or both. The TypeScript port (packages/processors/src/video/torch-resize.ts) must
match it byte for byte.

    PYTHONPATH=/tmp/tvsite .venv-ref/bin/python tools/processors/make_torch_resize_cases.py

(torchvision unpacked from its wheel into /tmp/tvsite, as for make_cases.py.)

torchvision 0.28's CUDA wheel cannot load its C++ ops on the CPU-only torch: see make_cases.py for
the two op schemas defined before importing it (resize does not use them).
"""

import json
from pathlib import Path

import numpy as np
import torch

try:
    import torchvision  # noqa: F401
except RuntimeError:
    _tv_lib = torch.library.Library("torchvision", "DEF")
    _tv_lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _tv_lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision  # noqa: F401

import torchvision.transforms.v2.functional as F
from torchvision.transforms import InterpolationMode

OUT = Path(__file__).resolve().parents[2] / "test-fixtures" / "processors" / "torch-resize"

# (height, width) -> (new height, new width): down, up, one axis, tiny, the fixture video's 48x64 -> 56x56.
SIZES = [
    ((48, 64), (56, 56)),
    ((40, 30), (13, 17)),
    ((9, 7), (33, 29)),
    ((31, 31), (31, 12)),
    ((16, 40), (45, 40)),
    ((1, 25), (3, 8)),
    ((37, 2), (11, 1)),
    ((20, 20), (7, 37)),
]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(8)
    cases = []
    for i, ((h, w), (nh, nw)) in enumerate(SIZES):
        if i % 2 == 0:
            im = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        else:
            yy, xx = np.indices((h, w))
            im = np.stack([(yy * 37 + xx * 11) % 256, (xx * 53) % 256, (yy * 29 + 128) % 256], -1).astype(np.uint8)
        t = torch.from_numpy(im).permute(2, 0, 1).contiguous()
        out = F.resize(t, [nh, nw], interpolation=InterpolationMode.BICUBIC, antialias=True)
        name = f"case{i}"
        im.tofile(OUT / f"{name}.in.rgb")
        out.permute(1, 2, 0).contiguous().numpy().tofile(OUT / f"{name}.out.rgb")
        cases.append({"name": name, "height": h, "width": w, "new_height": nh, "new_width": nw})
    meta = {
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cases": cases,
    }
    (OUT / "index.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
