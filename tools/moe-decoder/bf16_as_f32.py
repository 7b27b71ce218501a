#!/usr/bin/env python3
"""Reference numbers for @vlmkit/moe-decoder's bf16-checkpoint test.

The decoder casts bf16 weights to float32 and computes in float32; HF's own
bf16 case (test-fixtures/ernie-tiny/cases/bf16) computes in bf16, which
differs by bf16 arithmetic, not by anything the decoder does. This runs the
same inputs through HF transformers 5.17 with the bf16 checkpoint loaded as
float32 (the same upcast weights), so the test can hold the decoder to a
float32 tolerance.

Writes test-fixtures/moe-decoder/ernie-tiny-bf16-as-f32/expected.safetensors:
  logits [B, S, V], generated_ids [B, N], generated_logits [B, N, V],
  image_embeds [Ni, D] (the float32 run's resampler output: the bf16 case's
  own image_embeds carry bf16 arithmetic from the vision tower)
Deterministic (1 thread, eager attention and experts).

Usage: .venv-ref/bin/python tools/moe-decoder/bf16_as_f32.py
"""

from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

import transformers  # noqa: E402
from transformers import Ernie4_5_VLMoeForConditionalGeneration  # noqa: E402

transformers.logging.set_verbosity_error()
REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "test-fixtures"
OUT = FIX / "moe-decoder" / "ernie-tiny-bf16-as-f32"


@torch.no_grad()
def main() -> None:
    model = Ernie4_5_VLMoeForConditionalGeneration.from_pretrained(
        str(FIX / "ernie-tiny-bf16"), dtype=torch.float32, attn_implementation="eager", experts_implementation="eager"
    ).eval()
    inputs = load_file(str(FIX / "ernie-tiny" / "cases" / "bf16" / "inputs.safetensors"))
    logits = model(**inputs, use_cache=False).logits
    image_embeds = torch.cat(model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"]).pooler_output)
    model.model.rope_deltas = None
    n = 8
    out = model.generate(
        **inputs, max_new_tokens=n, do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0,
        output_logits=True, return_dict_in_generate=True,
    )
    gen = out.sequences[:, inputs["input_ids"].shape[1]:].contiguous()
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(
        {
            "logits": logits.contiguous(),
            "generated_ids": gen,
            "generated_logits": torch.stack(out.logits, dim=1).contiguous(),
            "image_embeds": image_embeds.contiguous(),
        },
        str(OUT / "expected.safetensors"),
    )
    print(f"wrote {OUT / 'expected.safetensors'}: generated {gen.tolist()}")


if __name__ == "__main__":
    main()
