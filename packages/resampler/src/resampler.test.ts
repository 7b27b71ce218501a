import { Graph, GraphError, Weights } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import type { ErnieResamplerConfig } from './config.js';
import { ResamplerError } from './errors.js';
import { type GridThw, resamplerInputs } from './inputs.js';
import { buildErnieResampler, buildErnieResamplerModel, RESAMPLER_IO } from './resampler.js';
import { referenceResampler } from './test-utils/reference.js';
import { randn, randomParams, relMaxError, resamplerFeeds, runGraph } from './test-utils/run.js';

const CFG: ErnieResamplerConfig = {
  visionHiddenSize: 8,
  textHiddenSize: 12,
  spatialMergeSize: 2,
  temporalMergeSize: 2,
  useTemporalConv: true,
  layerNormEps: 1e-6,
  rmsNormEps: 1e-5,
};

// Images and videos mixed, in an order that puts a video between images.
const MIXED: GridThw[] = [
  [1, 2, 4],
  [4, 2, 2],
  [1, 4, 2],
  [2, 4, 4],
  [6, 2, 2],
];

// ORT's float32 matmuls against a float64 reference: 1e-5 relative to max |ref| leaves ~20x margin at these sizes.
const TOL = 1e-5;

async function runModel(cfg: ErnieResamplerConfig, grids: GridThw[], seed: number) {
  const { params, weights } = randomParams(cfg, seed);
  const idx = resamplerInputs(grids, cfg);
  const hidden = randn(idx.numPatches * cfg.visionHiddenSize, seed + 100);
  const out = await runGraph(buildErnieResamplerModel(weights, cfg), resamplerFeeds(hidden, grids, cfg));
  return { embeds: out[RESAMPLER_IO.embeds]!, ref: referenceResampler(params, cfg, hidden, grids), idx };
}

describe('buildErnieResamplerModel vs a TypeScript transcription of HF', () => {
  it('a mixed batch of images and videos', async () => {
    const { embeds, ref, idx } = await runModel(CFG, MIXED, 1);
    expect(embeds.dims).toEqual([idx.numTokens, 12]);
    expect(idx.numTokens).toBe(2 + 2 * 1 + 2 + 1 * 4 + 3 * 1); // t'*h*w/4 per item
    const err = relMaxError(embeds.data as Float32Array, ref);
    expect(err.rel).toBeLessThan(TOL);
  });

  it('one graph serves different grids (fixed structure, int64 index inputs)', async () => {
    const { params, weights } = randomParams(CFG, 7);
    const { bytes, externalData } = await (await import('@vlmkit/onnx-graph')).serializeModel(buildErnieResamplerModel(weights, CFG));
    const session = await ort.InferenceSession.create(bytes, { externalData, executionProviders: ['cpu'], logSeverityLevel: 3 });
    try {
      for (const [k, grids] of (
        [
          [[1, 2, 2]],
          [
            [8, 2, 2],
            [1, 2, 6],
          ],
          MIXED,
        ] as GridThw[][]
      ).entries()) {
        const idx = resamplerInputs(grids, CFG);
        const hidden = randn(idx.numPatches * CFG.visionHiddenSize, 50 + k);
        const out = await session.run(resamplerFeeds(hidden, grids, CFG));
        expect(
          relMaxError(out[RESAMPLER_IO.embeds]!.data as Float32Array, referenceResampler(params, CFG, hidden, grids)).rel,
        ).toBeLessThan(TOL);
      }
    } finally {
      await session.release();
    }
  });

  it('spatial merge 1 and a wider text hidden', async () => {
    const cfg = { ...CFG, spatialMergeSize: 1, textHiddenSize: 20 };
    const { embeds, ref } = await runModel(
      cfg,
      [
        [1, 3, 5],
        [2, 1, 3],
      ],
      3,
    );
    expect(relMaxError(embeds.data as Float32Array, ref).rel).toBeLessThan(TOL);
  });

  it('without temporal conv (vLLM use_temporal_conv = false): every frame passes, no index inputs', async () => {
    const cfg = { ...CFG, useTemporalConv: false };
    const g = buildErnieResamplerModel(randomParams(cfg, 4).weights, cfg);
    expect(g.snapshot().inputs.map((v) => v.name)).toEqual([RESAMPLER_IO.visionHidden]);
    const { embeds, ref, idx } = await runModel(
      cfg,
      [
        [1, 2, 4],
        [4, 2, 2],
      ],
      4,
    );
    expect(idx.numTokens).toBe(2 + 4);
    expect(embeds.dims).toEqual([6, 12]);
    expect(relMaxError(embeds.data as Float32Array, ref).rel).toBeLessThan(TOL);
  });

  it('the temporal pairing matters: swapping the slices changes the result', async () => {
    // Guards against a graph that ignores the order of the two halves (e.g. a sum instead of a concat).
    const { params, weights } = randomParams(CFG, 9);
    const grids: GridThw[] = [[2, 2, 2]];
    const idx = resamplerInputs(grids, CFG);
    const hidden = randn(idx.numPatches * CFG.visionHiddenSize, 90);
    const feeds = resamplerFeeds(hidden, grids, CFG);
    const swapped = {
      ...feeds,
      [RESAMPLER_IO.firstSlice]: feeds[RESAMPLER_IO.secondSlice]!,
      [RESAMPLER_IO.secondSlice]: feeds[RESAMPLER_IO.firstSlice]!,
    };
    const out = await runGraph(buildErnieResamplerModel(weights, CFG), swapped);
    const ref = referenceResampler(params, CFG, hidden, grids);
    expect(relMaxError(out[RESAMPLER_IO.embeds]!.data as Float32Array, ref).rel).toBeGreaterThan(1e-2);
  });
});

