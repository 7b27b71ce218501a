// The decoders' graph inputs are their contracts: every builder declares exactly the tensors the contract
// lists for its binding (names, dtypes, dims, order), the loops add their own contract, and the host-side
// check built from a contract refuses a step whose tensors disagree by name.
import { type ComputeDType, computeDtypePasses, contractProblems, type Graph, tensorSpecs } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { DECODE_LOOP_INPUTS } from './decode-loop.js';
import { buildErnieDecodeLoopModel } from './ernie/decode-loop.js';
import { buildErnieTextDecoderModel, ERNIE_DECODER_INPUTS } from './ernie/standalone.js';
import { buildGraniteDecodeLoopModel } from './granite/decode-loop.js';
import { buildGraniteTextDecoderModel, GRANITE_DECODER_INPUTS } from './granite/standalone.js';
import { DECODER_OUTPUTS, KV_CACHE_IO, kvCacheDType } from './kv-io.js';
import { randomGraniteWeights, randomWeights, tinyConfig, tinyGraniteConfig } from './test-utils/random-model.js';

const inputs = (g: Graph) => g.snapshot().inputs.map((v) => ({ name: v.name, dtype: v.dtype, dims: [...v.shape] }));
const specs = (s: ReturnType<typeof tensorSpecs>) => s.map((t) => ({ name: t.name, dtype: t.dtype, dims: [...t.dims] }));

const ernie = tinyConfig;
const ernieBinding = (computeDtype: ComputeDType) => ({
  sizes: { hidden: ernie.hiddenSize, half_head_dim: ernie.headDim / 2, kv_heads: ernie.numKeyValueHeads, head_dim: ernie.headDim },
  counts: { layer: ernie.numHiddenLayers },
  dtypes: { kv_cache: kvCacheDType(computeDtype) },
});
const granite = tinyGraniteConfig;
const graniteBinding = (levels: number, computeDtype: ComputeDType) => ({
  sizes: { hidden: granite.hiddenSize, kv_heads: granite.numKeyValueHeads, head_dim: granite.headDim },
  counts: { layer: granite.numHiddenLayers, level: levels },
  dtypes: { kv_cache: kvCacheDType(computeDtype) },
});

