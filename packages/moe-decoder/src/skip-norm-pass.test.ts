// The decoders write `x = x + attn(norm(x)); x = x + mlp(norm(x))` with plain RMSNorms; onnx-graph's skipRmsNormPass
// fuses each residual add with the norm after it. It must make exactly the SkipSimplifiedLayerNormalization nodes
// the decoders' fused-norm builder (nn.residualRmsNorm, removed) made: every norm but those with no residual add
// before them (layer 0's input norm; Granite's input norm of a layer whose input has deepstack features added
// first), in float32 and in the 16-bit form of the norm, in the step graph and inside the decode loop's body.
// Numbers: the fixture tests run every case with 'contrib' (CONTRIB_PASSES).
import { applyPasses, computeDtypePasses, everyNode, type Graph, skipRmsNormPass } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { buildErnieDecodeLoopModel } from './ernie/decode-loop.js';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteDecodeLoopModel } from './granite/decode-loop.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { randomGraniteWeights, randomWeights, tinyConfig, tinyGraniteConfig } from './test-utils/random-model.js';

const count = (g: Graph, op: string) => [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === op).length;

const ew = randomWeights(tinyConfig).weights;
const gw = randomGraniteWeights(tinyGraniteConfig, 3);
const dtypes = ['float32', 'float16'] as const;
// [label, build, layers, norms with no residual add before them]
const cases: [string, (computeDtype: (typeof dtypes)[number]) => Graph, number, number][] = [
  [
    'ERNIE',
    (computeDtype) => buildErnieTextDecoderModel(ew, tinyConfig, { passes: computeDtypePasses(computeDtype) }),
    tinyConfig.numHiddenLayers,
    1,
  ],
  [
    'ERNIE decode loop',
    (computeDtype) => buildErnieDecodeLoopModel(ew, tinyConfig, { passes: computeDtypePasses(computeDtype) }),
    tinyConfig.numHiddenLayers,
    1,
  ],
  [
    'Granite, deepstack before layers 0 and 1',
    (computeDtype) => buildGraniteTextDecoderModel(gw, tinyGraniteConfig, { levels: [0, 1], passes: computeDtypePasses(computeDtype) }),
    tinyGraniteConfig.numHiddenLayers,
    2,
  ],
  [
    'Granite decode loop, text only',
    (computeDtype) => buildGraniteDecodeLoopModel(gw, tinyGraniteConfig, { levels: [], passes: computeDtypePasses(computeDtype) }),
    tinyGraniteConfig.numHiddenLayers,
    1,
  ],
];

describe('skipRmsNormPass on the tiny decoders', () => {
  for (const [label, build, L, unfused] of cases) {
    it.each(dtypes)(`${label}, %s: every residual add + RMSNorm fused, as the fused-norm builder did`, (dtype) => {
      const g = build(dtype);
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
