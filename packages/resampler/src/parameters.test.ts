import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromHfConfig } from './config.js';
import { expectedParameters } from './parameters.js';
import { FIXTURES, resamplerWeights } from './test-utils/fixtures.js';

describe('expectedParameters', () => {
  it('matches the ernie-tiny checkpoint after vLLM renames: every name present, same shapes, nothing left over', async () => {
    const config = fromHfConfig(JSON.parse(readFileSync(`${FIXTURES}ernie-tiny/config.json`, 'utf8')));
    const { weights, ckpt } = await resamplerWeights(`${FIXTURES}ernie-tiny`);
    try {
      const specs = expectedParameters(config);
      expect(specs.map((s) => s.name).sort()).toEqual(weights.names());
      for (const s of specs) expect([s.name, [...weights.get(s.name).shape]]).toEqual([s.name, [...s.shape]]);
    } finally {
      await ckpt.close();
    }
  });

  it('the docs table for the 28B sizes (Dv 1280, D 2560)', () => {
    const specs = expectedParameters({
      visionHiddenSize: 1280,
      textHiddenSize: 2560,
      spatialMergeSize: 2,
      temporalMergeSize: 2,
      useTemporalConv: true,
      layerNormEps: 1e-6,
      rmsNormEps: 1e-5,
    });
    const byName = Object.fromEntries(specs.map((s) => [s.name, s.shape]));
    expect(byName).toMatchObject({
      'spatial_linear1.weight': [5120, 5120],
      'temporal_linear1.weight': [5120, 10240],
      'temporal_norm.bias': [5120],
      'mlp.weight': [2560, 5120],
      'after_norm.weight': [2560],
    });
    expect(specs).toHaveLength(15);
  });

  it('without temporal conv the temporal_* parameters are not needed', () => {
    const specs = expectedParameters({
      visionHiddenSize: 4,
      textHiddenSize: 4,
      spatialMergeSize: 2,
      temporalMergeSize: 2,
      useTemporalConv: false,
      layerNormEps: 1e-6,
      rmsNormEps: 1e-5,
    });
    expect(specs.map((s) => s.name).filter((n) => n.startsWith('temporal'))).toEqual([]);
    expect(specs).toHaveLength(9);
  });
});
