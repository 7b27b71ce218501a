import { type WindowQFormerConfig, fromHfConfig as windowFromHf } from '@vlmkit/qformer';
import { SiglipVisionConfig } from '@vlmkit/vision-tower';
import { ModelError } from '../errors.js';
import type { Size } from './anyres.js';

/** One injected feature level: which vision hidden state, which projector, which LLM layer. */
export interface GraniteLevel {
  k: number;
  kind: 'layerwise' | 'spatial';
  /** Projector index within its kind (spatial: the 2x2 offset TL, TR, BL, BR). */
  projector: number;
  /** Index into the SigLIP hidden states [embeddings, layer 1, ...]; negative counts from the end. */
  visionLayer: number;
  /** The decoder layer before which the level is added. */
  llmLayer: number;
}

export interface Granite4VisionConfig {
  readonly vision: SiglipVisionConfig;
  readonly projector: WindowQFormerConfig;
  readonly pinpoints: readonly Size[];
  readonly imageTokenId: number;
  readonly selectStrategy: 'full' | 'default';
  readonly imageNewline: boolean;
  /** Layerwise levels in deepstack_layer_map order, then the spatial groups. */
  readonly levels: readonly GraniteLevel[];
  readonly raw: Record<string, unknown>;
}

function intPairs(v: unknown, name: string): [number, number][] {
  if (!Array.isArray(v) || !v.every((p) => Array.isArray(p) && p.length === 2 && p.every(Number.isInteger))) {
    throw new ModelError('BAD_CONFIG', `config.json: ${name} must be a list of [int, int] pairs, got ${JSON.stringify(v)}`);
  }
  return v as [number, number][];
}

/** Reads a Granite 4 Vision config.json (HF 5.17 layout; the hub's is the same shape). */
export function granite4VisionConfig(json: Record<string, unknown>): Granite4VisionConfig {
  const vision = SiglipVisionConfig.fromHfConfig(json.vision_config ?? {});
  const projector = windowFromHf(json);
  const deepstack = intPairs(json.deepstack_layer_map, 'deepstack_layer_map');
  const spatialTargets = (json.spatial_target_layers ?? []) as number[];
  const useSpatial = json.use_spatial_sampling !== false;
  const spatialLayer = Number(json.spatial_vision_layer ?? -1);
  const levels: GraniteLevel[] = deepstack.map(([visionLayer, llmLayer], k) => ({
    k,
    kind: 'layerwise',
    projector: k,
    visionLayer,
    llmLayer,
  }));
  if (useSpatial) {
    spatialTargets.forEach((llmLayer, i) => {
      levels.push({ k: levels.length, kind: 'spatial', projector: i, visionLayer: spatialLayer, llmLayer });
    });
  }
  const strategy = json.vision_feature_select_strategy ?? 'default';
  if (strategy !== 'full' && strategy !== 'default') {
    throw new ModelError(
      'BAD_CONFIG',
      `config.json: vision_feature_select_strategy must be 'full' or 'default', got ${JSON.stringify(strategy)}`,
    );
  }
  const imageTokenId = json.image_token_index ?? json.image_token_id;
  if (!Number.isInteger(imageTokenId)) throw new ModelError('BAD_CONFIG', 'config.json has no image_token_index / image_token_id');
  return {
    vision,
    projector,
    pinpoints: intPairs(json.image_grid_pinpoints, 'image_grid_pinpoints'),
    imageTokenId: imageTokenId as number,
    selectStrategy: strategy,
    imageNewline: json.use_image_newline_parameter !== false,
    levels,
    raw: json,
  };
}
