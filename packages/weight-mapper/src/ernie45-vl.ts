/**
 * The ERNIE-4.5-VL table: the hub layout (Baidu's names, which transformers
 * 5.17's save_pretrained also writes) onto the names and shapes of
 * docs/parameter-names.md. vLLM: Ernie4_5_VLMoeForConditionalGeneration.hf_to_vllm_mapper
 * and Ernie4_5_VLMoeForCausalLM.load_weights; HF: conversion_mapping.py "ernie4_5_vl_moe".
 */

import type { Weights } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { type Ernie45VlMapperConfig, ernie45VlConfigFromHf } from './ernie45-vl-config.js';
import { type MapOptions, type MappingTable, mapCheckpoint, type ParamSpec } from './mapping.js';
import type { MappingReport } from './report.js';
import { prefix, regex, substring } from './rules.js';
import { pack, range, row, stack, stackExperts, tensor, transpose } from './source.js';

export type Ernie45VlComponent = 'vision' | 'resampler' | 'decoder';

export function ernie45VlMapping(
  config: Ernie45VlMapperConfig,
): MappingTable & { components: Record<Ernie45VlComponent, readonly ParamSpec[]> } {
  const tied = config.text.tieWordEmbeddings;
  return {
    name: 'ERNIE-4.5-VL',
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
      ...(tied ? [prefix('lm_head.weight', '')] : []),
    ],
    components: { vision: visionParams(config), resampler: resamplerParams(config), decoder: decoderParams(config) },
  };
}

/** Maps an ERNIE-4.5-VL checkpoint (hub layout) to the vision tower's, resampler's and decoder's parameters. */
export async function mapErnie45VL(
  ckpt: Checkpoint,
  hfConfigJson: unknown,
  opts: MapOptions = {},
): Promise<{ vision: Weights; resampler: Weights; decoder: Weights; report: MappingReport }> {
  const { components, report } = mapCheckpoint<Ernie45VlComponent>(ckpt, ernie45VlMapping(ernie45VlConfigFromHf(hfConfigJson)), opts);
  return { ...components, report };
}

function specs(from: string, entries: Array<[name: string, shape: number[]]>): ParamSpec[] {
  return entries.map(([name, shape]) => ({ name, shape, source: tensor(`${from}${name}`) }));
}

function visionParams(c: Ernie45VlMapperConfig): ParamSpec[] {
  const { hidden: d, intermediate: i, patchSize: p, inChannels } = c.vision;
  const entries: Array<[string, number[]]> = [['patch_embed.proj.weight', [d, inChannels * p * p]]];
  for (const b of range(0, c.vision.depth)) {
    const at = `blocks.${b}.`;
    entries.push(
      [`${at}norm1.weight`, [d]],
      [`${at}norm1.bias`, [d]],
      [`${at}norm2.weight`, [d]],
      [`${at}norm2.bias`, [d]],
      [`${at}attn.qkv.weight`, [3 * d, d]],
      [`${at}attn.qkv.bias`, [3 * d]],
      [`${at}attn.proj.weight`, [d, d]],
      [`${at}attn.proj.bias`, [d]],
      [`${at}mlp.fc1.weight`, [i, d]],
      [`${at}mlp.fc1.bias`, [i]],
      [`${at}mlp.fc2.weight`, [d, i]],
      [`${at}mlp.fc2.bias`, [d]],
    );
  }
  entries.push(['ln.weight', [d]], ['ln.bias', [d]]);
  return specs('vision_model.', entries);
}

function resamplerParams(c: Ernie45VlMapperConfig): ParamSpec[] {
  const s = c.vision.hidden * c.vision.spatialMerge ** 2; // 4*Dv: one 2x2 block of patches
  const d = c.text.hidden;
  return specs('resampler_model.', [
    ['spatial_linear1.weight', [s, s]],
    ['spatial_linear1.bias', [s]],
    ['spatial_linear2.weight', [s, s]],
    ['spatial_linear2.bias', [s]],
    ['spatial_norm.weight', [s]],
    ['spatial_norm.bias', [s]],
    ['temporal_linear1.weight', [s, s * c.vision.temporalMerge]],
    ['temporal_linear1.bias', [s]],
    ['temporal_linear2.weight', [s, s]],
    ['temporal_linear2.bias', [s]],
    ['temporal_norm.weight', [s]],
    ['temporal_norm.bias', [s]],
    ['mlp.weight', [d, s]],
    ['mlp.bias', [d]],
    ['after_norm.weight', [d]],
  ]);
}

