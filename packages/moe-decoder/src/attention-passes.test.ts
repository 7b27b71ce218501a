// The attention is built once (opset-23 RotaryEmbedding + Attention); onnx-graph's passes make the fast forms.
// Built plainly and rewritten, the tiny decoders hold the attention ops the builders wrote directly before the
// passes existed (moe-decoder at 5326e0b, same configs): counted over the graph and its bodies.
import {
  APPEND_ATTENTION_PASSES,
  applyPasses,
  CONTRIB_PASSES,
  computeDtypePasses,
  everyNode,
  Graph,
  type GraphPass,
} from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { ernieAttention } from './ernie/attention.js';
import { buildErnieDecodeLoopModel } from './ernie/decode-loop.js';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteDecodeLoopModel } from './granite/decode-loop.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { contribPasses } from './test-utils/ops-variants.js';
import { randomGraniteWeights, randomWeights, tinyConfig, tinyGraniteConfig } from './test-utils/random-model.js';
import type { KvCacheMode } from './types.js';

const OPS = ['MultiHeadAttention', 'GroupQueryAttention', 'RotaryEmbedding', 'If'] as const;

/** [com.microsoft MultiHeadAttention, GroupQueryAttention, RotaryEmbedding, If] and the opset-23 [RotaryEmbedding, Attention]. */
function counts(g: Graph): { ms: number[]; onnx: number[] } {
  const nodes = [...everyNode(g.nodes)];
  const n = (op: string, ms: boolean) => nodes.filter((x) => x.opType === op && (x.domain === 'com.microsoft') === ms).length;
  return { ms: OPS.map((op) => n(op, op !== 'If')), onnx: [n('RotaryEmbedding', false), n('Attention', false)] };
}

interface Row {
  label: string;
  build: { emptyModalityIf?: boolean; kvCache?: KvCacheMode; passes?: readonly GraphPass[]; loop?: boolean };
  passes: readonly GraphPass[];
  /** The builders' counts at 5326e0b: ERNIE (3 layers, 2 MoE) then Granite (2 layers). */
  ernie: { ms: number[]; onnx: number[] };
  granite: { ms: number[]; onnx: number[] };
}

/** The cuda profile's build: ERNIE's vision experts without their If (`emptyModalityIf`). */
const contrib = { emptyModalityIf: false } as const;
const ROWS: Row[] = [
  { label: 'standard ops', build: {}, passes: [], ernie: { ms: [0, 0, 0, 2], onnx: [6, 3] }, granite: { ms: [0, 0, 0, 0], onnx: [4, 2] } },
  {
    label: 'contrib passes, float32 (MultiHeadAttention)',
    build: contrib,
    passes: CONTRIB_PASSES,
    ernie: { ms: [3, 0, 6, 0], onnx: [0, 0] },
    granite: { ms: [2, 0, 4, 0], onnx: [0, 0] },
  },
  {
    label: 'contrib passes, float16 (GroupQueryAttention)',
    build: { ...contrib, passes: computeDtypePasses('float16') },
    passes: CONTRIB_PASSES,
    ernie: { ms: [0, 3, 6, 0], onnx: [0, 0] },
    granite: { ms: [0, 2, 4, 0], onnx: [0, 0] },
  },
  {
    label: "kvCache 'append', float32: an If (and a nested one) per layer, 5 Attention ops in its branches",
    build: { kvCache: 'append' },
    passes: APPEND_ATTENTION_PASSES,
    ernie: { ms: [0, 0, 0, 2 + 2 * 3], onnx: [6, 5 * 3] },
    granite: { ms: [0, 0, 0, 2 * 2], onnx: [4, 5 * 2] },
  },
  {
    label: "kvCache 'append', float16: the op kept",
    build: { kvCache: 'append', passes: computeDtypePasses('float16') },
    passes: APPEND_ATTENTION_PASSES,
    ernie: { ms: [0, 0, 0, 2], onnx: [6, 3] },
    granite: { ms: [0, 0, 0, 0], onnx: [4, 2] },
  },
  {
    label: "kvCache 'append' and contrib passes: the fused ops win",
    build: { ...contrib, kvCache: 'append' },
    passes: [...CONTRIB_PASSES, ...APPEND_ATTENTION_PASSES],
    ernie: { ms: [3, 0, 6, 0], onnx: [0, 0] },
    granite: { ms: [2, 0, 4, 0], onnx: [0, 0] },
  },
  {
    label: 'in-graph loop, contrib passes: rewritten inside the Loop body',
    build: { ...contrib, loop: true },
    passes: CONTRIB_PASSES,
    ernie: { ms: [3, 0, 6, 1], onnx: [0, 0] },
    granite: { ms: [2, 0, 4, 1], onnx: [0, 0] },
  },
  {
    label: 'in-graph loop, contrib passes, float16',
    build: { ...contrib, loop: true, passes: computeDtypePasses('float16') },
    passes: CONTRIB_PASSES,
    ernie: { ms: [0, 3, 6, 1], onnx: [0, 0] },
    granite: { ms: [0, 2, 4, 1], onnx: [0, 0] },
  },
];

