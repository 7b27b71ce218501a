// The Granite 4 Vision section of `vlmkit export`'s manifest.json: what a port computes on the host (the
// anyres tiles kept, the packing indices, the image positions, the deepstack levels) and how.
import { GRANITE_DECODER_INPUTS } from '@vlmkit/moe-decoder';
import { windowGeometry } from '@vlmkit/qformer';
import type { Granite4VisionConfig } from './config.js';
import { GRANITE_VISION_ENCODER_INPUTS, GRANITE_VISION_ENCODER_OUTPUTS } from './vision-encoder.js';

export function graniteManifestRules(config: Granite4VisionConfig): Record<string, unknown> {
  return {
    image_token_id: config.tokens.image,
    image_size: config.vision.imageSize,
    image_grid_pinpoints: config.pinpoints,
    tokens_per_tile_side: windowGeometry(config.projector).downsampledSide,
    image_newline: config.imageNewline,
    deepstack: config.levels.map((l) => ({
      output: GRANITE_VISION_ENCODER_OUTPUTS.names.deepstack(l.k),
      decoder_input: GRANITE_DECODER_INPUTS.names.deepstack(l.k),
      llm_layer: l.llmLayer,
    })),
    vision_encoder_inputs: {
      [GRANITE_VISION_ENCODER_INPUTS.names.pixel_values]:
        'float32 [tiles, C, S, S]: the real tiles of every image in order (base tile first): of processor pixel_values [images, max_tiles, C, S, S], image i keeps its first rows*cols + 1 tiles, rows x cols = best fit of image_sizes[i] among image_grid_pinpoints (LLaVA-NeXT select_best_resolution) / image_size',
      [GRANITE_VISION_ENCODER_INPUTS.names.pack_indices]:
        'int64 [image_tokens]: gather rows of [all tiles x side^2 tokens, then image_newline at index tiles*side^2]: per image its base tile tokens, then if it has more tiles the (rows*side) x (cols*side) grid unpadded to the image aspect (HF unpad_image: round to 7 digits, equal margins) row by row, each grid row followed by image_newline; a single-tile image gets one image_newline',
    },
    decoder_inputs: {
      [GRANITE_DECODER_INPUTS.names.image_positions]:
        'int64 [N]: flattened b*S + s of the image_token_id tokens (row-major); [0] in decode steps',
      deepstack_k: 'float32 [N, hidden]: the vision encoder output of the same name; [0, hidden] in decode steps',
      [GRANITE_DECODER_INPUTS.names.position_ids]:
        'int64 [B, S]: cumsum(attention_mask) - 1, and 1 where attention_mask is 0 (HF generate); decode: real tokens so far',
    },
  };
}
