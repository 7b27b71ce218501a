// Both models built with each op set (`OPS_FIELDS`, the CLI's `--ops`: the cpu profile's decoder passes, and the
// cuda profile's that fuse into onnxruntime's com.microsoft ops), on
// every fixture case on CPU: the logits of each within 1e-5 of HF's (relative to max |logits|, padding excluded) and
// of each other, and the greedy ids equal to each other and to HF's. The bf16 case's HF logits are HF computing in
// bf16 (vlmkit computes in float32), so there only the two op sets are compared with each other.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  APPEND_ATTENTION_PASSES,
  CONTRIB_PASSES,
  expertGateUpPass,
  expertGroupsPass,
  moeExpertsPass,
  OP_SETS,
  type OpSet,
  oneFrameAttentionPass,
  storedLayoutCastPass,
  storedLayoutPass,
  wideMoeExpertsPass,
} from '@vlmkit/onnx-graph';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveLoad } from './model-load.js';
import { OPS_FIELDS, PROFILES, resolveProfile } from './profiles.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { type FixtureCase, fixtureCases, readTensors, relError } from './test-utils/fixtures.js';

const TOL = 1e-5;
const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-ops-test-'));
const loaded = new Map<string, PretrainedModel>();

async function loadFor(c: FixtureCase, ops: OpSet): Promise<PretrainedModel> {
  const adapter = c.json.adapter === undefined ? undefined : join(c.checkpoint, '..', String(c.json.adapter));
  const key = `${c.checkpoint}|${adapter ?? ''}|${ops}`;
  let m = loaded.get(key);
  if (!m) {
    m = await loadPretrained(c.checkpoint, {
      device: 'cpu',
      reference: 'hf',
      cacheDir,
      profile: OPS_FIELDS[ops],
      ...(adapter ? { adapter } : {}),
    });
    loaded.set(key, m);
  }
  return m;
}

afterAll(async () => {
  for (const m of loaded.values()) await m.release();
  rmSync(cacheDir, { recursive: true, force: true });
});

describe.each([...fixtureCases('ernie-tiny'), ...fixtureCases('granite-tiny')])('ops onnx and contrib: $checkpoint $name', (c) => {
  it(`forward logits within ${TOL} of HF's and of each other; greedy ids equal`, async () => {
    const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
    const expected = await readTensors(join(c.dir, 'expected.safetensors'));
    const ref = expected.logits!.data as Float32Array;
    const V = expected.logits!.dims.at(-1)!;
    const mask = inputs.attention_mask?.data as BigInt64Array | undefined;
    const real = (i: number) => !mask || mask[Math.floor(i / V)] === 1n;
    const hfIsBf16 = c.name === 'bf16';
    const logits: Float32Array[] = [];
    const ids: number[][][] = [];
    for (const ops of OP_SETS) {
      const m = await loadFor(c, ops);
      const out = await m.forwardNamed(inputs);
      const got = out.logits!.data as Float32Array;
      const err = relError(got, ref, real);
      console.log(`[${c.name}] ops ${ops}: logits vs HF ${err.toExponential(2)}`);
      if (!hfIsBf16) expect(err).toBeLessThan(TOL);
      logits.push(got);
      const n = expected.generated_ids?.dims[1] ?? 8;
      ids.push((await m.generate(inputs, { maxNewTokens: n, eos: [] })).tokens);
    }
    const between = relError(logits[1]!, logits[0]!, real);
    console.log(`[${c.name}] contrib vs onnx ${between.toExponential(2)}`);
    expect(between).toBeLessThan(TOL);
    expect(ids[1]).toEqual(ids[0]);
    if (expected.generated_ids) expect(ids[0]!.flat()).toEqual(Array.from(expected.generated_ids.data as BigInt64Array, Number));
  });
});

