/**
 * The Qwen3-VL / Qwen3-VL-MoE table (HF 5.17 `qwen3_vl`, `qwen3_vl_moe`: `model.visual.*`,
 * `model.language_model.*`, `lm_head.*`; vLLM Qwen3VLForConditionalGeneration.hf_to_vllm_mapper) onto the
 * parameters the components list:
 * - vision: `model.visual.` + the tower's names (HF's module tree: `blocks.{i}.attn.qkv` is packed already), but
 *   the blocks' MLP is ERNIE's: HF's `mlp.linear_fc1/2` are renamed `mlp.fc1/2` (QWEN3_VL_RENAMES);
 * - decoder: `model.language_model.` + vLLM Qwen3's names, q/k/v -> `qkv_proj`, dense gate/up ->
 *   `mlp.gate_up_proj`; the routed experts one by one from the fused `mlp.experts.gate_up_proj` /
 *   `down_proj` (HF 5.17: [E, 2I, H] and [E, H, I]; original Qwen checkpoints store the transposes, which HF
 *   tells apart by shape: `Transpose(1, 2, check_dims=True)` in conversion_mapping.py).
 */

import type { Checkpoint } from '@vlmkit/safetensors';
import { type ComponentParameters, type ComponentWithConfig, withSources } from './components.js';
import { type ComponentTable, FLOAT_PARAMETER_DTYPES, type MapOptions, mapCheckpoint } from './mapping.js';
import { prefix, type RenameRule, regex } from './rules.js';
import { pack, row, type Source, slice, tensor, transpose } from './source.js';

export type Qwen3VlComponent = 'vision' | 'decoder';

/** The fields of the decoder's parsed config (@vlmkit/moe-decoder's `Qwen3VlTextConfig`) the rules read. */
export interface Qwen3VlTextMapperConfig {
  readonly tieWordEmbeddings: boolean;
  readonly hiddenSize: number;
  readonly moe: { readonly numExperts: number; readonly intermediateSize: number } | undefined;
}

/** The components' parameter lists (`expectedParameters`) and the decoder's parsed config. */
export interface Qwen3VlComponents {
  /** The vision tower's and mergers' parameters, under HF's names relative to `model.visual.`. */
  readonly vision: ComponentParameters;
  /** @vlmkit/moe-decoder `qwen3VlTextExpectedParameters(text)` and `text`. */
  readonly decoder: ComponentWithConfig<Qwen3VlTextMapperConfig>;
}

/** HF's names the components name otherwise: the vision blocks' MLP (Qwen3VLVisionMLP) is ERNIE's module, fc1/fc2. */
export const QWEN3_VL_RENAMES: readonly RenameRule[] = [regex(/^(model\.visual\.blocks\.\d+\.mlp\.)linear_fc([12])\./, '$1fc$2.')];

/** A checkpoint tensor's stored shape by name, undefined when absent (the layout of fused experts is read off it). */
export type StoredShape = (name: string) => readonly number[] | undefined;

export function qwen3VlMapping(components: Qwen3VlComponents, stored: StoredShape = () => undefined): ComponentTable<Qwen3VlComponent> {
  const text = components.decoder.config;
  return {
    name: 'Qwen3-VL',
    dtypes: FLOAT_PARAMETER_DTYPES,
    renames: QWEN3_VL_RENAMES,
    // A tied head is embed_tokens; a stored copy is not read (as in vLLM and HF).
    ignore: text.tieWordEmbeddings ? [prefix('lm_head.weight', '')] : [],
    components: {
      vision: withSources(components.vision.parameters, (name) => tensor(`model.visual.${name}`)),
      decoder: withSources(components.decoder.parameters, (name) => decoderSource(name, text, stored)),
    },
  };
}

/** Maps a Qwen3-VL or Qwen3-VL-MoE checkpoint to the vision tower's and the decoder's parameters. */
export async function mapQwen3VL(ckpt: Checkpoint, components: Qwen3VlComponents, opts: MapOptions = {}) {
  const stored: StoredShape = (name) => (ckpt.has(name) ? ckpt.info(name).shape : undefined);
  const mapped = mapCheckpoint(ckpt, qwen3VlMapping(components, stored), opts);
  return { ...mapped.components, report: mapped.report };
}

/** Where a decoder parameter comes from (vLLM: Qwen3MoeForCausalLM.load_weights' stacked and expert mappings). */
function decoderSource(name: string, c: Qwen3VlTextMapperConfig, stored: StoredShape): Source {
  if (name === 'lm_head.weight') return tensor('lm_head.weight'); // untied: the stored head
  const m = `model.language_model.${name}`;
  const qkv = /^(.*\.self_attn\.)qkv_proj\.(weight|bias)$/.exec(m);
  if (qkv) return pack(...['q', 'k', 'v'].map((p) => `${qkv[1]}${p}_proj.${qkv[2]}`));
  const gateUp = /^(.*\.mlp\.)gate_up_proj\.weight$/.exec(m);
  if (gateUp) return pack(`${gateUp[1]}gate_proj.weight`, `${gateUp[1]}up_proj.weight`);
  const expert = /^(.*\.mlp\.experts\.)(\d+)\.(gate|up|down)_proj\.weight$/.exec(m);
  if (expert && c.moe) return expertSource(expert[1]!, Number(expert[2]), expert[3] as 'gate' | 'up' | 'down', c, stored);
  return tensor(m);
}

/**
 * Expert e's [out, in] weight from the fused tensors. HF 5.17 layout: gate = gate_up_proj[e][:I], up =
 * gate_up_proj[e][I:], down = down_proj[e] (each a contiguous range, referenced in place). A stored shape
 * other than HF's ([E, H, 2I], [E, I, H]: original Qwen checkpoints) is the transpose, as HF decides.
 */
function expertSource(experts: string, e: number, proj: 'gate' | 'up' | 'down', c: Qwen3VlTextMapperConfig, stored: StoredShape): Source {
  const { numExperts: E, intermediateSize: I } = c.moe!;
  const H = c.hiddenSize;
  const fused = proj === 'down' ? `${experts}down_proj` : `${experts}gate_up_proj`;
  const hfShape = proj === 'down' ? [E, H, I] : [E, 2 * I, H];
  const shape = stored(fused);
  const hfLayout = shape === undefined || shape.every((d, i) => d === hfShape[i]);
  const one = row(tensor(fused), e); // [2I, H] or [H, I] (transposed: [H, 2I] or [I, H])
  if (proj === 'down') return hfLayout ? one : transpose(one);
  const [start, end] = proj === 'gate' ? [0, I] : [I, 2 * I];
  return hfLayout ? slice(one, 0, start, end) : transpose(slice(one, 1, start, end));
}
