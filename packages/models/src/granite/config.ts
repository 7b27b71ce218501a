import { describeValue, GraniteConfigFields } from '@vlmkit/config';
import { type GraniteDeepstackLevel, type GraniteTextConfig, graniteDeepstackPlan, graniteTextConfigFromFields } from '@vlmkit/moe-decoder';
import { type WindowQFormerConfig, windowQFormerConfigFromFields } from '@vlmkit/qformer';
import { SiglipVisionConfig } from '@vlmkit/vision-tower';
import type { Size } from './anyres.js';
import { type GraniteTokens, graniteTokens } from './tokens.js';

/** One injected feature level (moe-decoder's `graniteDeepstackPlan`) and its index k among the levels. */
export interface GraniteLevel extends GraniteDeepstackLevel {
  k: number;
}

export interface Granite4VisionConfig {
  readonly vision: SiglipVisionConfig;
  readonly projector: WindowQFormerConfig;
  /** The decoder's config (`graniteTextConfigFromHf`); the levels are checked against its depth. */
  readonly text: GraniteTextConfig;
  readonly pinpoints: readonly Size[];
  readonly imageTokenId: number;
  /** Image placeholder, eos and pad ids (`imageTokenId` is `tokens.image`). */
  readonly tokens: GraniteTokens;
  readonly selectStrategy: 'full' | 'default';
  readonly imageNewline: boolean;
  /** Layerwise levels in deepstack_layer_map order, then the spatial groups. */
  readonly levels: readonly GraniteLevel[];
  readonly raw: Record<string, unknown>;
}

/**
 * The family's config normalizer. Reads a Granite 4 Vision config.json (HF 5.17 layout; the hub's is the
 * same shape) once (`GraniteConfigFields`): the fields the tower, the projector and the decoder share
 * (vision type and sizes, text width) by one reader each, every component's config derived from that
 * read; the deepstack levels through moe-decoder's `graniteDeepstackPlan` (checked against the decoder
 * depth), the rest here. Throws `ConfigError` (from @vlmkit/config) naming the field.
 */
export function granite4VisionConfig(
  json: Record<string, unknown>,
  /** The checkpoint's generation_config.json, when it has one: eos / pad as HF generate reads them. */
  generationConfig?: unknown,
): Granite4VisionConfig {
  const f = GraniteConfigFields.of(json);
  const c = f.top;
  // HF Granite4VisionConfig.__post_init__: no vision_config -> SiglipVisionConfig() with its defaults; a
  // vision_config without model_type -> a CLIP vision config, a tower this package does not build.
  if (f.visionType !== 'siglip_vision_model') {
    f.vision.fail(
      'UNSUPPORTED_CONFIG',
      'model_type',
      `${describeValue(f.visionType)} is not supported; expected one of 'siglip_vision_model'. Granite 4 Vision has a SigLIP tower; HF reads a vision_config without model_type as CLIP.`,
    );
  }
  const vision = SiglipVisionConfig.fromFields(f.vision, f.visionSizes);
  const projector = windowQFormerConfigFromFields(f);
  const text = graniteTextConfigFromFields(f);
  const levels = graniteDeepstackPlan(json, text.numHiddenLayers).map((l, k) => ({ k, ...l }));
  // A level reads hidden_states[visionLayer] of the tower: L + 1 of them (the embeddings, then each layer).
  const states = vision.numHiddenLayers + 1;
  for (const l of levels) {
    if (l.visionLayer < -states || l.visionLayer >= states) {
      c.fail(
        'INCONSISTENT_CONFIG',
        l.kind === 'layerwise' ? `deepstack_layer_map[${l.projector}]` : 'spatial_vision_layer',
        `selects vision hidden state ${l.visionLayer}; expected an index in [${-states}, ${states - 1}] (the tower has ${vision.numHiddenLayers} layers, vision_config.num_hidden_layers).`,
      );
    }
  }
  const tokens = graniteTokens(f, generationConfig);
  const imageKey = c.has('image_token_index') ? 'image_token_index' : 'image_token_id';
  if (tokens.image >= text.vocabSize) {
    c.fail(
      'INCONSISTENT_CONFIG',
      imageKey,
      `(${tokens.image}) must be below text_config.vocab_size (${text.vocabSize}): the placeholder is a token id.`,
    );
  }
  const pinpoints = c.intPairs('image_grid_pinpoints', { min: 1 });
  if (pinpoints.length === 0) {
    c.fail('INVALID_CONFIG', 'image_grid_pinpoints', 'must list at least one [height, width] resolution, found [].');
  }
  return {
    vision,
    projector,
    text,
    // HF's default pinpoints are LLaVA-NeXT's 336-px grid, not Granite's: required.
    pinpoints,
    imageTokenId: tokens.image,
    tokens,
    selectStrategy: c.oneOf('vision_feature_select_strategy', ['default', 'full'], {
      default: 'default',
      from: 'HF Granite4VisionConfig (vLLM: full)',
    }),
    imageNewline: c.bool('use_image_newline_parameter', {
      default: true,
      from: 'HF Granite4VisionModel (LlavaNext: image_newline always present)',
    }),
    levels,
    raw: json,
  };
}