describe('decoders built plainly, then rewritten by the attention passes', () => {
  const ew = randomWeights(tinyConfig).weights;
  const gw = randomGraniteWeights(tinyGraniteConfig, 3);

  it("one exit: the attention of an 'append' float32 cache is written with the opset-23 ops too", () => {
    const g = new Graph();
    const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = tinyConfig;
    const table = (name: string) => g.input(name, 'float32', ['batch', 'seq', hd / 2]);
    const cache = (name: string) => g.input(name, 'float32', ['batch', hkv, 'slots', hd]);
    const r = ernieAttention(g, ew.sub('layers.0.self_attn'), tinyConfig, {
      hidden: g.input('hidden', 'float32', ['batch', 'seq', D]),
      cos: table('cos'),
      sin: table('sin'),
      mask: g.input('mask', 'bool', ['batch', 1, 'seq', 'total']),
      past: { key: cache('past_key'), value: cache('past_value') },
      kvCache: 'append',
    });
    g.output(r.out, 'out');
    expect(counts(g)).toEqual({ ms: [0, 0, 0, 0], onnx: [2, 1] });
  });

  for (const row of ROWS) {
    it(`${row.label}: the attention ops the builders used to write`, () => {
      const { loop, ...o } = row.build;
      const ernie = loop ? buildErnieDecodeLoopModel(ew, tinyConfig, o) : buildErnieTextDecoderModel(ew, tinyConfig, o);
      const granite = loop
        ? buildGraniteDecodeLoopModel(gw, tinyGraniteConfig, { levels: [], ...o })
        : buildGraniteTextDecoderModel(gw, tinyGraniteConfig, { levels: [], ...o });
      for (const g of [ernie, granite]) applyPasses(g, row.passes);
      expect(counts(ernie)).toEqual(row.ernie);
      expect(counts(granite)).toEqual(row.granite);
    });
  }

  // The kernel is the pass's option, whatever the dtype's default (ERNIE's MoE Ifs aside: counted without them).
  it('a kernel asked for: GroupQueryAttention in float32, MultiHeadAttention in bfloat16', () => {
    for (const [kernel, computeDtype, op] of [
      ['gqa', 'float32', 'GroupQueryAttention'],
      ['mha', 'bfloat16', 'MultiHeadAttention'],
    ] as const) {
      const e = buildErnieTextDecoderModel(ew, tinyConfig, { passes: computeDtypePasses(computeDtype) });
      const g = buildGraniteTextDecoderModel(gw, tinyGraniteConfig, { levels: [], passes: computeDtypePasses(computeDtype) });
      expect(applyPasses(e, contribPasses(kernel))[`contrib-attention-${kernel}`]).toBe(3);
      expect(applyPasses(g, contribPasses(kernel))[`contrib-attention-${kernel}`]).toBe(2);
      for (const [graph, L] of [
        [e, 3],
        [g, 2],
      ] as const) {
        const nodes = [...everyNode(graph.nodes)].filter((n) => n.domain === 'com.microsoft');
        expect(nodes.filter((n) => n.opType === op)).toHaveLength(L);
        expect(nodes.filter((n) => n.opType === 'RotaryEmbedding')).toHaveLength(2 * L);
      }
    }
  });
});
