/**
 * The Granite 4 Vision table (HF 5.17 `granite4_vision` layout, vLLM's
 * Granite4VisionForConditionalGeneration.hf_to_vllm_mapper prefixes):
 * - vision: `model.vision_tower.` (also `model.vision_tower.vision_model.`), SigLIP with vLLM's
 *   packed `self_attn.qkv_proj`; `post_layernorm` and a pooling `head` are ignored (vLLM builds
 *   the tower with require_post_norm=False: Granite reads hidden states before it);
 * - projectors: `model.layerwise_projectors.{k}.*`, `model.spatial_projectors.{k}.*` (window
 *   Q-Former downsamplers, names kept) and `model.image_newline`, relative to `model.`;
 * - decoder: `model.language_model.` + `lm_head.` as vLLM's GraniteModel, q/k/v -> `qkv_proj`,
 *   gate/up -> `mlp.gate_up_proj`, taken from `mlp.{gate,up}_proj` or the hub's fused
 *   `shared_mlp.input_linear` (gate rows, then up) / `shared_mlp.output_linear`.
 */

import type { Weights } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { type Granite4VisionMapperConfig, granite4VisionConfigFromHf } from './granite4-vision-config.js';
import { type MapOptions, type MappingTable, mapCheckpoint, type ParamSpec } from './mapping.js';
import type { MappingReport } from './report.js';
import { prefix, regex } from './rules.js';
import { firstOf, pack, range, tensor } from './source.js';

export type Granite4VisionComponent = 'vision' | 'projectors' | 'decoder';

export function granite4VisionMapping(
  config: Granite4VisionMapperConfig,
): MappingTable & { components: Record<Granite4VisionComponent, readonly ParamSpec[]> } {
  return {
    name: 'Granite 4 Vision',
    renames: [prefix('model.vision_tower.vision_model.', 'model.vision_tower.')],
    ignore: [
      regex(/^model\.vision_tower\.(post_layernorm|head)\./, ''),
      ...(config.text.tieWordEmbeddings ? [prefix('lm_head.weight', '')] : []),
    ],
    components: { vision: visionParams(config), projectors: projectorParams(config), decoder: decoderParams(config) },
  };
}

/** Maps a Granite 4 Vision checkpoint to the SigLIP tower's, the projectors' and the decoder's parameters. */
export async function mapGranite4Vision(
  ckpt: Checkpoint,
  hfConfigJson: unknown,
  opts: MapOptions = {},
): Promise<{ vision: Weights; projectors: Weights; decoder: Weights; report: MappingReport }> {
  const { components, report } = mapCheckpoint<Granite4VisionComponent>(
    ckpt,
    granite4VisionMapping(granite4VisionConfigFromHf(hfConfigJson)),
    opts,
  );
  return { ...components, report };
}

type Add = (name: string, shape: number[], source?: ReturnType<typeof tensor>) => void;

function collector(from: string): { out: ParamSpec[]; add: Add } {
  const out: ParamSpec[] = [];
  return { out, add: (name, shape, source = tensor(`${from}${name}`)) => void out.push({ name, shape, source }) };
}

function visionParams(c: Granite4VisionMapperConfig): ParamSpec[] {
  const from = 'model.vision_tower.';
  const { hidden: d, intermediate: i, patchSize: p, channels } = c.vision;
  const { out, add } = collector(from);
  add('embeddings.patch_embedding.weight', [d, channels, p, p]);
  add('embeddings.patch_embedding.bias', [d]);
  add('embeddings.position_embedding.weight', [(c.vision.imageSize / p) ** 2, d]);
  for (const l of range(0, c.vision.layers)) {
    const L = `encoder.layers.${l}.`;
    const qkv = (suffix: string) => pack(...['q', 'k', 'v'].map((x) => `${from}${L}self_attn.${x}_proj.${suffix}`));
    add(`${L}layer_norm1.weight`, [d]);
    add(`${L}layer_norm1.bias`, [d]);
    add(`${L}self_attn.qkv_proj.weight`, [3 * d, d], qkv('weight'));
    add(`${L}self_attn.qkv_proj.bias`, [3 * d], qkv('bias'));
    add(`${L}self_attn.out_proj.weight`, [d, d]);
    add(`${L}self_attn.out_proj.bias`, [d]);
    add(`${L}layer_norm2.weight`, [d]);
    add(`${L}layer_norm2.bias`, [d]);
    add(`${L}mlp.fc1.weight`, [i, d]);
    add(`${L}mlp.fc1.bias`, [i]);
    add(`${L}mlp.fc2.weight`, [d, i]);
    add(`${L}mlp.fc2.bias`, [d]);
  }
  return out;
}

