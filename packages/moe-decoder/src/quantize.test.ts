// Every decoder builder with `quantize` quantizes what nn.linear and the LM head wrote (quantizeLinearPass) and
// nothing else: the marked MatMul / Gemm nodes of the float build, one MatMulNBits each; the routers stay
// float; no float copy of a quantized weight is written. Numbers: models' quantize.test.ts on the fixtures.
import { CONTRIB_PASSES, everyNode, type Graph, nn } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildErnieDecodeLoopModel } from './ernie/decode-loop.js';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteDecodeLoopModel } from './granite/decode-loop.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { requireFixtures } from './test-utils/fixtures.js';
import { tinyDecoders } from './test-utils/map-decoder.js';

requireFixtures(['ernie-tiny', 'config.json'], ['granite-tiny', 'config.json']);

const count = (g: Graph, op: string) => [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === op).length;

/** The nodes nn.linear and the LM head marked in a float build. */
const marked = (g: Graph) =>
  [...everyNode(g.snapshot().nodes)].filter((n) => {
    const m = g.markOf(n.output?.[0] ?? '');
    return m === nn.LINEAR || m === nn.LM_HEAD;
  }).length;

/** The MatMuls of a float build no builder marked (ERNIE's routers). */
const unmarkedMatMuls = (g: Graph) =>
  [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === 'MatMul' && g.markOf(n.output?.[0] ?? '') === undefined).length;

describe('decoders built with quantize', () => {
  const ckpts: Checkpoint[] = [];
  const builds: Record<string, (quantize?: 'int8') => Graph> = {};
  beforeAll(async () => {
    const { ernie, ernieWeights: ew, granite, graniteWeights: gw, levels, checkpoints } = await tinyDecoders();
    ckpts.push(...checkpoints);
    const q = (quantize?: 'int8') => (quantize ? { quantize } : {});
    builds['ERNIE'] = (quantize) => buildErnieTextDecoderModel(ew, ernie, q(quantize));
    builds['ERNIE, contrib passes'] = (quantize) =>
      buildErnieTextDecoderModel(ew, ernie, { emptyModalityIf: false, passes: CONTRIB_PASSES, ...q(quantize) });
    builds['ERNIE decode loop'] = (quantize) => buildErnieDecodeLoopModel(ew, ernie, q(quantize));
    builds['Granite'] = (quantize) => buildGraniteTextDecoderModel(gw, granite, { levels, ...q(quantize) });
    builds['Granite decode loop'] = (quantize) => buildGraniteDecodeLoopModel(gw, granite, { levels, ...q(quantize) });
  });
  afterAll(async () => {
    for (const c of ckpts) await c.close();
  });

  for (const name of ['ERNIE', 'ERNIE, contrib passes', 'ERNIE decode loop', 'Granite', 'Granite decode loop']) {
    it(`${name}: one MatMulNBits per Linear layer and LM head, routers float, no float copy`, () => {
      const float = builds[name]!();
      const quantized = builds[name]!('int8');
      // A quantized ERNIE keeps 'sparse' experts (Linear layers): the fused MoE kernel takes float weights.
      const expected = name.includes('contrib') ? marked(builds['ERNIE']!()) : marked(float);
      expect(expected).toBeGreaterThan(0);
      expect(count(quantized, 'MatMulNBits')).toBe(expected);
      expect(count(quantized, 'MoE')).toBe(0);
      // The MatMuls left are what no builder marked (ERNIE's routers), as many as in the float build.
      expect(count(quantized, 'MatMul')).toBe(unmarkedMatMuls(float));
      if (name.startsWith('ERNIE')) expect(count(quantized, 'MatMul')).toBeGreaterThan(0); // its routers
      const names = new Set(quantized.snapshot().initializers.map((e) => e.name));
      const copies = [...names].filter((n) => n.endsWith('.quant') && names.has(n.slice(0, -'.quant'.length)));
      // Only a tied embedding table is kept in float, for the lookup.
      expect(copies.every((n) => n.includes('embed_tokens'))).toBe(true);
      expect([...names].filter((n) => n.endsWith('.quant'))).toHaveLength(expected);
    });
  }
});