describe('buildErnieResampler in a caller graph', () => {
  it('adds scoped nodes beside other nodes and another resampler', async () => {
    const { params, weights } = randomParams(CFG, 11);
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 8]);
    const first = g.input('a', 'int64', ['t']);
    const second = g.input('b', 'int64', ['t']);
    const doubled = g.mul(x, g.scalar(2, 'float32')); // the caller's own node before the resampler
    const one = buildErnieResampler(
      g,
      weights,
      CFG,
      { visionHidden: doubled, firstSlice: first, secondSlice: second },
      { scope: 'image_resampler' },
    );
    const two = buildErnieResampler(
      g,
      weights,
      CFG,
      { visionHidden: x, firstSlice: first, secondSlice: second },
      { scope: 'video_resampler' },
    );
    g.output(one.embeds, 'y1');
    g.output(two.embeds, 'y2');
    const names = g.snapshot().nodes.map((n) => n.name!);
    expect(names.some((n) => n.startsWith('image_resampler.spatial_linear1.'))).toBe(true);
    expect(names.some((n) => n.startsWith('video_resampler.temporal_slicing.'))).toBe(true);
    const inits = g.snapshot().initializers.map((i) => i.name);
    expect(inits).toContain('image_resampler.spatial_linear1.weight');

    const grids: GridThw[] = [
      [2, 2, 4],
      [1, 2, 2],
    ];
    const idx = resamplerInputs(grids, CFG);
    const hidden = randn(idx.numPatches * 8, 12);
    const out = await runGraph(g, {
      x: new ort.Tensor('float32', hidden, [idx.numPatches, 8]),
      a: new ort.Tensor('int64', idx.firstSlice, [idx.firstSlice.length]),
      b: new ort.Tensor('int64', idx.secondSlice, [idx.secondSlice.length]),
    });
    const ref2 = referenceResampler(params, CFG, hidden, grids);
    const ref1 = referenceResampler(
      params,
      CFG,
      hidden.map((v) => 2 * v),
      grids,
    );
    expect(relMaxError(out['y1']!.data as Float32Array, ref1).rel).toBeLessThan(TOL);
    expect(relMaxError(out['y2']!.data as Float32Array, ref2).rel).toBeLessThan(TOL);
  });

  it('refuses missing index inputs, a wrong hidden width, and missing weights', () => {
    const { weights } = randomParams(CFG, 13);
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 8]);
    expect(() => buildErnieResampler(g, weights, CFG, { visionHidden: x })).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
    const wide = g.input('w', 'float32', ['n', 9]);
    const idx = g.input('i', 'int64', ['t']);
    expect(() => buildErnieResampler(g, weights, CFG, { visionHidden: wide, firstSlice: idx, secondSlice: idx })).toThrow(ResamplerError);
    const floatIdx = g.input('f', 'float32', ['t']);
    expect(() => buildErnieResampler(g, weights, CFG, { visionHidden: x, firstSlice: floatIdx, secondSlice: idx })).toThrow(/int64/);
    const partial = Weights.from(
      Object.fromEntries(
        weights
          .names()
          .filter((n) => n !== 'temporal_norm.bias')
          .map((n) => [n, weights.get(n)]),
      ),
    );
    expect(() => buildErnieResamplerModel(partial, CFG)).toThrow(GraphError);
    expect(() => buildErnieResamplerModel(partial, CFG)).toThrow(/temporal_norm\.bias/);
  });
});
