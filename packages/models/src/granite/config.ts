import { type ConfigObject, fields } from '@vlmkit/config';
import { type GraniteDeepstackLevel, type GraniteTextConfig, graniteDeepstackPlan, graniteTextConfigFromHf } from '@vlmkit/moe-decoder';
import { type WindowQFormerConfig, fromHfConfig as windowFromHf } from '@vlmkit/qformer';
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
 * Reads a Granite 4 Vision config.json (HF 5.17 layout; the hub's is the same
 * shape): each component's part through its own reader, the deepstack levels
 * through moe-decoder's `graniteDeepstackPlan` (checked against the decoder
 * depth), the rest here. Throws `ConfigError` (from @vlmkit/config) naming the field.
 */
export function granite4VisionConfig(
  json: Record<string, unknown>,
  /** The checkpoint's generation_config.json, when it has one: eos / pad as HF generate reads them. */
  generationConfig?: unknown,
): Granite4VisionConfig {
  const c: ConfigObject = fields(json, 'Granite 4 Vision config');
  // HF Granite4VisionConfig.__post_init__: no vision_config -> SiglipVisionConfig() with its defaults; a
  // vision_config without model_type -> a CLIP vision config, a tower this package does not build.
  if (c.has('vision_config')) {
    c.obj('vision_config').oneOf('model_type', ['siglip_vision_model'], {
      default: 'clip_vision_model',
      from: 'HF Granite4VisionConfig.__post_init__',
      code: 'UNSUPPORTED_CONFIG',
      why: 'Granite 4 Vision has a SigLIP tower; HF reads a vision_config without model_type as CLIP.',
    });
  }
  const vision = SiglipVisionConfig.fromHfConfig(c.has('vision_config') ? json : { vision_config: {} });
  const projector = windowFromHf(json);
  const text = graniteTextConfigFromHf(json);
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
  const tokens = graniteTokens(json, generationConfig);
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