function decoderParams(c: Ernie45VlMapperConfig): ParamSpec[] {
  const t = c.text;
  const d = t.hidden;
  const out: ParamSpec[] = [{ name: 'embed_tokens.weight', shape: [t.vocab, d], source: tensor('model.embed_tokens.weight') }];
  const add = (name: string, shape: number[], source = tensor(`model.${name}`)) => out.push({ name, shape, source });
  const packed = (name: string, shape: number[], parts: string[]) => add(name, shape, pack(...parts.map((p) => `model.${p}`)));

  for (const [i, mlp] of t.mlp.entries()) {
    const L = `layers.${i}.`;
    add(`${L}input_layernorm.weight`, [d]);
    add(`${L}post_attention_layernorm.weight`, [d]);
    const qkv = (t.heads + 2 * t.kvHeads) * t.headDim;
    packed(
      `${L}self_attn.qkv_proj.weight`,
      [qkv, d],
      ['q', 'k', 'v'].map((x) => `${L}self_attn.${x}_proj.weight`),
    );
    if (t.useBias)
      packed(
        `${L}self_attn.qkv_proj.bias`,
        [qkv],
        ['q', 'k', 'v'].map((x) => `${L}self_attn.${x}_proj.bias`),
      );
    add(`${L}self_attn.o_proj.weight`, [d, t.heads * t.headDim]);

    const M = `${L}mlp.`;
    if (mlp.kind === 'dense') {
      packed(`${M}gate_up_proj.weight`, [2 * t.intermediate, d], [`${M}gate_proj.weight`, `${M}up_proj.weight`]);
      add(`${M}down_proj.weight`, [d, t.intermediate]);
      if (t.useBias) {
        packed(`${M}gate_up_proj.bias`, [2 * t.intermediate], [`${M}gate_proj.bias`, `${M}up_proj.bias`]);
        add(`${M}down_proj.bias`, [d]);
      }
      continue;
    }
    // Hub experts: j < Et text, Et <= j < Et + Ev vision (vLLM: load_weights' moe_offset).
    const [et, ev] = t.experts;
    const modalities = [
      { on: mlp.text, key: 'text', gate: 'gate.weight', e: et, inter: t.moeIntermediate[0], experts: range(0, et), biasRow: 0 },
      { on: mlp.vision, key: 'vision', gate: 'gate.weight_1', e: ev, inter: t.moeIntermediate[1], experts: range(et, et + ev), biasRow: 1 },
    ];
    for (const m of modalities.filter((x) => x.on)) {
      const E = `model.${M}experts.`;
      // The hub stores the router transposed, [D, E].
      add(`${M}${m.key}_experts_gate.weight`, [m.e, d], transpose(tensor(`model.${M}${m.gate}`)));
      add(`${M}${m.key}_experts.e_score_correction_bias`, [m.e], row(tensor(`model.${M}moe_statics.e_score_correction_bias`), m.biasRow));
      add(
        `${M}${m.key}_experts.w13_weight`,
        [m.e, 2 * m.inter, d],
        stackExperts(m.experts, (j) => pack(`${E}${j}.gate_proj.weight`, `${E}${j}.up_proj.weight`)),
      );
      add(`${M}${m.key}_experts.w2_weight`, [m.e, d, m.inter], stack(m.experts.map((j) => tensor(`${E}${j}.down_proj.weight`))));
      // Per expert, as stored (zero copy): what the sparse expert path reads, one Gemm per projection.
      m.experts.forEach((j, e) => {
        for (const proj of ['gate_proj', 'up_proj'] as const)
          add(`${M}${m.key}_experts.${e}.${proj}.weight`, [m.inter, d], tensor(`${E}${j}.${proj}.weight`));
        add(`${M}${m.key}_experts.${e}.down_proj.weight`, [d, m.inter], tensor(`${E}${j}.down_proj.weight`));
      });
    }
    if (t.sharedExperts > 0) {
      const is = t.moeIntermediate[0] * t.sharedExperts;
      packed(
        `${M}shared_experts.gate_up_proj.weight`,
        [2 * is, d],
        [`${M}shared_experts.gate_proj.weight`, `${M}shared_experts.up_proj.weight`],
      );
      add(`${M}shared_experts.down_proj.weight`, [d, is]);
    }
  }
  add('norm.weight', [d]);
  add('lm_head.weight', [t.vocab, d], t.tieWordEmbeddings ? tensor('model.embed_tokens.weight') : tensor('lm_head.weight'));
  return out;
}