describe('decoder graphs declare their contracts', () => {
  const ew = randomWeights(ernie).weights;
  const gw = randomGraniteWeights(granite, 3);

  it.each([
    ['float32', false],
    ['float16', true],
  ] as const)('ERNIE step graph (%s, logits_to_keep %s): inputs are ERNIE_DECODER_INPUTS, outputs named once', (dt, keep) => {
    const g = buildErnieTextDecoderModel(ew, ernie, { passes: computeDtypePasses(dt), logitsToKeep: keep });
    expect(inputs(g)).toEqual(specs(tensorSpecs(ERNIE_DECODER_INPUTS, { ...ernieBinding(dt), include: { logits_to_keep: keep } })));
    expect(inputs(g).slice(0, 2)).toEqual([
      { name: 'input_ids', dtype: 'int64', dims: ['batch', 'seq'] },
      { name: 'vision_embeds', dtype: 'float32', dims: ['vision_tokens', ernie.hiddenSize] },
    ]);
    const kv = inputs(g).find((t) => t.name === KV_CACHE_IO.past(2, 'value'))!;
    expect(kv).toEqual({ name: 'past_key_values.2.value', dtype: dt, dims: ['batch', 2, 'past', 8] });
    const outs = g.snapshot().outputs.map((v) => v.name);
    expect(outs[0]).toBe(DECODER_OUTPUTS.names.logits);
    expect(outs.slice(1)).toEqual(
      Array.from({ length: ernie.numHiddenLayers }, (_, i) => [KV_CACHE_IO.present(i, 'key'), KV_CACHE_IO.present(i, 'value')]).flat(),
    );
  });

  it.each([[[1, 0]], [[]]] as const)('Granite step graph (levels %j): inputs are GRANITE_DECODER_INPUTS', (levels) => {
    const g = buildGraniteTextDecoderModel(gw, granite, { levels, logitsToKeep: true });
    const want = tensorSpecs(GRANITE_DECODER_INPUTS, {
      ...graniteBinding(levels.length, 'float32'),
      include: { image_positions: levels.length > 0, logits_to_keep: true },
    });
    expect(inputs(g)).toEqual(specs(want));
    expect(
      inputs(g)
        .filter((t) => t.name.startsWith('deepstack_'))
        .map((t) => t.name),
    ).toEqual(levels.map((_, k) => `deepstack_${k}`));
  });

  it('decode loops: the step contract (ids, mask, model inputs, cache) then DECODE_LOOP_INPUTS', () => {
    const byKey = (s: ReturnType<typeof tensorSpecs>, keys: (k: string) => boolean) => specs(s.filter((t) => keys(t.key)));
    const own = ['input_ids', 'attention_mask', 'past_key_values', 'logits_to_keep'];
    const loopOrder = (s: ReturnType<typeof tensorSpecs>) => [
      ...byKey(s, (k) => k === 'input_ids'),
      ...byKey(s, (k) => k === 'attention_mask'),
      ...byKey(s, (k) => !own.includes(k)),
      ...byKey(s, (k) => k === 'past_key_values'),
      ...specs(tensorSpecs(DECODE_LOOP_INPUTS)),
    ];
    expect(inputs(buildErnieDecodeLoopModel(ew, ernie))).toEqual(loopOrder(tensorSpecs(ERNIE_DECODER_INPUTS, ernieBinding('float32'))));
    const levels = [1, 0];
    expect(inputs(buildGraniteDecodeLoopModel(gw, granite, { levels }))).toEqual(
      loopOrder(tensorSpecs(GRANITE_DECODER_INPUTS, { ...graniteBinding(2, 'float32'), include: { image_positions: true } })),
    );
    expect(inputs(buildGraniteDecodeLoopModel(gw, granite, { levels: [] })).map((t) => t.name)).not.toContain('image_positions');
  });
});

describe('the contracts check a step before it runs', () => {
  const t = (dtype: string, dims: number[]) => ({ dtype, dims });
  const step = (n: number, rows: number) =>
    ERNIE_DECODER_INPUTS.feeds({
      input_ids: t('int64', [1, 4]),
      vision_embeds: t('float32', [n, ernie.hiddenSize]),
      vision_positions: t('int64', [rows]),
      moe_token_type: t('int64', [1, 4]),
      attention_mask: t('int64', [1, 4]),
      rope_cos: t('float32', [1, 4, 4]),
      rope_sin: t('float32', [1, 4, 4]),
      past_key_values: Array.from({ length: ernie.numHiddenLayers }, () => ({
        key: t('float32', [1, 2, 0, 8]),
        value: t('float32', [1, 2, 0, 8]),
      })),
    });
  const check = (feeds: ReturnType<typeof step>) =>
    contractProblems(ERNIE_DECODER_INPUTS, feeds, { ...ernieBinding('float32'), dtypes: {} }).map((p) => [p.code, p.input, p.message]);

  it('a valid prefill passes', () => {
    expect(check(step(2, 2))).toEqual([]);
  });

  it('vision rows and their positions of different counts are refused, naming both', () => {
    expect(check(step(2, 3))).toEqual([
      ['DIM_MISMATCH', 'vision_positions', 'vision_positions must be int64 [2] (vision_tokens as in vision_embeds), got int64 [3]'],
    ]);
  });

  it('a cache of another dtype than the graph was built for is refused by name', () => {
    const feeds = { ...step(0, 0), [KV_CACHE_IO.past(1, 'key')]: t('float16', [1, 2, 0, 8]) };
    expect(check(feeds)[0]!.slice(0, 2)).toEqual(['DTYPE_MISMATCH', 'past_key_values.1.key']);
  });
});