describe("the contrib passes inside the in-graph decode loop (loop: 'graph')", () => {
  it.each([
    ['ernie-tiny', 'batch-padded'],
    ['granite-tiny', 'batch-2'],
  ])('%s %s: the same greedy ids as the standard host loop', async (model, name) => {
    const c = fixtureCases(model).find((x) => x.name === name)!;
    const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
    const host = await (await loadFor(c, 'onnx')).generate(inputs, { maxNewTokens: 8, eos: [] });
    const m = await loadPretrained(c.checkpoint, {
      device: 'cpu',
      reference: 'hf',
      cacheDir,
      profile: { ...OPS_FIELDS.contrib, loop: 'graph' },
    });
    try {
      expect((await m.generate(inputs, { maxNewTokens: 8, eos: [] })).tokens).toEqual(host.tokens);
    } finally {
      await m.release();
    }
  });
});

describe('the graphs built', () => {
  it("each model's two decoder graphs differ: the contrib one holds the com.microsoft ops, the onnx one none", () => {
    for (const name of ['ernie-decoder', 'granite-decoder']) {
      const graphs = readdirSync(cacheDir).filter((f) => f.startsWith(`vlmkit-${name}-`) && f.endsWith('.onnx'));
      const fused = graphs.filter((f) => readFileSync(join(cacheDir, f)).includes('SkipSimplifiedLayerNormalization'));
      // Built both ways (the cache may have pruned superseded entries of a checkpoint: at least one of each is left).
      expect(fused.length).toBeGreaterThan(0);
      expect(graphs.length - fused.length).toBeGreaterThan(0);
    }
  });
});

describe('the decoder passes of each profile', () => {
  it("cpu: MoE on wide layers, the append pass, expert groups last; cuda: the contrib passes and MoE before it, no empty-modality If; both: stored-layout last; '--ops' sets both fields", () => {
    const names = (passes: readonly { name: string }[]) => passes.map((p) => p.name);
    const cpuPasses = [wideMoeExpertsPass, ...APPEND_ATTENTION_PASSES, storedLayoutPass, expertGateUpPass, expertGroupsPass];
    const cudaPasses = [...CONTRIB_PASSES, moeExpertsPass, ...APPEND_ATTENTION_PASSES, storedLayoutPass];
    expect(PROFILES.cpu).toMatchObject({
      decoderPasses: names(cpuPasses),
      visionPasses: ['stored-layout-cast', 'one-frame-attention'],
      emptyModalityIf: true,
    });
    expect(PROFILES.cuda).toMatchObject({ decoderPasses: names(cudaPasses), visionPasses: ['stored-layout'], emptyModalityIf: false });
    expect(resolveProfile(OPS_FIELDS.contrib, 'cpu')).toMatchObject({ ...OPS_FIELDS.contrib, kvCache: 'append' });
    expect(resolveProfile(OPS_FIELDS.onnx, 'cuda')).toMatchObject({ ...OPS_FIELDS.onnx, decoderPasses: names(cpuPasses) });
  });

  it('the load resolves the names to the passes the builders used to apply themselves, in their order', () => {
    const cuda = resolveLoad({ device: 'cpu', profile: 'cuda' }).decoder;
    expect(cuda.passes).toEqual([...CONTRIB_PASSES, moeExpertsPass, ...APPEND_ATTENTION_PASSES, storedLayoutPass]);
    expect(cuda.emptyModalityIf).toBe(false);
    expect(resolveLoad({ device: 'cpu' }).decoder.passes).toEqual([
      wideMoeExpertsPass,
      ...APPEND_ATTENTION_PASSES,
      storedLayoutPass,
      expertGateUpPass,
      expertGroupsPass,
    ]);
    expect(resolveLoad({ device: 'cpu' }).vision.passes).toEqual([storedLayoutCastPass, oneFrameAttentionPass]);
  });

  it('a pass name that is not one, and the old ops field, are refused by name', () => {
    expect(() => resolveProfile({ decoderPasses: ['contrib'] as never }, 'cpu')).toThrow(/decoderPasses must be a list of pass names/);
    expect(() => resolveProfile({ ops: 'contrib' } as never, 'cpu')).toThrow(/unknown field 'ops'/);
  });
});
