/**
 * Table-driven config validation: every config.json field the readers read
 * (found by watching them read the fixture configs through a Proxy) gets the
 * variants missing, wrong type and out of range; then a table of
 * contradictory combinations. Each variant must end in a typed error naming
 * the field (its dotted path) and saying what was expected and what was
 * found, or, for a missing field, be read exactly as HF transformers 5.17
 * reads the config without it: the reader's result equals its result on the
 * config with HF's value written in (test-fixtures/config-fields/
 * hf-defaults.json, from tools/fixtures/hf_config_defaults.py).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { granite4VisionConfig } from './granite/config.js';
import { FIXTURES } from './test-utils/fixtures.js';

type Json = Record<string, unknown>;
type Model = 'ernie-tiny' | 'granite-tiny';

const READERS: Record<Model, (json: Json) => unknown> = {
  'ernie-tiny': (json) => ernie45VLConfig(json),
  'granite-tiny': (json) => granite4VisionConfig(json),
};

const HF = JSON.parse(readFileSync(join(FIXTURES, 'config-fields', 'hf-defaults.json'), 'utf8')) as Record<
  Model,
  Record<string, { value?: unknown; absent?: true; error?: string }>
>;

const base = (model: Model): Json => JSON.parse(readFileSync(join(FIXTURES, model, 'config.json'), 'utf8')) as Json;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Dotted paths of the leaves of a config (nested objects walked, lists are leaves), as the HF table has them. */
function leaves(json: Json, prefix = ''): string[] {
  return Object.entries(json).flatMap(([k, v]) =>
    isObject(v) && Object.keys(v).length > 0 ? leaves(v, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}

/** The dotted paths the reader gets from the config (a Proxy records every own key read). */
function fieldsRead(model: Model, absent?: Set<string>): Set<string> {
  const read = new Set<string>();
  const wrap = (obj: Json, prefix: string): Json =>
    new Proxy(obj, {
      get(target, key, receiver) {
        if (typeof key !== 'string') return Reflect.get(target, key, receiver);
        if (!Object.hasOwn(target, key)) {
          if (!(key in Object.prototype) && key !== 'toJSON') absent?.add(`${prefix}${key}`);
          return Reflect.get(target, key, receiver);
        }
        const path = `${prefix}${key}`;
        read.add(path);
        const v = target[key];
        return isObject(v) ? wrap(v, `${path}.`) : v;
      },
    });
  READERS[model](wrap(base(model), ''));
  return read;
}

/** A copy of the config with the field at `path` replaced (or deleted when `value` is DELETE). */
const DELETE = Symbol('delete');
function edit(model: Model, path: string, value: unknown, json: Json = base(model)): Json {
  const keys = path.split('.');
  let parent = json;
  for (const k of keys.slice(0, -1)) parent = parent[k] as Json;
  if (value === DELETE) delete parent[keys.at(-1)!];
  else parent[keys.at(-1)!] = value;
  return json;
}

function outcome(model: Model, json: Json): { ok: true; value: unknown } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: READERS[model](json) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The parsed config without `raw` (the JSON itself, which differs by construction). */
function comparable(value: unknown): unknown {
  if (!isObject(value)) return value;
  const { raw: _raw, ...rest } = value;
  return rest;
}

/** A typed error naming the field and saying what was expected and what was found. */
function expectFieldError(error: unknown, path: string): void {
  expect(error, `expected a typed error naming ${path}`).toBeInstanceOf(ConfigError);
  const e = error as ConfigError;
  expect(e.message).toContain(path);
  expect(e.message).toMatch(/expected|must|is not supported|exceeds|does not|is missing/i);
  expect(e.message).toMatch(/found|got|is missing|is not supported|\(\d+\)|\d/i);
}

/** Wrong-type and out-of-range values for a field, from its value in the fixture. */
function badValues(path: string, v: unknown): { wrongType: unknown; outOfRange: unknown[] } {
  const last = path.split('.').at(-1)!;
  if (typeof v === 'number') {
    const wrongType = String(v);
    // Epsilons, multipliers, scalings, thetas (JSON writes 2.0 as 2): > 0.
    if (!Number.isInteger(v) || /eps|multiplier|scaling|theta|norm_min/.test(last)) return { wrongType, outOfRange: [0, -v] };
    if (v < 0) return { wrongType, outOfRange: [-1000, 1000] }; // layer indices: inside the tower
    // Token ids, counts that may be 0 (shared experts): negative and fractional; sizes: also 0.
    const zeroOk = /token_id|token_index|num_shared_experts|pad_token/.test(last);
    return { wrongType, outOfRange: [...(zeroOk ? [] : [0]), -1, v + 0.5] };
  }
  if (typeof v === 'string') return { wrongType: 7, outOfRange: ['bogus'] };
  if (typeof v === 'boolean') return { wrongType: String(v), outOfRange: [] };
  if (Array.isArray(v)) {
    const first = v[0];
    const bad = Array.isArray(first)
      ? [[-5, -5], ...v.slice(1)]
      : typeof first === 'string'
        ? ['bogus', ...v.slice(1)]
        : [-1000, ...v.slice(1)];
    // One entry short only where the length is fixed (mrope_section: 3; mlp_layer_types: one per layer).
    const short = /mrope_section|mlp_layer_types/.test(last) ? [v.slice(0, -1)] : [];
    // An empty list is valid where HF reads it as "none" (no layerwise or spatial projectors).
    const empty = /deepstack_layer_map|spatial_target_layers/.test(last) ? [] : [[]];
    return { wrongType: 'x', outOfRange: [...empty, ...short, bad] };
  }
  return { wrongType: 'x', outOfRange: [] };
}

for (const model of ['ernie-tiny', 'granite-tiny'] as const) {
  const read = fieldsRead(model);
  const table = leaves(base(model)).filter((p) => read.has(p));

  describe(`${model} config.json fields`, () => {
    it('the readers read most fields of the fixture config; the rest are named here', () => {
      const unread = leaves(base(model)).filter((p) => !read.has(p));
      // Fields only training or HF bookkeeping uses (dropout, initializer_range, use_cache, ...).
      for (const p of unread) expect(p).toMatch(UNREAD_OK);
      expect(table.length).toBeGreaterThan(20);
    });

    describe.each(table)('%s', (path) => {
      const value = (path.split('.') as string[]).reduce<unknown>((o, k) => (o as Json)[k], base(model));
      const { wrongType, outOfRange } = badValues(path, value);

      it('missing: a typed error naming it, or HF 5.17 default', () => {
        const r = outcome(model, edit(model, path, DELETE));
        if (!r.ok) return expectFieldError(r.error, path);
        const hf = HF[model][path];
        expect(hf, `${path} accepted when missing, but the HF table does not know it`).toBeDefined();
        expect(hf!.error, `HF refuses a config without ${path}: ${hf!.error}`).toBeUndefined();
        if (hf!.absent || hf!.value === null) {
          // HF keeps no value (it derives one where used, e.g. head_dim = hidden_size / heads): accepted by design.
          expect(ACCEPTED_WITHOUT_HF_VALUE).toContain(`${model}:${path}`);
          return;
        }
        const withHf = outcome(model, edit(model, path, hf!.value));
        expect(withHf.ok, `HF's value ${JSON.stringify(hf!.value)} for ${path} is refused, but its absence is accepted`).toBe(true);
        expect(comparable(r.value)).toEqual(comparable((withHf as { value: unknown }).value));
      });

      it(`wrong type (${JSON.stringify(wrongType)}): a typed error naming it`, () => {
        const r = outcome(model, edit(model, path, wrongType));
        expect(r.ok, `${path} = ${JSON.stringify(wrongType)} was accepted`).toBe(false);
        expectFieldError((r as { error: unknown }).error, path);
      });

      it.each(outOfRange.map((v) => [JSON.stringify(v), v]))('out of range (%s): a typed error naming it', (_, bad) => {
        const r = outcome(model, edit(model, path, bad));
        expect(r.ok, `${path} = ${JSON.stringify(bad)} was accepted`).toBe(false);
        expectFieldError((r as { error: unknown }).error, path);
      });
    });
  });
}

/**
 * Fields the readers look for that the fixture configs do not have (the other layout's names, optional
 * features, top-level fallbacks): each is given a value of the wrong type, which must be a typed error naming it.
 */
for (const model of ['ernie-tiny', 'granite-tiny'] as const) {
  const absent = new Set<string>();
  fieldsRead(model, absent);
  describe(`${model} config.json fields the fixture lacks`, () => {
    it.each([...absent])('%s = "x": a typed error naming it', (path) => {
      const r = outcome(model, edit(model, path, 'x'));
      expect(r.ok, `${path} = "x" was accepted`).toBe(false);
      expectFieldError((r as { error: unknown }).error, path);
    });
  });
}

/** Fields the readers do not read: HF keeps them for training, generation defaults or bookkeeping. */
const UNREAD_OK =
  /^(architectures|dtype|transformers_version|model_type|(text_config|vision_config|qformer_config)\.(initializer_range|model_type|use_cache|output_router_logits|router_aux_loss_coef|bos_token_id|max_position_embeddings|attention_dropout|hidden_dropout_prob|attention_probs_dropout_prob|vocab_size|pad_token_id|use_qformer_text_input|vision_use_head)|projector_dropout|image_seq_length|vision_feature_layer)$/;

/** Missing fields HF keeps no value for, read as vlmkit documents (each reason in the reader). */
const ACCEPTED_WITHOUT_HF_VALUE: string[] = [
  // HF's attention derives hidden_size // num_attention_heads; the reader does the same.
  'ernie-tiny:text_config.head_dim',
  // HF None: no eos, rows run to max_new_tokens; pad is the first eos (HF _prepare_special_tokens), else never emitted.
  'ernie-tiny:text_config.eos_token_id',
  'ernie-tiny:text_config.pad_token_id',
  'granite-tiny:text_config.pad_token_id',
];

/** [model, label, the field the error must name, changes: dotted path -> new value (DELETE removes it)] */
const CONTRADICTIONS: Array<[Model, string, string, Record<string, unknown>]> = [
  ['ernie-tiny', 'kv heads not dividing heads', 'text_config.num_key_value_heads', { 'text_config.num_key_value_heads': 3 }],
  [
    'ernie-tiny',
    'heads not dividing hidden_size (no head_dim)',
    'text_config.hidden_size',
    { 'text_config.head_dim': DELETE, 'text_config.num_attention_heads': 6, 'text_config.num_key_value_heads': 2 },
  ],
  ['ernie-tiny', 'odd head_dim', 'text_config.head_dim', { 'text_config.head_dim': 15 }],
  ['ernie-tiny', 'moe_k above the experts', 'text_config.moe_k', { 'text_config.moe_k': 5 }],
  ['ernie-tiny', 'moe_k above the vision experts of a [text, vision] list', 'text_config.moe_k', { 'text_config.moe_num_experts': [4, 1] }],
  ['ernie-tiny', 'mlp_layer_types longer than num_hidden_layers', 'text_config.mlp_layer_types', { 'text_config.num_hidden_layers': 3 }],
  [
    'ernie-tiny',
    'mrope_section not summing to head_dim / 2',
    'text_config.rope_parameters.mrope_section',
    { 'text_config.rope_parameters.mrope_section': [3, 3, 3] },
  ],
  [
    'ernie-tiny',
    'mrope_section with h != w',
    'text_config.rope_parameters.mrope_section',
    { 'text_config.rope_parameters.mrope_section': [2, 4, 2] },
  ],
  ['ernie-tiny', 'vision heads not dividing the width', 'vision_config.num_heads', { 'vision_config.num_heads': 3 }],
  ['ernie-tiny', 'vision head size not divisible by 4', 'vision_config.num_heads', { 'vision_config.num_heads': 16 }],
  ['ernie-tiny', 'temporal_merge_size other than 2', 'temporalMergeSize', { 'vision_config.temporal_merge_size': 3 }],
  ['ernie-tiny', 'image_token_id outside the vocabulary', 'image_token_id', { image_token_id: 256 }],
  ['ernie-tiny', 'video_start_token_id outside the vocabulary', 'video_start_token_id', { video_start_token_id: 1000 }],
  [
    'ernie-tiny',
    'a missing delimiter whose HF default is outside the tiny vocabulary',
    'image_end_token_id',
    { image_end_token_id: DELETE },
  ],
  ['ernie-tiny', 'Baidu embed_dim disagreeing with hidden_size', 'vision_config.embed_dim', { 'vision_config.embed_dim': 64 }],
  ['granite-tiny', 'kv heads not dividing heads', 'text_config.num_key_value_heads', { 'text_config.num_key_value_heads': 3 }],
  [
    'granite-tiny',
    'heads not dividing hidden_size',
    'text_config.hidden_size',
    { 'text_config.num_attention_heads': 3, 'text_config.num_key_value_heads': 1 },
  ],
  [
    'granite-tiny',
    'layer_types longer than num_hidden_layers',
    'text_config.layer_types',
    { 'text_config.layer_types': Array(9).fill('attention') },
  ],
  ['granite-tiny', 'a mamba layer', 'text_config.layer_types[7]', { 'text_config.layer_types': [...Array(7).fill('attention'), 'mamba'] }],
  ['granite-tiny', 'vision heads not dividing the width', 'vision_config.num_attention_heads', { 'vision_config.num_attention_heads': 3 }],
  ['granite-tiny', 'image_size not a multiple of patch_size', 'vision_config.image_size', { 'vision_config.image_size': 60 }],
  ['granite-tiny', 'downsample window not dividing the tile', 'windowSide', { downsample_rate: '2/3' }],
  ['granite-tiny', 'downsample query window larger than the key window', 'querySide', { downsample_rate: '4/2' }],
  ['granite-tiny', 'qformer width other than the vision width', 'qformer_config.hidden_size', { 'qformer_config.hidden_size': 64 }],
  [
    'granite-tiny',
    'qformer encoder width other than the vision width',
    'qformer_config.encoder_hidden_size',
    { 'qformer_config.encoder_hidden_size': 64 },
  ],
  [
    'granite-tiny',
    'qformer heads not dividing its width',
    'qformer_config.num_attention_heads',
    { 'qformer_config.num_attention_heads': 3 },
  ],
  ['granite-tiny', 'a deepstack level past the decoder', 'deepstack_layer_map[0]', { deepstack_layer_map: [[-1, 8]] }],
  ['granite-tiny', 'a deepstack level past the vision tower', 'deepstack_layer_map[0]', { deepstack_layer_map: [[-6, 0]] }],
  ['granite-tiny', 'two levels on one decoder layer', 'spatial_target_layers[0]', { spatial_target_layers: [0, 5, 6, 7] }],
  ['granite-tiny', 'more than 4 spatial targets', 'spatial_target_layers', { spatial_target_layers: [3, 4, 5, 6, 7] }],
  ['granite-tiny', 'spatial_vision_layer past the vision tower', 'spatial_vision_layer', { spatial_vision_layer: 5 }],
  ['granite-tiny', 'image_token_index outside the vocabulary', 'image_token_index', { image_token_index: 256 }],
  [
    'granite-tiny',
    'a vision_config without model_type (HF reads it as CLIP)',
    'vision_config.model_type',
    { 'vision_config.model_type': DELETE },
  ],
];

describe('contradictory fields', () => {
  it.each(CONTRADICTIONS)('%s: %s -> typed error naming %s', (model, _label, field, changes) => {
    let json = base(model);
    for (const [path, value] of Object.entries(changes)) json = edit(model, path, value, json);
    const r = outcome(model, json);
    expect(r.ok, 'accepted').toBe(false);
    expectFieldError((r as { error: unknown }).error, field);
  });

  it('the fixture configs themselves are read', () => {
    for (const model of ['ernie-tiny', 'granite-tiny'] as const) expect(outcome(model, base(model)).ok).toBe(true);
  });
});
