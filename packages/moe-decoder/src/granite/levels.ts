import { fields } from '@vlmkit/config';
import { MoeDecoderError } from '../errors.js';

/** One deepstack level of Granite 4 Vision: which projector makes it from which vision hidden state, and where it goes. */
export interface GraniteDeepstackLevel {
  kind: 'layerwise' | 'spatial';
  /** Projector index within its kind (spatial: the 2x2 offset TL, TR, BL, BR). */
  projector: number;
  /** Index into the SigLIP hidden states [embeddings, layer 1, ...]; negative counts from the end. */
  visionLayer: number;
  /** The decoder layer before which the level is added. */
  llmLayer: number;
}

/** The 2x2 offsets (TL, TR, BL, BR) a spatial projector can take: HF and vLLM build 4 spatial projectors. */
const SPATIAL_OFFSETS = 4;

/**
 * The deepstack levels of a Granite 4 Vision `config.json`, in the order the
 * vision side produces them: the layerwise projectors in
 * `deepstack_layer_map` order, then the spatial projectors (TL, TR, BL, BR)
 * at `spatial_target_layers`, all from `spatial_vision_layer`.
 * vLLM: Granite4VisionForConditionalGeneration._ds_layer_indices; HF: the
 * `deepstack_features` dict of Granite4VisionModel.forward.
 *
 * With `numHiddenLayers` (the decoder's depth) the LLM layers are checked as
 * `checkGraniteLevels` does, as config errors naming the field.
 * Throws `ConfigError` (from @vlmkit/config).
 */
export function graniteDeepstackPlan(json: unknown, numHiddenLayers?: number): GraniteDeepstackLevel[] {
  const c = fields(json, 'Granite 4 Vision config');
  const map = c.intPairs('deepstack_layer_map');
  const levels: GraniteDeepstackLevel[] = map.map(([visionLayer, llmLayer], k) => ({
    kind: 'layerwise',
    projector: k,
    visionLayer,
    llmLayer,
  }));
  // HF has no use_spatial_sampling flag: Granite4VisionModel always runs the spatial projectors. vLLM runs them
  // only with use_spatial_sampling (getattr default False), so an explicit false drops them.
  if (c.bool('use_spatial_sampling', { default: true, from: 'HF Granite4VisionModel (always runs the spatial projectors)' })) {
    const targets = c.ints('spatial_target_layers', { default: [12, 15, 18, 21], from: 'HF Granite4VisionConfig.__post_init__' });
    if (targets.length > SPATIAL_OFFSETS) {
      c.fail(
        'INVALID_CONFIG',
        'spatial_target_layers',
        `has ${targets.length} layers; expected at most 4, one per 2x2 offset (TL, TR, BL, BR).`,
      );
    }
    const visionLayer = c.int('spatial_vision_layer', {
      min: Number.NEGATIVE_INFINITY,
      default: -1,
      from: 'HF Granite4VisionConfig, vLLM',
    });
    targets.forEach((llmLayer, i) => {
      levels.push({ kind: 'spatial', projector: i, visionLayer, llmLayer });
    });
  }
  if (numHiddenLayers !== undefined) {
    checkLevels(
      levels.map((l) => l.llmLayer),
      numHiddenLayers,
      (k, message) => {
        const l = levels[k]!;
        const field = l.kind === 'layerwise' ? `deepstack_layer_map[${l.projector}]` : `spatial_target_layers[${l.projector}]`;
        return c.fail('INCONSISTENT_CONFIG', field, `does not fit the decoder: ${message}`);
      },
    );
  }
  return levels;
}

/** Level k -> the LLM layer it is added before (`graniteDeepstackPlan(json)`'s llmLayer of each level). */
export function graniteDeepstackLevels(json: unknown): number[] {
  return graniteDeepstackPlan(json).map((l) => l.llmLayer);
}

/**
 * Checks a level -> LLM layer map against the decoder depth. Two levels on
 * one layer are refused: HF and vLLM key the features by layer, so the later
 * level silently replaces the earlier one, which is never what a config
 * means. Throws `MoeDecoderError` BAD_INPUT.
 */
export function checkGraniteLevels(levels: readonly number[], numHiddenLayers: number): void {
  checkLevels(levels, numHiddenLayers, (_, message) => {
    throw new MoeDecoderError('BAD_INPUT', message);
  });
}

function checkLevels(levels: readonly number[], numHiddenLayers: number, fail: (k: number, message: string) => never): void {
  const seen = new Map<number, number>();
  levels.forEach((layer, k) => {
    if (!Number.isInteger(layer) || layer < 0 || layer >= numHiddenLayers) {
      fail(k, `deepstack level ${k} targets LLM layer ${layer}; the decoder has layers 0..${numHiddenLayers - 1}.`);
    }
    const other = seen.get(layer);
    if (other !== undefined) {
      fail(
        k,
        `deepstack levels ${other} and ${k} both target LLM layer ${layer}; HF and vLLM keep only the later one. Give each level its own layer (or sum the features yourself).`,
      );
    }
    seen.set(layer, k);
  });
}
