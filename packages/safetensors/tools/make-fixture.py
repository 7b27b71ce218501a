"""Generate src/__fixtures__/python-written.safetensors and its JSON sidecar.

Run once by hand (tests never run Python):
    /work/main/.venv-ref/bin/python packages/safetensors/tools/make-fixture.py
Reference: torch 2.13 (CPU), safetensors 0.8. The sidecar holds the exact
expected values: floats as Python repr strings ('nan', 'inf' included), F16/BF16
also as raw bits, I64 as decimal strings, plus torch's own f32 -> bf16/f16
rounding of edge-case and random f32 bit patterns.
"""
import json
import math
import pathlib
import random
import struct

import safetensors
import torch
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "src" / "__fixtures__"
inf, nan = math.inf, math.nan

floats = [0.0, -0.0, 1.0, -2.5, 0.1, 3.141592653589793, 65504.0, 65520.0, 1e-8, 6e-8,
          -1e-40, 3.3895313892515355e38, inf, -inf, nan, 1e-300]
tensors = {
    "f64": torch.tensor(floats, dtype=torch.float64).reshape(4, 4),
    "f32": torch.tensor(floats, dtype=torch.float64).to(torch.float32).reshape(2, 8),
    "f16": torch.tensor(floats, dtype=torch.float64).to(torch.float16).reshape(16),
    "bf16": torch.tensor(floats, dtype=torch.float64).to(torch.bfloat16).reshape(2, 2, 4),
    "i64": torch.tensor([0, -1, 2**62 + 1, -(2**63), 2**63 - 1, 12345], dtype=torch.int64).reshape(3, 2),
    "i32": torch.tensor([0, -1, 2**31 - 1, -(2**31), 7], dtype=torch.int32),
    "i16": torch.tensor([0, -1, 32767, -32768], dtype=torch.int16).reshape(2, 2),
    "i8": torch.tensor([0, -1, 127, -128, 5], dtype=torch.int8),
    "u8": torch.tensor([0, 1, 128, 255], dtype=torch.uint8),
    "bool": torch.tensor([True, False, False, True, True], dtype=torch.bool),
    "scalar": torch.tensor(2.5, dtype=torch.float32),
    "empty": torch.zeros(0, 3, dtype=torch.int32),
    "model.layers.0.self_attn.q_proj.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 8,
}
save_file(tensors, str(OUT / "python-written.safetensors"), metadata={"format": "pt"})


def enc_float(v):
    return repr(float(v))


expected = {}
for name, t in tensors.items():
    e = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
    flat = t.reshape(-1)
    if t.dtype in (torch.float64, torch.float32):
        e["values"] = [enc_float(v) for v in flat.tolist()]
    elif t.dtype in (torch.float16, torch.bfloat16):
        e["bits"] = [v & 0xFFFF for v in flat.view(torch.int16).tolist()]
        e["values"] = [enc_float(v) for v in flat.to(torch.float32).tolist()]
    elif t.dtype == torch.int64:
        e["values"] = [str(v) for v in flat.tolist()]
    else:
        e["values"] = flat.tolist()
    expected[name] = e

# torch's rounding of f32 -> bf16 / f16 (NaN inputs excluded: torch's NaN bits are path dependent).
edge = [0x00000000, 0x80000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0x3F808000,
        0x3F818000, 0x3F80FFFF, 0x3F808001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F800000,
        0xFF800000, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x33800000, 0x33000000, 0x33000001,
        0x33C00000, 0x387FC000, 0x387FE000, 0x38800000, 0x38000000, 0x2F800000, 0xB3000001]
rng = random.Random(1234)
for _ in range(60):
    edge.append(rng.getrandbits(32))
for _ in range(40):
    edge.append(struct.unpack("<I", struct.pack("<f", rng.gauss(0, 1) * 10 ** rng.randint(-9, 6)))[0])
edge = [b for b in edge if (b >> 23) & 0xFF != 0xFF or (b & 0x7FFFFF) == 0]
x = torch.tensor(edge, dtype=torch.int64).to(torch.int32).view(torch.float32)
conversions = {
    "f32": edge,
    "bf16": [v & 0xFFFF for v in x.to(torch.bfloat16).view(torch.int16).tolist()],
    "f16": [v & 0xFFFF for v in x.to(torch.float16).view(torch.int16).tolist()],
}

sidecar = {
    "generator": f"tools/make-fixture.py with torch {torch.__version__}, safetensors {safetensors.__version__}",
    "metadata": {"format": "pt"},
    "tensors": expected,
    "conversions": conversions,
}
(OUT / "python-written.json").write_text(json.dumps(sidecar, separators=(",", ":")) + "\n")
