import { Graph, modelBytes, type TensorRef, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { MoeDecoderError } from '../errors.js';
import { graniteStep } from '../test-utils/granite-runner.js';
import { f32, i64, maxAbs, maxAbsDiff, randn, run, sessionFor } from '../test-utils/ort.js';
import { tinyGraniteConfig } from '../test-utils/random-model.js';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoder } from './model.js';
import { graniteTextExpectedParameters } from './parameters.js';
import { buildGraniteTextDecoderModel } from './standalone.js';

const config: GraniteTextConfig = { ...tinyGraniteConfig, numHiddenLayers: 3 };
const levels = [2, 0];

function randomWeights(c: GraniteTextConfig): Weights {
  const refs = new Map<string, TensorRef>();
  let k = 7000;
  for (const p of graniteTextExpectedParameters(c)) {
    if (p.name === 'lm_head.weight' && c.tieWordEmbeddings) continue;
    const n = p.shape.reduce((a, b) => a * b, 1);
    const data = p.name.endsWith('norm.weight')
      ? randn(n, k++, 0.1).map((v) => 1 + v)
      : randn(n, k++, p.shape.length === 1 ? 0.1 : 1.5 / Math.sqrt(p.shape.at(-1)!));
    refs.set(p.name, tensorFromArray('float32', p.shape, data));
  }
  if (c.tieWordEmbeddings) refs.set('lm_head.weight', refs.get('embed_tokens.weight')!);
  return Weights.from(refs);
}

// B 2, S 5, row 0 left padded by 2; image tokens at flattened rows 3, 4 (row 0) and 6, 7 (row 1).
const [B, S, D] = [2, 5, config.hiddenSize];
const ids = [0, 0, 5, 9, 9, 4, 9, 9, 7, 3];
const mask = [0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
const positionIds = BigInt64Array.from([0, 0, 0, 1, 2, 0, 1, 2, 3, 4], BigInt);
const image = { positions: [3, 4, 6, 7], levels: [randn(4 * D, 11), randn(4 * D, 12)] };

describe('buildGraniteTextDecoder', () => {
  const weights = randomWeights(config);

  it("adds itself to a caller's graph under its scope, fed by the caller's values (inputsEmbeds path), and equals the standalone model", async () => {
    const standalone = await sessionFor(buildGraniteTextDecoderModel(weights, config, { levels }));
    const want = await graniteStep(standalone, config, levels.length, { B, S, ids, mask, positionIds, image });

    // The caller embeds the tokens itself (its own copy of the table) and derives positions from the mask in its graph.
    const g = new Graph({ name: 'caller' });
    const inIds = g.input('ids', 'int64', ['b', 's']);
    const inMask = g.input('mask', 'int64', ['b', 's']);
    const inPos = g.input('image_rows', 'int64', ['n']);
    const feats = levels.map((_, k) => g.input(`f${k}`, 'float32', ['n', D]));
    const embeds = g.scope('caller_embed', () => g.gather(g.param(weights, 'embed_tokens.weight', [config.vocabSize, D]), inIds, 0));
    const pos = g.scope('caller_pos', () => g.max(g.sub(g.cumsum(inMask, 1), g.scalar(1, 'int64')), g.scalar(0, 'int64')));
    const out = buildGraniteTextDecoder(
      g,
      weights,
      config,
      { inputsEmbeds: embeds, imagePositions: inPos, deepstack: feats, attentionMask: inMask, positionIds: pos },
      { levels, scope: 'lm' },
    );
    expect(out.present).toBeUndefined();
    g.output(out.logits, 'y');
    const { nodes } = g.snapshot();
    expect(nodes.filter((n) => !n.name!.startsWith('caller_') && !n.name!.startsWith('lm.') && n.opType !== 'Identity')).toEqual([]);
    expect(nodes.some((n) => n.name!.startsWith('lm.deepstack.1.'))).toBe(true);
    const got = await run(await sessionFor(g), {
      ids: i64([B, S], ids),
      mask: i64([B, S], mask),
      image_rows: i64([4], image.positions),
      f0: f32([4, D], image.levels[0]!),
      f1: f32([4, D], image.levels[1]!),
    });
    const real = (i: number) => mask[Math.floor(i / config.vocabSize)] === 1;
    expect(maxAbsDiff(got.y!.data as Float32Array, want.logits, real) / maxAbs(want.logits, real)).toBeLessThan(1e-6);
    // The placeholder id's embedding never reaches the result: another id at the image rows gives the same logits.
    const other = await graniteStep(standalone, config, levels.length, {
      B,
      S,
      ids: ids.map((t) => (t === 9 ? 1 : t)),
      mask,
      positionIds,
      image,
    });
    expect(maxAbsDiff(other.logits, want.logits, real)).toBeLessThan(1e-6);
    // And the features do: level 1 (layer 0) changed moves the logits.
    const moved = await graniteStep(standalone, config, levels.length, {
      B,
      S,
      ids,
      mask,
      positionIds,
      image: { ...image, levels: [image.levels[0]!, randn(4 * D, 13)] },
    });
    expect(maxAbsDiff(moved.logits, want.logits, real)).toBeGreaterThan(1e-3);
  });

  it('a text-only graph (levels []) has no image inputs; graph bytes are deterministic', async () => {
    const g = buildGraniteTextDecoderModel(weights, config, { levels: [] });
    expect(g.snapshot().inputs.map((v) => v.name)).not.toContain('image_positions');
    expect(
      Buffer.from(await modelBytes(g)).equals(Buffer.from(await modelBytes(buildGraniteTextDecoderModel(weights, config, { levels: [] })))),
    ).toBe(true);
    const s = await sessionFor(g);
    const out = await graniteStep(s, config, 0, { B, S, ids, mask, positionIds });
    expect(out.logits.length).toBe(B * S * config.vocabSize);
    expect(out.present[2]!.key.dims).toEqual([B, config.numKeyValueHeads, S, config.headDim]);
  });

  it('refuses inputs that do not fit, with BAD_INPUT', () => {
    const g = new Graph();
    const idsV = g.input('ids', 'int64', ['b', 's']);
    const m = g.input('m', 'int64', ['b', 't']);
    const p = g.input('p', 'int64', ['b', 's']);
    const f = g.input('f', 'float32', ['n', D]);
    const base = { inputIds: idsV, attentionMask: m, positionIds: p };
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return (e as MoeDecoderError).code;
      }
      return undefined;
    };
    expect(code(() => buildGraniteTextDecoder(g, weights, config, { ...base, inputsEmbeds: f }, { levels }))).toBe('BAD_INPUT');
    expect(code(() => buildGraniteTextDecoder(g, weights, config, { ...base, deepstack: [f] }, { levels }))).toBe('BAD_INPUT');
    expect(code(() => buildGraniteTextDecoder(g, weights, config, { ...base, deepstack: [f, f] }, { levels }))).toBe('BAD_INPUT');
    expect(code(() => buildGraniteTextDecoder(g, weights, config, { ...base, past: [] }, { levels }))).toBe('BAD_INPUT');
    expect(code(() => buildGraniteTextDecoder(g, weights, config, base, { levels: [0, 0] }))).toBe('BAD_INPUT');
    expect(() => buildGraniteTextDecoder(g, weights, config, base, { levels: [5] })).toThrow(MoeDecoderError);
  });
});
