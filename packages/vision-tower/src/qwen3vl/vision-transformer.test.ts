import { Graph, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { VisionTowerError } from '../errors.js';
import { randn, relMaxError, session } from '../test-utils/ort.js';
import { type Grid, runQwen3VlTower } from '../test-utils/qwen3vl.js';
import { randomWeights } from '../test-utils/random-weights.js';
import { Qwen3VlVisionConfig, qwen3VlPatchDim } from './config.js';
import { expectedQwen3VlVisionParameters } from './parameters.js';
import { buildQwen3VlVisionTower, buildQwen3VlVisionTowerModel, type Qwen3VlVisionTowerModelOptions } from './vision-transformer.js';

/** A small tower: 16 wide, 2 heads of 8, patch 2 x temporal 2 (24 values a row), a 4x4 learned grid, out 24. */
function smallConfig(vision: Record<string, unknown> = {}) {
  return Qwen3VlVisionConfig.fromHfConfig({
    vision_config: {
      depth: 3,
      hidden_size: 16,
      num_heads: 2,
      intermediate_size: 24,
      patch_size: 2,
      temporal_patch_size: 2,
      out_hidden_size: 24,
      num_position_embeddings: 16,
      deepstack_visual_indexes: [0, 1],
      ...vision,
    },
  });
}

const grids: Grid[] = [
  [1, 2, 4],
  [2, 4, 2],
]; // 8 + 16 patches, 3 frames, 6 tokens

async function run(weights: Weights, config: Qwen3VlVisionConfig, pixels: Float32Array, options: Qwen3VlVisionTowerModelOptions = {}) {
  const s = await session(buildQwen3VlVisionTowerModel(weights, config, options));
  try {
    return await runQwen3VlTower(s, config, pixels, grids);
  } finally {
    await s.release();
  }
}

describe('buildQwen3VlVisionTowerModel (random weights)', () => {
  const config = smallConfig();
  const specs = expectedQwen3VlVisionParameters(config);
  const pixels = randn(24 * qwen3VlPatchDim(config), 11);

  it('outputs vision_embeds and one deepstack_{i} per deepstack layer, [tokens, out_hidden_size] each', async () => {
    const out = await run(randomWeights(specs, 1).weights, config, pixels);
    expect(Object.keys(out).sort()).toEqual(['deepstack_0', 'deepstack_1', 'vision_embeds']);
    for (const v of Object.values(out)) expect(v.length).toBe(6 * 24);
  });

  it('float16 weights are cast in the graph: same result as float32 weights holding the same values (1e-5)', async () => {
    const { weights: half, float32 } = randomWeights(specs, 2, 'float16');
    const full = Weights.from(new Map(specs.map((p) => [p.name, tensorFromArray('float32', p.shape, float32.get(p.name)!)])));
    const [a, b] = [await run(half, config, pixels), await run(full, config, pixels)];
    for (const k of Object.keys(b)) expect(relMaxError(a[k]!, b[k]!)).toBeLessThan(1e-5);
  });

  it('computeDtype float16 stays within float16 precision of float32 compute (2e-2)', async () => {
    const { weights } = randomWeights(specs, 3);
    const [a, b] = [await run(weights, config, pixels, { computeDtype: 'float16' }), await run(weights, config, pixels)];
    for (const k of Object.keys(b)) expect(relMaxError(a[k]!, b[k]!)).toBeLessThan(2e-2);
  });

  it('unsorted deepstack_visual_indexes as HF: merger list[j] reads block indexes[j], features come out in block order', async () => {
    // [1, 0]: block 0 feeds deepstack_merger_list.1 and comes out first. The same tower with [0, 1] and the two
    // mergers' weights swapped must give the same outputs.
    const swapped = smallConfig({ deepstack_visual_indexes: [1, 0] });
    const { weights } = randomWeights(specs, 4);
    const swap = (n: string) => n.replace(/^deepstack_merger_list\.(\d)/, (_, j) => `deepstack_merger_list.${1 - Number(j)}`);
    const renamed = Weights.from(new Map(weights.names().map((n) => [swap(n), weights.get(n)])));
    const [a, b] = [await run(weights, swapped, pixels), await run(renamed, config, pixels)];
    for (const k of Object.keys(b)) expect(a[k]).toEqual(b[k]);
  });

  it('rejects inputs of the wrong shape or dtype with BAD_INPUT', () => {
    const { weights } = randomWeights(specs, 5);
    const g = new Graph();
    const ok = {
      pixelValues: g.input('pv', 'float32', ['n', 24]),
      posIndices: g.input('pi', 'int32', ['n', 4]),
      posWeights: g.input('pw', 'float32', ['n', 4]),
      rotaryCos: g.input('cos', 'float32', ['n', 4]),
      rotarySin: g.input('sin', 'float32', ['n', 4]),
      segmentIds: g.input('seg', 'int32', ['n']),
    };
    const cases: [Partial<typeof ok>, RegExp][] = [
      [{ pixelValues: g.input('pv2', 'float32', ['n', 12]) }, /pixelValues must be float32 or float16 \[num_patches, 24\] \(C\*T\*p\*p\)/],
      [{ posIndices: g.input('pi2', 'float32', ['n', 4]) }, /posIndices must be int32 or int64 \[num_patches, 4\]/],
      [{ posWeights: g.input('pw2', 'float32', ['n', 2]) }, /posWeights must be float32 \[num_patches, 4\]/],
      [{ rotarySin: g.input('sin2', 'float32', ['n', 8]) }, /rotarySin must be \[num_patches, 4\]/],
      [{ segmentIds: g.input('seg2', 'float32', ['n']) }, /segmentIds must be int32 or int64/],
    ];
    for (const [patch, msg] of cases) {
      const call = () => buildQwen3VlVisionTower(g, weights, config, { ...ok, ...patch });
      expect(call).toThrow(VisionTowerError);
      expect(call).toThrow(msg);
    }
  });
});
