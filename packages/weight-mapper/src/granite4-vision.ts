/**
 * The Granite 4 Vision table (HF 5.17 `granite4_vision` layout, vLLM's
 * Granite4VisionForConditionalGeneration.hf_to_vllm_mapper prefixes), onto
 * the parameters the components list:
 * - vision: `model.vision_tower.` (also `model.vision_tower.vision_model.`), SigLIP with vLLM's
 *   packed `self_attn.qkv_proj`; `post_layernorm` and a pooling `head` are ignored (vLLM builds
 *   the tower with require_post_norm=False: Granite reads hidden states before it);
 * - projectors: `model.layerwise_projectors.{k}.*`, `model.spatial_projectors.{k}.*` (window
 *   Q-Former downsamplers, names kept) and `model.image_newline`, relative to `model.`;
 * - decoder: `model.language_model.` + `lm_head.` as vLLM's GraniteModel, q/k/v -> `qkv_proj`,
 *   gate/up -> `mlp.gate_up_proj`, taken from `mlp.{gate,up}_proj` or the hub's fused
 *   `shared_mlp.input_linear` (gate rows, then up) / `shared_mlp.output_linear`.
 */

import { type ComponentParameters, type ComponentWithConfig, withSources } from './components.js';
import { type ComponentTable, FLOAT_PARAMETER_DTYPES, tableMapper } from './mapping.js';
import { prefix, regex } from './rules.js';
import { firstOf, pack, type Source, tensor } from './source.js';

export type Granite4VisionComponent = 'vision' | 'projectors' | 'decoder';

/** The field of the text decoder's parsed config (@vlmkit/moe-decoder's `GraniteTextConfig`) the rules read. */
export interface GraniteTextMapperConfig {
  readonly tieWordEmbeddings: boolean;
}

/** The components' parameter lists and the decoder's parsed config. */
export interface Granite4VisionComponents {
  /** @vlmkit/vision-tower `expectedSiglipVisionParameters(config.vision)` (no post_layernorm). */
  readonly vision: ComponentParameters;
  /**
   * The projectors under their checkpoint module names (`layerwise_projectors.{k}.*`,
   * `spatial_projectors.{k}.*`: @vlmkit/qformer `expectedParameters` each) and `image_newline`.
   */
  readonly projectors: ComponentParameters;
  /** @vlmkit/moe-decoder `graniteTextExpectedParameters(text)` and `text`. */
  readonly decoder: ComponentWithConfig<GraniteTextMapperConfig>;
}

export function granite4VisionMapping(components: Granite4VisionComponents): ComponentTable<Granite4VisionComponent> {
  return {
    name: 'Granite 4 Vision',
    dtypes: FLOAT_PARAMETER_DTYPES,
    renames: [prefix('model.vision_tower.vision_model.', 'model.vision_tower.')],
    ignore: [
      regex(/^model\.vision_tower\.(post_layernorm|head)\./, ''),
      ...(components.decoder.config.tieWordEmbeddings ? [prefix('lm_head.weight', '')] : []),
    ],
    components: {
      vision: withSources(components.vision.parameters, (name) => packedQkv(`model.vision_tower.${name}`)),
      projectors: withSources(components.projectors.parameters, (name) => tensor(`model.${name}`)),
      decoder: withSources(components.decoder.parameters, decoderSource),
    },
  };
}

/** Maps a Granite 4 Vision checkpoint to the SigLIP tower's, the projectors' and the decoder's parameters. */
export const mapGranite4Vision = tableMapper(granite4VisionMapping);

/** vLLM's packed `qkv_proj` from the hub's q/k/v projections; any other name as is. */
function packedQkv(name: string): Source {
  const x = /^(.*\.self_attn\.)qkv_proj\.(weight|bias)$/.exec(name);
  return x ? pack(...['q', 'k', 'v'].map((p) => `${x[1]}${p}_proj.${x[2]}`)) : tensor(name);
}

/** Where a decoder parameter comes from (vLLM: GraniteForCausalLM.load_weights' stacked_params_mapping). */
function decoderSource(name: string): Source {
  if (name === 'lm_head.weight') return tensor('lm_head.weight'); // untied: the stored head
  const m = `model.language_model.${name}`;
  // granitemoehybrid checkpoints store the dense MLP as `shared_mlp.input_linear` ([gate; up]) / `output_linear`.
  const mlp = /^(.*\.)mlp\.(gate_up_proj|down_proj)\.(weight|bias)$/.exec(m);
  if (mlp) {
    const [, layer, proj, suffix] = mlp;
    const shared = tensor(`${layer}shared_mlp.${proj === 'gate_up_proj' ? 'input_linear' : 'output_linear'}.${suffix}`);
    const own = proj === 'gate_up_proj' ? pack(`${layer}mlp.gate_proj.${suffix}`, `${layer}mlp.up_proj.${suffix}`) : tensor(m);
    return firstOf(own, shared);
  }
  return packedQkv(m);
}
