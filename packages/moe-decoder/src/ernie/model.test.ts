import { everyNode, Graph, type GraphPass, modelBytes, moeExpertsPass } from '@vlmkit/onnx-graph';
import { beforeAll, describe, expect, it } from 'vitest';
import { MoeDecoderError } from '../errors.js';
import { f32, i64, maxAbs, maxAbsDiff, randn, run, sessionFor } from '../test-utils/ort.js';
import { randomWeights, tinyConfig } from '../test-utils/random-model.js';
import { type RefInputs, referenceForward } from '../test-utils/reference.js';
import { buildErnieTextDecoder } from './model.js';
import { ernieRotaryTables } from './rotary.js';
import { buildErnieTextDecoderModel } from './standalone.js';

const cfg = tinyConfig;
const { weights, arrays } = randomWeights(cfg);
const [D, hkv, hd] = [cfg.hiddenSize, cfg.numKeyValueHeads, cfg.headDim];

/** A random step: B rows, S new tokens after P cached ones, row 1 left-padded by `pad`, some vision rows. */
function makeInputs(B: number, S: number, P: number, pad: number, vision: number[], seed: number): RefInputs {
  const T = P + S;
  const ids = Array.from(randn(B * S, seed), (v) => Math.abs(Math.floor(v * 1000)) % cfg.vocabSize);
  const mask = Array.from({ length: B * T }, (_, n) => (Math.floor(n / T) === 1 && n % T < pad ? 0 : 1));
  const moeType = Array.from({ length: B * S }, (_, n) => (vision.includes(n) || n % 4 === 3 ? 1 : 0));
  // 3D positions: distinct t/h/w values so every frequency group matters.
  const pos = new BigInt64Array(3 * B * S);
  for (let a = 0; a < 3; a++) for (let n = 0; n < B * S; n++) pos[a * B * S + n] = BigInt(P + (n % S) + a * (n % 3));
  const { cos, sin } = ernieRotaryTables(pos, [3, B, S], cfg);
  const pastK = Array.from({ length: cfg.numHiddenLayers }, (_, l) => randn(B * hkv * P * hd, seed + 10 + l));
  const pastV = Array.from({ length: cfg.numHiddenLayers }, (_, l) => randn(B * hkv * P * hd, seed + 20 + l));
  return { B, S, P, ids, visionEmbeds: randn(vision.length * D, seed + 5), visionPositions: vision, moeType, mask, cos, sin, pastK, pastV };
}

function feeds(inp: RefInputs) {
  const { B, S, P } = inp;
  const f: Record<string, ReturnType<typeof f32>> = {
    input_ids: i64([B, S], inp.ids),
    vision_embeds: f32([inp.visionPositions.length, D], inp.visionEmbeds),
    vision_positions: i64([inp.visionPositions.length], inp.visionPositions),
    moe_token_type: i64([B, S], inp.moeType),
    attention_mask: i64([B, P + S], inp.mask),
    rope_cos: f32([B, S, hd / 2], inp.cos),
    rope_sin: f32([B, S, hd / 2], inp.sin),
  };
  for (let l = 0; l < cfg.numHiddenLayers; l++) {
    f[`past_key_values.${l}.key`] = f32([B, hkv, P, hd], inp.pastK[l]!);
    f[`past_key_values.${l}.value`] = f32([B, hkv, P, hd], inp.pastV[l]!);
  }
  return f;
}

