// The Qwen3-VL section of `vlmkit export`'s manifest.json: what a port computes on the host (the vision tower's
// inputs, the placeholder rows, the 3D positions, the deepstack levels) and how.
import { QWEN3VL_DECODER_INPUTS } from '@vlmkit/moe-decoder';
import type { Qwen3VLConfig } from './config.js';
import { QWEN3VL_VISION_ENCODER_INPUTS, QWEN3VL_VISION_ENCODER_OUTPUTS } from './vision-encoder.js';

export function qwen3VlManifestRules(config: Qwen3VLConfig): Record<string, unknown> {
  const V = QWEN3VL_VISION_ENCODER_INPUTS.names;
  const D = QWEN3VL_DECODER_INPUTS.names;
  return {
    image_token_id: config.tokens.image,
    video_token_id: config.tokens.video,
    vision_start_token_id: config.tokens.visionStart,
    vision_end_token_id: config.tokens.visionEnd,
    spatial_merge_size: config.vision.spatialMergeSize,
    mrope_section: config.text.mropeSection,
    deepstack: config.vision.deepstackVisualIndexes.map((block, k) => ({
      output: QWEN3VL_VISION_ENCODER_OUTPUTS.names.deepstack(k),
      decoder_input: D.deepstack(k),
      vision_block: block,
      added_after_llm_layer: k,
    })),
    vision_encoder_inputs: {
      [V.pixel_values]:
        'float32 [patches, C*T*p*p]: the processor pixel_values (pixel_values_videos), patches in spatial-merge-window order',
      [V.pos_indices]:
        'int32 [patches, 4]: rows of pos_embed per patch: the learned side x side grid resampled bilinearly (align_corners) to each grid h x w (HF get_vision_interpolation_indices_and_weights), repeated per temporal patch',
      [V.pos_weights]: 'float32 [patches, 4]: the bilinear weights of those rows, float32 products as torch',
      [V.rotary_cos]:
        'float32 [patches, head_dim/2]: 2D rotary, the first half of the frequencies turned by the patch row, the rest by its column (theta vision rope_theta)',
      [V.rotary_sin]: 'float32 [patches, head_dim/2]: sin of the same angles',
      [V.segment_ids]: 'int32 [patches]: the temporal patch (frame) of each patch, across all grids: attention stays within it',
    },
    decoder_inputs: {
      [D.vision_embeds]: 'float32 [N, hidden]: vision_embeds of the images, then of the videos; [0, hidden] in decode steps',
      [D.vision_positions]: 'int64 [N]: flattened b*S + s of the image_token_id tokens, then of the video_token_id tokens (row-major)',
      deepstack_k: 'float32 [N, hidden]: the vision encoder output of the same name, rows as vision_embeds; [0, hidden] in decode steps',
      [D.position_ids]:
        'int64 [3, B, S]: HF Qwen3VLModel.get_rope_index (each temporal patch of a video its own t = 1 grid; left padding 0); decode: real tokens so far + rope delta on all three axes',
    },
  };
}
