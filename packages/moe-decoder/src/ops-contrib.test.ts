import { applyPasses, CONTRIB_PASSES, everyNode, type Graph, moeExpertsPass } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { requireFixtures } from './test-utils/fixtures.js';
import { tinyDecoders } from './test-utils/map-decoder.js';
import { contribPasses } from './test-utils/ops-variants.js';

requireFixtures(['ernie-tiny', 'config.json'], ['granite-tiny', 'config.json']);

/** Node count per `domain:opType`. */
function opCounts(g: Graph): Map<string, number> {
  const m = new Map<string, number>();
  for (const n of everyNode(g.snapshot().nodes)) {
    const k = `${n.domain ? `${n.domain}:` : ''}${n.opType}`;
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

/** `g` rewritten by the contrib passes, its attention fused into GroupQueryAttention (not float32's default). */
function withGqa(g: Graph): Graph {
  applyPasses(g, contribPasses('gqa'));
  return g;
}

// What the contrib passes make (`CONTRIB_PASSES` on a build with fused experts, and GroupQueryAttention on a plain build with ERNIE's experts as
// the com.microsoft MoE): every residual add + RMSNorm pair one SkipSimplifiedLayerNormalization, every rotary and attention a com.microsoft op, no opset-23 Attention / RotaryEmbedding left, and RMSNormalization only
// where no residual add comes before the norm (layer 0's input norm; Granite's input norm of a layer whose input
// has deepstack features added first). Numbers: the fixture tests run every case both ways.
describe('decoders built with com.microsoft fused ops', () => {
  const ckpts: Checkpoint[] = [];
  // unfused: the RMSNorms with no residual add to take in (layer 0's input norm; Granite's layers after a deepstack injection).
  const graphs: Record<string, { onnx: Graph; mha: Graph; gqa: Graph; layers: number; unfused: number }> & { ernieMoeLayers?: number } = {};
  beforeAll(async () => {
    const { ernie, ernieWeights: ew, granite, graniteWeights: gw, levels, checkpoints } = await tinyDecoders();
    ckpts.push(...checkpoints);
    graphs.ernieMoeLayers = ernie.mlpLayerTypes.filter((t) => t === 'sparse').length;
    graphs.ernie = {
      onnx: buildErnieTextDecoderModel(ew, ernie),
      mha: buildErnieTextDecoderModel(ew, ernie, { emptyModalityIf: false, passes: [...CONTRIB_PASSES, moeExpertsPass] }),
      gqa: withGqa(buildErnieTextDecoderModel(ew, ernie, { passes: [moeExpertsPass] })),
      layers: ernie.numHiddenLayers,
      unfused: 1,
    };
    graphs.granite = {
      onnx: buildGraniteTextDecoderModel(gw, granite, { levels }),
      mha: buildGraniteTextDecoderModel(gw, granite, { levels, passes: CONTRIB_PASSES }),
      gqa: withGqa(buildGraniteTextDecoderModel(gw, granite, { levels })),
      layers: granite.numHiddenLayers,
      unfused: 1 + new Set(levels.filter((l) => l > 0)).size,
    };
  });
  afterAll(async () => {
    for (const c of ckpts) await c.close();
  });

  for (const model of ['ernie', 'granite'] as const) {
    it(`${model}: the fused ops replace the standard ones (node counts)`, () => {
      const { onnx, mha, gqa, layers: L, unfused } = graphs[model] as (typeof graphs)['ernie'];
      const [a, b, c] = [opCounts(onnx), opCounts(mha), opCounts(gqa)];
      console.log(`[${model}] nodes: standard ${total(a)}, contrib+MHA ${total(b)}, contrib+GQA ${total(c)}`);
      expect(a.get('Attention')).toBe(L);
      expect(a.get('RMSNormalization')).toBe(2 * L + 1);
      expect(a.get('RotaryEmbedding')).toBe(2 * L);
      for (const m of [b, c]) {
        expect(m.get('RMSNormalization')).toBe(unfused);
        expect(m.get('com.microsoft:SkipSimplifiedLayerNormalization')).toBe(2 * L + 1 - unfused);
        expect(m.get('com.microsoft:RotaryEmbedding')).toBe(2 * L);
        expect(m.get('Attention')).toBeUndefined();
        expect(m.get('RotaryEmbedding')).toBeUndefined();
      }
      // ERNIE: each MoE layer's two modalities are one com.microsoft MoE each.
      const moeLayers = model === 'ernie' ? 2 * graphs.ernieMoeLayers! : undefined;
      for (const m of [a, b, c]) expect(m.get('com.microsoft:MoE')).toBe(m === a ? undefined : moeLayers);
      expect(b.get('com.microsoft:MultiHeadAttention')).toBe(L);
      expect(c.get('com.microsoft:GroupQueryAttention')).toBe(L);
    });
  }
});
