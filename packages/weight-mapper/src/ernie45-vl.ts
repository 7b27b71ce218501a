/**
 * The ERNIE-4.5-VL table: the hub layout (Baidu's names, which transformers
 * 5.17's save_pretrained also writes) onto the parameters the components
 * list (docs/parameter-names.md). vLLM: Ernie4_5_VLMoeForConditionalGeneration.hf_to_vllm_mapper
 * and Ernie4_5_VLMoeForCausalLM.load_weights; HF: conversion_mapping.py "ernie4_5_vl_moe".
 */

import { type ComponentParameters, type ComponentWithConfig, withSources } from './components.js';
import { type ComponentTable, FLOAT_PARAMETER_DTYPES, tableMapper } from './mapping.js';
import { prefix, regex, substring } from './rules.js';
import { pack, range, row, type Source, stack, stackExperts, tensor, transpose } from './source.js';

export type Ernie45VlComponent = 'vision' | 'resampler' | 'decoder';

/**
 * The fields of the text decoder's parsed config (@vlmkit/moe-decoder's
 * `ErnieTextConfig`) the rules read: expert counts (hub experts j < Et are
 * text, Et <= j < Et + Ev vision) and whether lm_head is tied.
 */
export interface ErnieTextMapperConfig {
  readonly tieWordEmbeddings: boolean;
  readonly moe: { readonly numExperts: readonly [number, number] };
}

/** The components' parameter lists (`expectedParameters`) and the decoder's parsed config. */
export interface Ernie45VlComponents {
  /** @vlmkit/vision-tower `expectedErnieVisionParameters(config.vision)`. */
  readonly vision: ComponentParameters;
  /** @vlmkit/resampler `expectedParameters(config.resampler)`. */
  readonly resampler: ComponentParameters;
  /** @vlmkit/moe-decoder `ernieTextExpectedParameters(config.text, { experts })` and `config.text`. */
  readonly decoder: ComponentWithConfig<ErnieTextMapperConfig>;
}

export function ernie45VlMapping(components: Ernie45VlComponents): ComponentTable<Ernie45VlComponent> {
  const text = components.decoder.config;
  return {
    name: 'ERNIE-4.5-VL',
    dtypes: FLOAT_PARAMETER_DTYPES,
    renames: [
      // HF 5.17 saves the tower under model.; Baidu's checkpoints have it at the top.
      prefix('model.vision_model.', 'vision_model.'),
      prefix('model.resampler_model.', 'resampler_model.'),
      // vLLM's resampler renames (nn.Sequential indices -> named modules).
      substring('spatial_linear.0.', 'spatial_linear1.'),
      substring('spatial_linear.2.', 'spatial_linear2.'),
      substring('spatial_linear.3.', 'spatial_norm.'),
      substring('temporal_linear.0.', 'temporal_linear1.'),
      substring('temporal_linear.2.', 'temporal_linear2.'),
      substring('temporal_linear.3.', 'temporal_norm.'),
    ],
    ignore: [
      // Multi-token-prediction heads: not used for inference (vLLM skips names containing "mtp").
      regex(/(^|\.)mtp[._]/, ''),
      // A tied head is embed_tokens; a stored copy is not read (as in vLLM and HF).
      ...(text.tieWordEmbeddings ? [prefix('lm_head.weight', '')] : []),
    ],
    components: {
      vision: withSources(components.vision.parameters, (name) => tensor(`vision_model.${name}`)),
      resampler: withSources(components.resampler.parameters, (name) => tensor(`resampler_model.${name}`)),
      decoder: withSources(components.decoder.parameters, (name) => decoderSource(name, text)),
    },
  };
}

/** Maps an ERNIE-4.5-VL checkpoint (hub layout) to the vision tower's, resampler's and decoder's parameters. */
export const mapErnie45VL = tableMapper(ernie45VlMapping);

const MODALITIES = { text: { k: 0, gate: 'gate.weight' }, vision: { k: 1, gate: 'gate.weight_1' } } as const;

/** Where a decoder parameter comes from (vLLM: Ernie4_5_VLMoeForCausalLM.load_weights). */
function decoderSource(name: string, c: ErnieTextMapperConfig): Source {
  if (name === 'lm_head.weight') return tensor('lm_head.weight'); // untied: the stored head
  const m = `model.${name}`;
  // vLLM's packed modules: qkv_proj from q/k/v, gate_up_proj from gate/up (dense and shared-expert MLPs).
  const qkv = /^(.*\.self_attn\.)qkv_proj\.(weight|bias)$/.exec(m);
  if (qkv) return pack(...['q', 'k', 'v'].map((p) => `${qkv[1]}${p}_proj.${qkv[2]}`));
  const gateUp = /^(.*\.)gate_up_proj\.(weight|bias)$/.exec(m);
  if (gateUp) return pack(`${gateUp[1]}gate_proj.${gateUp[2]}`, `${gateUp[1]}up_proj.${gateUp[2]}`);
  const experts = /^(.*\.mlp\.)(text|vision)_experts(.*)$/.exec(m);
  if (experts) return expertSource(experts[1]!, experts[2] as 'text' | 'vision', experts[3]!, c, name);
  return tensor(m);
}

/**
 * One modality's router and experts. The hub stores all experts of a layer
 * in one list (text j < Et, then vision: j = Et + e, vLLM's moe_offset), the
 * routers as `gate.weight` / `gate.weight_1` transposed ([D, E]), and both
 * correction biases as the rows of `moe_statics.e_score_correction_bias` [2, E].
 */
function expertSource(mlp: string, modality: 'text' | 'vision', rest: string, c: ErnieTextMapperConfig, name: string): Source {
  const { k, gate } = MODALITIES[modality];
  const [et, ev] = c.moe.numExperts;
  const [first, count] = modality === 'text' ? [0, et] : [et, ev];
  const hub = (j: number, proj: string) => `${mlp}experts.${j}.${proj}.weight`;
  if (rest === '_gate.weight') return transpose(tensor(`${mlp}${gate}`));
  if (rest === '.e_score_correction_bias') return row(tensor(`${mlp}moe_statics.e_score_correction_bias`), k);
  // Stacked, for the 'all' experts path: [E, 2I, D] (gate rows, then up, per expert) and [E, D, I].
  if (rest === '.w13_weight') return stackExperts(range(first, first + count), (j) => pack(hub(j, 'gate_proj'), hub(j, 'up_proj')));
  if (rest === '.w2_weight') return stack(range(first, first + count).map((j) => tensor(hub(j, 'down_proj'))));
  // One expert as stored (zero copy), for the sparse path.
  const one = /^\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$/.exec(rest);
  if (one && Number(one[1]) < count) return tensor(hub(first + Number(one[1]), one[2]!));
  return tensor(`model.${name}`);
}
