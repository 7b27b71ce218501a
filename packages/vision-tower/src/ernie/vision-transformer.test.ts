import { Graph } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { VisionTowerError } from '../errors.js';
import { referenceConfigOf as refConfig, referenceErnieTower } from '../test-utils/ernie-reference.js';
import { loadCase, loadFixtureTower } from '../test-utils/fixtures.js';
import { randn, relMaxError, runTower, session } from '../test-utils/ort.js';
import { randomWeights } from '../test-utils/random-weights.js';
import { blockDiagonalMask } from './attention-mask.js';
import { ErnieVisionConfig } from './config.js';
import { ernieVisionInputs } from './inputs.js';
import { expectedErnieVisionParameters } from './parameters.js';
import { buildErnieVisionTower, buildErnieVisionTowerModel } from './vision-transformer.js';

/** A small tower in Baidu's layout: 16-wide, 2 heads of 8, patch 2 (12 inputs), top-level eps 0.5 so the eps choice shows. */
function smallConfig(vision: Record<string, unknown>, options: Parameters<typeof ErnieVisionConfig.fromHfConfig>[1] = {}) {
  const json = {
    rms_norm_eps: 0.5,
    vision_config: {
      depth: 1,
      embed_dim: 16,
      hidden_size: 16,
      num_heads: 2,
      mlp_ratio: 3,
      patch_size: 2,
      in_channels: 3,
      spatial_merge_size: 2,
      hidden_act: 'quick_gelu',
      rms_norm_eps: 1e-6,
      ...vision,
    },
  };
  return ErnieVisionConfig.fromHfConfig(json, options);
}

const grids: [number, number, number][] = [
  [1, 2, 4],
  [2, 4, 2],
  [1, 2, 2],
]; // 8 + 16 + 4 = 28 patches, 4 frames

async function runAgainstReference(
  config: ErnieVisionConfig,
  seed: number,
  dtype: 'float32' | 'float16' = 'float32',
  attentionOp?: 'Attention' | 'MultiHeadAttention',
) {
  const { weights, float32 } = randomWeights(expectedErnieVisionParameters(config), seed, dtype);
  const inputs = ernieVisionInputs(grids, config);
  const patchDim = config.inChannels * config.patchSize ** 2;
  const pixels = randn(inputs.numPatches * patchDim, seed + 7);
  const s = await session(buildErnieVisionTowerModel(weights, config, attentionOp ? { attentionOp } : {}));
  try {
    return { got: await runTower(s, pixels, patchDim, inputs), float32, pixels };
  } finally {
    await s.release();
  }
}

describe('buildErnieVisionTowerModel vs the plain-TypeScript reference (random weights)', () => {
  for (const op of ['Attention', 'MultiHeadAttention'] as const) {
    it(`1 block, 3 grids / 4 frames, vLLM eps (blocks 0.5, ln 1e-6), ${op}: within 1e-5`, async () => {
      const config = smallConfig({});
      expect([config.blockNormEps, config.finalNormEps]).toEqual([0.5, 1e-6]);
      const { got, float32, pixels } = await runAgainstReference(config, 1, 'float32', op);
      expect(relMaxError(got, referenceErnieTower(float32, refConfig(config), pixels, grids))).toBeLessThan(1e-5);
      // The eps choice is visible at this size: HF's 1e-6 blocks give another result.
      const hfEps = referenceErnieTower(float32, { ...refConfig(config), blockEps: 1e-6 }, pixels, grids);
      expect(relMaxError(got, hfEps)).toBeGreaterThan(1e-2);
    });
  }

  it("3 blocks, reference 'hf' (every LayerNorm at vision_config.rms_norm_eps = 0.25), gelu_pytorch_tanh: within 1e-5", async () => {
    const config = smallConfig({ depth: 3, rms_norm_eps: 0.25, hidden_act: 'gelu_pytorch_tanh' }, { reference: 'hf' });
    expect([config.blockNormEps, config.finalNormEps]).toEqual([0.25, 0.25]);
    const { got, float32, pixels } = await runAgainstReference(config, 2);
    expect(relMaxError(got, referenceErnieTower(float32, refConfig(config), pixels, grids))).toBeLessThan(1e-5);
  });

  it('float16 weights are cast to float32 in the graph: matches the reference on the f16-rounded weights (1e-5)', async () => {
    const config = smallConfig({ depth: 2 });
    const { got, float32, pixels } = await runAgainstReference(config, 3, 'float16');
    expect(relMaxError(got, referenceErnieTower(float32, refConfig(config), pixels, grids))).toBeLessThan(1e-5);
  });
});

