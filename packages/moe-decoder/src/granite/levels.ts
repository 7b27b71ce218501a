import { MoeDecoderError } from '../errors.js';

/**
 * The deepstack levels of a Granite 4 Vision `config.json`: level k's LLM
 * layer (the decoder layer its image features are added before), in the
 * order the vision side produces them: the layerwise projectors in
 * `deepstack_layer_map` order, then the spatial projectors (TL, TR, BL, BR)
 * at `spatial_target_layers` (HF always runs them; vLLM only with
 * `use_spatial_sampling`, so an explicit `false` drops them).
 * vLLM: Granite4VisionForConditionalGeneration._ds_layer_indices; HF: the
 * `deepstack_features` dict of Granite4VisionModel.forward.
 */
export function graniteDeepstackLevels(json: unknown): number[] {
  const fail = (m: string): never => {
    throw new MoeDecoderError('INVALID_CONFIG', `Granite 4 Vision config: ${m}`);
  };
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail('expected a JSON object.');
  const top = json as Record<string, unknown>;
  const map = top['deepstack_layer_map'];
  if (!Array.isArray(map) || map.some((p) => !Array.isArray(p) || p.length !== 2 || !p.every(Number.isInteger))) {
    fail(`'deepstack_layer_map' must be a list of [vision_layer, llm_layer] integer pairs, found ${JSON.stringify(map)}.`);
  }
  const spatial = top['use_spatial_sampling'] === false ? [] : (top['spatial_target_layers'] ?? []);
  if (!Array.isArray(spatial) || !spatial.every(Number.isInteger))
    fail(`'spatial_target_layers' must be a list of integers, found ${JSON.stringify(spatial)}.`);
  return [...(map as number[][]).map((p) => p[1]!), ...(spatial as number[])];
}

/**
 * Checks a level -> LLM layer map against the decoder depth. Two levels on
 * one layer are refused: HF and vLLM key the features by layer, so the later
 * level silently replaces the earlier one, which is never what a config
 * means.
 */
export function checkGraniteLevels(levels: readonly number[], numHiddenLayers: number): void {
  const seen = new Map<number, number>();
  levels.forEach((layer, k) => {
    if (!Number.isInteger(layer) || layer < 0 || layer >= numHiddenLayers) {
      throw new MoeDecoderError(
        'BAD_INPUT',
        `deepstack level ${k} targets LLM layer ${layer}; the decoder has layers 0..${numHiddenLayers - 1}.`,
      );
    }
    const other = seen.get(layer);
    if (other !== undefined) {
      throw new MoeDecoderError(
        'BAD_INPUT',
        `deepstack levels ${other} and ${k} both target LLM layer ${layer}; HF and vLLM keep only the later one. Give each level its own layer (or sum the features yourself).`,
      );
    }
    seen.set(layer, k);
  });
}
