// The decoders write `x = x + attn(norm(x)); x = x + mlp(norm(x))` with plain RMSNorms; onnx-graph's skipRmsNormPass
// fuses each residual add with the norm after it. On the tiny fixtures it must make exactly the
// SkipSimplifiedLayerNormalization nodes the decoders' fused-norm builder (nn.residualRmsNorm, removed) made:
// every norm but those with no residual add before them (layer 0's input norm; Granite's input norm of a layer
// whose input has deepstack features added first). Numbers: the fixture tests run every case with 'contrib'.
import { join } from 'node:path';
import { applyPasses, everyNode, type Graph, skipRmsNormPass } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ernieTextConfigFromHf } from './ernie/config.js';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { graniteTextConfigFromHf } from './granite/config.js';
import { graniteDeepstackLevels } from './granite/levels.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { FIXTURES, readJson, requireFixtures } from './test-utils/fixtures.js';
import { mapErnieDecoder, mapGraniteDecoder } from './test-utils/map-decoder.js';

requireFixtures(['ernie-tiny', 'config.json'], ['granite-tiny', 'config.json']);

const count = (g: Graph, op: string) => [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === op).length;

describe('skipRmsNormPass on the tiny decoders', () => {
  const ckpts: Checkpoint[] = [];
  const cases: Record<'ernie' | 'granite', { build: () => Graph; layers: number; unfused: number }> = {} as never;
  beforeAll(async () => {
    const ernie = ernieTextConfigFromHf(await readJson('ernie-tiny', 'config.json'));
    const ec = await Checkpoint.open(join(FIXTURES, 'ernie-tiny'));
    const { decoder: ew } = await mapErnieDecoder(ec, ernie);
    const graniteTop = await readJson('granite-tiny', 'config.json');
    const granite = graniteTextConfigFromHf(graniteTop);
    const levels = graniteDeepstackLevels(graniteTop);
    const gc = await Checkpoint.open(join(FIXTURES, 'granite-tiny'));
    const { decoder: gw } = await mapGraniteDecoder(gc, granite);
    ckpts.push(ec, gc);
    cases.ernie = { build: () => buildErnieTextDecoderModel(ew, ernie), layers: ernie.numHiddenLayers, unfused: 1 };
    cases.granite = {
      build: () => buildGraniteTextDecoderModel(gw, granite, { levels }),
      layers: granite.numHiddenLayers,
      unfused: 1 + new Set(levels.filter((l) => l > 0)).size,
    };
  });
  afterAll(async () => {
    for (const c of ckpts) await c.close();
  });

  for (const model of ['ernie', 'granite'] as const) {
    it(`${model}: every residual add + RMSNorm fused, as the fused-norm builder did`, () => {
      const { build, layers: L, unfused } = cases[model];
      const g = build();
      expect(count(g, 'RMSNormalization')).toBe(2 * L + 1);
      const adds = count(g, 'Add');
      expect(applyPasses(g, [skipRmsNormPass])).toEqual({ 'skip-rms-norm': 2 * L + 1 - unfused });
      expect(count(g, 'SkipSimplifiedLayerNormalization')).toBe(2 * L + 1 - unfused);
      expect(count(g, 'RMSNormalization')).toBe(unfused);
      expect(count(g, 'Add')).toBe(adds - (2 * L + 1 - unfused));
      // A second run finds nothing left to fuse.
      expect(applyPasses(g, [skipRmsNormPass])).toEqual({ 'skip-rms-norm': 0 });
    });
  }
});