describe('attention stays inside each frame', () => {
  it('blockDiagonalMask: frame ids [0, 0, 1, 1, 1] give two diagonal blocks (hand-derived)', async () => {
    const g = new Graph();
    const seg = g.input('seg', 'int32', ['n']);
    const m = blockDiagonalMask(g, seg, 'Attention', 'float32');
    if (m.op !== 'Attention') throw new Error('expected a bool mask');
    g.output(m.mask, 'mask');
    const b = blockDiagonalMask(g, seg, 'MultiHeadAttention', 'float32');
    if (b.op !== 'MultiHeadAttention') throw new Error('expected a bias');
    g.output(b.bias, 'bias');
    const s = await session(g);
    const out = await s.run({ seg: new ort.Tensor('int32', Int32Array.from([0, 0, 1, 1, 1]), [5]) });
    await s.release();
    const expected = [
      [1, 1, 0, 0, 0],
      [1, 1, 0, 0, 0],
      [0, 0, 1, 1, 1],
      [0, 0, 1, 1, 1],
      [0, 0, 1, 1, 1],
    ].flat();
    expect(out.mask!.dims).toEqual([1, 1, 5, 5]);
    expect(Array.from(out.mask!.data as Uint8Array, Number)).toEqual(expected);
    expect(Array.from(out.bias!.data as Float32Array)).toEqual(expected.map((v) => (v ? 0 : -1e9)));
  });

  it("on the 'images' fixture, one shared segment for both images (no block mask) misses HF by > 1e-2: the mask is what the fixture checks", async () => {
    const tower = await loadFixtureTower('ernie-tiny');
    try {
      const config = ErnieVisionConfig.fromHfConfig(tower.config, { reference: 'hf' });
      const t = await loadCase('ernie-tiny', 'images');
      const inputs = ernieVisionInputs(
        [
          [1, 4, 6],
          [1, 6, 4],
        ],
        config,
      );
      const s = await session(buildErnieVisionTowerModel(tower.weights, config));
      const got = await runTower(s, t.get('pixel_values')!.data as Float32Array, 588, {
        ...inputs,
        segmentIds: new Int32Array(inputs.numPatches),
      });
      await s.release();
      expect(relMaxError(got, t.get('image_vision_hidden')!.data as Float32Array)).toBeGreaterThan(1e-2);
    } finally {
      await tower.close();
    }
  });
});

describe('buildErnieVisionTower in a caller graph', () => {
  it('two towers in one graph under their own scopes, fed from the caller’s values', async () => {
    const config = smallConfig({});
    const { weights } = randomWeights(expectedErnieVisionParameters(config), 4);
    const g = new Graph();
    const pv = g.input('pv', 'float32', ['n', 12]);
    const cos = g.input('cos', 'float32', ['n', 4]);
    const sin = g.input('sin', 'float32', ['n', 4]);
    const seg = g.input('seg', 'int64', ['n']);
    const a = buildErnieVisionTower(
      g,
      weights,
      config,
      { pixelValues: pv, rotaryCos: cos, rotarySin: sin, segmentIds: seg },
      { scope: 'tower_a' },
    );
    const b = buildErnieVisionTower(
      g,
      weights,
      config,
      { pixelValues: g.mul(pv, 2), rotaryCos: cos, rotarySin: sin, segmentIds: seg },
      { scope: 'tower_b', attentionOp: 'Attention' },
    );
    expect(a.hidden.shape).toEqual(['n', 16]);
    g.output(g.sub(a.hidden, b.hidden), 'diff');
    const names = g.snapshot().initializers.map((i) => i.name);
    expect(names).toContain('tower_a.blocks.0.attn.qkv.weight');
    const inputs = ernieVisionInputs(grids, config);
    const n = inputs.numPatches;
    const s = await session(g);
    const out = await s.run({
      pv: new ort.Tensor('float32', randn(n * 12, 5), [n, 12]),
      cos: new ort.Tensor('float32', inputs.rotaryCos, [n, 4]),
      sin: new ort.Tensor('float32', inputs.rotarySin, [n, 4]),
      seg: new ort.Tensor(
        'int64',
        BigInt64Array.from(inputs.segmentIds, (v) => BigInt(v)),
        [n],
      ),
    });
    await s.release();
    expect(out.diff!.dims).toEqual([n, 16]);
  });

  it('rejects inputs of the wrong shape or dtype with BAD_INPUT', () => {
    const config = smallConfig({});
    const { weights } = randomWeights(expectedErnieVisionParameters(config), 4);
    const g = new Graph();
    const ok = {
      pixelValues: g.input('pv', 'float32', ['n', 12]),
      rotaryCos: g.input('cos', 'float32', ['n', 4]),
      rotarySin: g.input('sin', 'float32', ['n', 4]),
      segmentIds: g.input('seg', 'int32', ['n']),
    };
    const cases: [Partial<typeof ok>, RegExp][] = [
      [{ pixelValues: g.input('pv2', 'float32', ['n', 13]) }, /pixelValues must be \[num_patches, 12\]/],
      [{ rotaryCos: g.input('cos2', 'float32', ['n', 8]) }, /rotaryCos must be \[num_patches, 4\]/],
      [{ segmentIds: g.input('seg2', 'float32', ['n']) }, /segmentIds must be int32 or int64/],
    ];
    for (const [patch, msg] of cases) {
      const call = () => buildErnieVisionTower(g, weights, config, { ...ok, ...patch });
      expect(call).toThrow(VisionTowerError);
      expect(call).toThrow(msg);
    }
  });
});

describe('expectedErnieVisionParameters', () => {
  it("lists exactly the fixture checkpoint's vision_model.* tensors with their shapes", async () => {
    const tower = await loadFixtureTower('ernie-tiny');
    try {
      const config = ErnieVisionConfig.fromHfConfig(tower.config);
      const expected = expectedErnieVisionParameters(config)
        .map((p) => `${p.name} [${p.shape.join(',')}]`)
        .sort();
      const present = tower.weights
        .names()
        .map((n) => `${n} [${tower.weights.get(n).shape.join(',')}]`)
        .sort();
      expect(expected).toEqual(present);
    } finally {
      await tower.close();
    }
  });
});
