// The ERNIE-4.5-VL section of `vlmkit export`'s manifest.json: what a port computes on the host (vision
// rotary tables, slices, 3D position ids, decoder rotary tables) and the numbers it needs to.
import { ERNIE_DECODER_INPUTS } from '@vlmkit/moe-decoder';
import { ernieFrequencyAxes, ropeInverseFrequencies } from '@vlmkit/mrope';
import { ernieVisionHeadDim } from '@vlmkit/vision-tower';
import type { Ernie45VLConfig } from './config.js';
import { ERNIE_VISION_ENCODER_INPUTS } from './vision-encoder.js';

const V = ERNIE_VISION_ENCODER_INPUTS.names;
const D = ERNIE_DECODER_INPUTS.names;

export function ernieManifestRules(config: Ernie45VLConfig): Record<string, unknown> {
  const text = config.text;
  const v = config.vision;
  const r = config.resampler;
  return {
    tokens: {
      image: config.tokens.image,
      video: config.tokens.video,
      image_start: config.tokens.imageStart ?? null,
      image_end: config.tokens.imageEnd ?? null,
      video_start: config.tokens.videoStart ?? null,
      video_end: config.tokens.videoEnd ?? null,
    },
    spatial_merge_size: r.spatialMergeSize,
    temporal_merge_size: r.temporalMergeSize,
    temporal_slicing: r.useTemporalConv,
    vision_encoder_inputs: {
      [V.pixel_values]: 'float32 [num_patches, C*p*p]: the processor pixel_values (images, then separately videos: one encoder run each)',
      [V.segment_ids]: 'int32 [num_patches]: index of the frame each patch belongs to (every frame of every grid in order: 0, 1, 2, ...)',
      [`${V.rotary_cos} / ${V.rotary_sin}`]:
        'float32 [num_patches, head_dim/2]: per patch (h, w) = its row and column in the grid, patches taken in spatial-merge windows (for each frame, for each window row bh, window column bw, ih < m, iw < m: h = bh*m + ih, w = bw*m + iw); column a*head_dim/4 + i is cos/sin(float32(pos_a * vision_rotary.inv_freq[i])), a = 0 for h, 1 for w',
      [`${V.first_slice} / ${V.second_slice}`]:
        'int64 [num_tokens]: for each grid at merged-token offset o with n = h*w/m^2 tokens per frame, pair frames (0,1), (2,3), ... (an image pairs frame 0 with itself) and list o + even*n + j (first) and o + odd*n + j (second), j < n',
    },
    vision_rotary: {
      head_dim: ernieVisionHeadDim(v),
      theta: v.ropeTheta,
      inv_freq: f32List(ropeInverseFrequencies(ernieVisionHeadDim(v) / 2, v.ropeTheta)),
    },
    decoder_inputs: {
      [D.vision_embeds]:
        'float32 [N, hidden]: the vision encoder `embeds` of the images then of the videos, concatenated; [0, hidden] in decode steps',
      [D.vision_positions]:
        'int64 [N]: flattened b*S + s of the image placeholder tokens then of the video placeholder tokens (row-major), [0] in decode steps',
      [D.moe_token_type]:
        'int64 [B, S]: HF moe_mm_token_type_ids (1 for image/video placeholders and their start/end tokens, else 0); 0 in decode steps',
      [`${D.rope_cos} / ${D.rope_sin}`]:
        'float32 [B, S, head_dim/2]: cos/sin(float32(position_ids[text_rotary.axes[i], b, s] * text_rotary.inv_freq[i])) from the 3D position ids',
    },
    position_ids: {
      dims: [3, 'batch', 'seq'],
      rule: `get_rope_index over the unmasked tokens of each row: text tokens get cur on t, h and w, then cur += 1; a run of an image's t*h'*w' placeholders (h' = h/m, w' = w/m; a video: t' = t/temporal_merge_size) gets (cur + frame, cur + y, cur + x), then cur = ${config.reference === 'vllm' ? 'max over the item + 1 (vLLM)' : "cur + max(h', w') (HF 5.17)"}; padding gets 0; rope_delta = (max position + 1) - real tokens`,
      advance: config.reference,
      decode:
        'each generated token: position real_tokens_so_far + rope_delta on all three axes (real_tokens_so_far: ones in the attention mask before this token); vision_embeds [0, hidden], vision_positions [0], moe_token_type 0',
    },
    text_rotary: {
      head_dim: text.headDim,
      theta: text.ropeTheta,
      freq_allocation: text.freqAllocation,
      inv_freq: f32List(ropeInverseFrequencies(text.headDim, text.ropeTheta)),
      axes: Array.from(ernieFrequencyAxes(text.headDim, text.freqAllocation)),
    },
  };
}

function f32List(a: Float32Array): number[] {
  return Array.from(a);
}