function projectorParams(c: Granite4VisionMapperConfig): ParamSpec[] {
  const { out, add } = collector('model.');
  const dv = c.vision.hidden;
  const { hidden: dq, intermediate: iq, encoderHidden: de } = c.qformer;
  const projector = (P: string) => {
    // HF: WindowQFormerDownsampler (modeling_granite4_vision.py).
    add(`${P}query`, [1, c.querySide ** 2, dv]);
    add(`${P}image_positions`, [1, c.windowSide ** 2, dv]);
    add(`${P}norm.weight`, [dv]);
    add(`${P}norm.bias`, [dv]);
    add(`${P}out_linear.weight`, [c.text.hidden, dv]);
    add(`${P}out_linear.bias`, [c.text.hidden]);
    add(`${P}qformer.layernorm.weight`, [dq]);
    add(`${P}qformer.layernorm.bias`, [dq]);
    for (const l of range(0, c.qformer.layers)) {
      const L = `${P}qformer.encoder.layer.${l}.`;
      const attention = (A: string, kvIn: number) => {
        for (const [x, inDim] of [
          ['query', dq],
          ['key', kvIn],
          ['value', kvIn],
        ] as const) {
          add(`${L}${A}.attention.${x}.weight`, [dq, inDim]);
          add(`${L}${A}.attention.${x}.bias`, [dq]);
        }
        add(`${L}${A}.output.dense.weight`, [dq, dq]);
        add(`${L}${A}.output.dense.bias`, [dq]);
        add(`${L}${A}.output.LayerNorm.weight`, [dq]);
        add(`${L}${A}.output.LayerNorm.bias`, [dq]);
      };
      attention('attention', dq);
      if (l % c.qformer.crossAttentionFrequency === 0) attention('crossattention', de);
      add(`${L}intermediate_query.dense.weight`, [iq, dq]);
      add(`${L}intermediate_query.dense.bias`, [iq]);
      add(`${L}output_query.dense.weight`, [dq, iq]);
      add(`${L}output_query.dense.bias`, [dq]);
      add(`${L}output_query.LayerNorm.weight`, [dq]);
      add(`${L}output_query.LayerNorm.bias`, [dq]);
    }
  };
  for (const k of range(0, c.layerwiseProjectors)) projector(`layerwise_projectors.${k}.`);
  for (const k of range(0, c.spatialProjectors)) projector(`spatial_projectors.${k}.`);
  if (c.imageNewline) add('image_newline', [c.text.hidden]);
  return out;
}

function decoderParams(c: Granite4VisionMapperConfig): ParamSpec[] {
  const from = 'model.language_model.';
  const t = c.text;
  const d = t.hidden;
  const { out, add } = collector(from);
  add('embed_tokens.weight', [t.vocab, d]);
  for (const l of range(0, t.layers)) {
    const L = `layers.${l}.`;
    const A = `${from}${L}self_attn.`;
    const qkv = (t.heads + 2 * t.kvHeads) * t.headDim;
    add(`${L}input_layernorm.weight`, [d]);
    add(`${L}post_attention_layernorm.weight`, [d]);
    add(`${L}self_attn.qkv_proj.weight`, [qkv, d], pack(`${A}q_proj.weight`, `${A}k_proj.weight`, `${A}v_proj.weight`));
    if (t.attentionBias) add(`${L}self_attn.qkv_proj.bias`, [qkv], pack(`${A}q_proj.bias`, `${A}k_proj.bias`, `${A}v_proj.bias`));
    add(`${L}self_attn.o_proj.weight`, [d, t.heads * t.headDim]);
    if (t.attentionBias) add(`${L}self_attn.o_proj.bias`, [d]);
    const M = `${from}${L}mlp.`;
    const S = `${from}${L}shared_mlp.`;
    add(
      `${L}mlp.gate_up_proj.weight`,
      [2 * t.intermediate, d],
      firstOf(pack(`${M}gate_proj.weight`, `${M}up_proj.weight`), tensor(`${S}input_linear.weight`)),
    );
    add(`${L}mlp.down_proj.weight`, [d, t.intermediate], firstOf(tensor(`${M}down_proj.weight`), tensor(`${S}output_linear.weight`)));
    if (t.mlpBias) {
      add(
        `${L}mlp.gate_up_proj.bias`,
        [2 * t.intermediate],
        firstOf(pack(`${M}gate_proj.bias`, `${M}up_proj.bias`), tensor(`${S}input_linear.bias`)),
      );
      add(`${L}mlp.down_proj.bias`, [d], firstOf(tensor(`${M}down_proj.bias`), tensor(`${S}output_linear.bias`)));
    }
  }
  add('norm.weight', [d]);
  add('lm_head.weight', [t.vocab, d], t.tieWordEmbeddings ? tensor(`${from}embed_tokens.weight`) : tensor('lm_head.weight'));
  return out;
}