describe.each<{ experts: string; passes: GraphPass[] }>([
  { experts: 'as built', passes: [] },
  { experts: 'moe-experts (com.microsoft MoE)', passes: [moeExpertsPass] },
])('ERNIE text decoder vs a plain-TypeScript reference (random weights, experts $experts)', ({ passes }) => {
  let session: Awaited<ReturnType<typeof sessionFor>>;
  beforeAll(async () => {
    session = await sessionFor(buildErnieTextDecoderModel(weights, cfg, { outputHiddenStates: true, passes }));
  });

  it('runs the vision router and experts inside an If per MoE layer (skipped without vision tokens), or none with emptyModalityIf false', () => {
    const moeLayers = cfg.mlpLayerTypes.filter((t) => t === 'sparse').length;
    expect(moeLayers).toBeGreaterThan(0);
    const visionIfs = (g: ReturnType<typeof buildErnieTextDecoderModel>) =>
      g.snapshot().nodes.filter((n) => n.opType === 'If' && /\.mlp\./.test(n.name ?? '')).length;
    expect(visionIfs(buildErnieTextDecoderModel(weights, cfg, { passes }))).toBe(moeLayers);
    expect(visionIfs(buildErnieTextDecoderModel(weights, cfg, { passes, emptyModalityIf: false }))).toBe(0);
  });

  it('as built, groups the routed tokens by expert (one E + 1 way Split per modality and MoE layer); the pass leaves one MoE each', () => {
    const nodes = [...everyNode(buildErnieTextDecoderModel(weights, cfg, { passes }).snapshot().nodes)];
    const groupings = nodes.filter((n) => n.opType === 'Split' && cfg.moe.numExperts.some((e) => n.output?.length === e + 1));
    const moeLayers = cfg.mlpLayerTypes.filter((t) => t === 'sparse').length;
    expect(groupings.length).toBe(passes.length === 0 ? 2 * moeLayers : 0);
    expect(nodes.filter((n) => n.opType === 'MoE').length).toBe(passes.length === 0 ? 0 : 2 * moeLayers);
    // No per-expert NonZero + ScatterND (16 nodes per expert; ORT's session creation is quadratic in such values).
    if (passes.length === 0) {
      expect(nodes.some((n) => /\.mlp\./.test(n.name ?? '') && (n.opType === 'NonZero' || n.opType === 'ScatterND'))).toBe(false);
    }
  });

  // Tolerance: float32 sums in a different order; 1e-5 of the largest |value|.
  const cases: [string, RefInputs][] = [
    ['prefill with vision rows and left padding (P = 0)', makeInputs(2, 6, 0, 2, [1, 2, 8], 100)],
    ['a step after a KV cache (P = 3), padded row, vision rows', makeInputs(2, 4, 3, 2, [0, 5], 200)],
    ['one decode token per row, no vision rows (N = 0)', makeInputs(2, 1, 5, 3, [], 300)],
  ];
  for (const [name, inp] of cases) {
    it(name, async () => {
      const ref = referenceForward(cfg, arrays, inp);
      const out = await run(session, feeds(inp));
      const logits = out.logits!.data as Float32Array;
      expect(out.logits!.dims).toEqual([inp.B, inp.S, cfg.vocabSize]);
      expect(maxAbsDiff(logits, ref.logits) / maxAbs(ref.logits)).toBeLessThan(1e-5);
      for (let l = 0; l < cfg.numHiddenLayers; l++) {
        const h = out[`hidden_states.${l}`]!.data as Float32Array;
        expect(maxAbsDiff(h, ref.layerOutputs[l]!) / maxAbs(ref.layerOutputs[l]!)).toBeLessThan(1e-5);
        expect(out[`present.${l}.key`]!.dims).toEqual([inp.B, hkv, inp.P + inp.S, hd]);
        expect(maxAbsDiff(out[`present.${l}.key`]!.data as Float32Array, ref.presentK[l]!)).toBeLessThan(1e-4);
        expect(maxAbsDiff(out[`present.${l}.value`]!.data as Float32Array, ref.presentV[l]!)).toBeLessThan(1e-4);
      }
      // The prompt cases must route through more than k distinct experts, or routing would be untested.
      if (inp.S > 1) expect(new Set(ref.routes.get(1)!.experts.flat()).size).toBeGreaterThan(cfg.moe.topK);
    });
  }

  it('the correction bias changes routing somewhere and the graph follows it', async () => {
    // With the bias zeroed, the reference picks other experts for some token; both runs must still match.
    const inp = makeInputs(2, 6, 0, 0, [1, 2, 8], 400);
    const zeroed = new Map(arrays);
    for (const [k, v] of arrays) if (k.endsWith('e_score_correction_bias')) zeroed.set(k, new Float32Array(v.length));
    const a = referenceForward(cfg, arrays, inp);
    const b = referenceForward(cfg, zeroed, inp);
    const differs = [...a.routes.keys()].some((l) => JSON.stringify(a.routes.get(l)!.experts) !== JSON.stringify(b.routes.get(l)!.experts));
    expect(differs).toBe(true);
    const out = await run(session, feeds(inp));
    expect(maxAbsDiff(out.logits!.data as Float32Array, a.logits) / maxAbs(a.logits)).toBeLessThan(1e-5);
  });
});

describe('graph structure', () => {
  it('stores a tied embedding once and names nodes after the module tree', async () => {
    const g = buildErnieTextDecoderModel(weights, cfg);
    const { initializers, nodes } = g.snapshot();
    const emb = initializers.filter((e) => e.ref.shape[0] === cfg.vocabSize && e.ref.shape[1] === D);
    expect(emb.map((e) => e.name)).toEqual(['decoder.embed_tokens.weight']);
    expect(nodes.some((n) => n.name === 'decoder.layers.1.mlp.text_experts.router.TopK')).toBe(true);
    // Sparse experts (the default) embed each expert's own weights, never the stacked ones.
    expect(initializers.some((e) => e.name === 'decoder.layers.2.mlp.vision_experts.0.down_proj.weight')).toBe(true);
    expect(initializers.some((e) => e.name.endsWith('w13_weight'))).toBe(false);
    // Deterministic: the same inputs give the same bytes.
    const again = buildErnieTextDecoderModel(weights, cfg);
    expect(Buffer.from(await modelBytes(g)).equals(Buffer.from(await modelBytes(again)))).toBe(true);
  });

  it('adds itself to a caller graph under its own scope, twice', () => {
    const g = new Graph();
    const common = {
      moeTokenType: g.input('t', 'int64', ['b', 's']),
      attentionMask: g.input('m', 'int64', ['b', 'T']),
      ropeCos: g.input('c', 'float32', ['b', 's', hd / 2]),
      ropeSin: g.input('n', 'float32', ['b', 's', hd / 2]),
    };
    const a = buildErnieTextDecoder(g, weights, cfg, { inputIds: g.input('ids', 'int64', ['b', 's']), ...common }, { scope: 'a' });
    const b = buildErnieTextDecoder(g, weights, cfg, { inputsEmbeds: g.input('e', 'float32', ['b', 's', D]), ...common }, { scope: 'b' });
    expect(a.present).toBeUndefined();
    expect(a.logits.shape).toEqual(['b', 's', cfg.vocabSize]);
    expect(b.layerOutputs).toHaveLength(cfg.numHiddenLayers);
  });

  it('refuses inconsistent inputs with a typed error', () => {
    const bad = () => {
      const g = new Graph();
      const t = g.input('t', 'int64', ['b', 's']);
      const c = g.input('c', 'float32', ['b', 's', 4]);
      return buildErnieTextDecoder(g, weights, cfg, { moeTokenType: t, attentionMask: t, ropeCos: c, ropeSin: c });
    };
    expect(bad).toThrow(MoeDecoderError);
    expect(bad).toThrow(/exactly one of inputIds and inputsEmbeds/);
  });
});
