// The in-graph decode loop (load option loop: 'graph') against the host loop on every fixture case of both
// models: the same ids greedy and seeded-sampled, with left-padded batches, eos stops and several chunk sizes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildErnieDecodeLoopModel, buildErnieTextDecoderModel } from '@vlmkit/moe-decoder';
import { loadModelProto } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfigFile } from './config-file.js';
import { ernie45VLConfig } from './ernie/config.js';
import { Ernie45VL } from './ernie/model.js';
import { loadErnieWeights } from './ernie/weights.js';
import { ModelError } from './errors.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import type { GenerateResult } from './generate.js';
import { readGenerationConfig } from './generation-tokens.js';
import { Granite4Vision } from './granite/model.js';
import type { DecodeLoop, ModelGenerateOptions } from './graph-loop.js';
import { OPS_FIELDS } from './profiles.js';
import { cachedSession } from './session-cache.node.js';
import { fixtureCases, readTensors } from './test-utils/fixtures.js';

interface Generator {
  generate(inputs: never, o: ModelGenerateOptions): Promise<GenerateResult>;
  release(): Promise<void>;
}

const loaded = new Map<string, Generator>();
async function load(family: 'ernie' | 'granite', checkpoint: string, adapter: string | undefined, loop: DecodeLoop): Promise<Generator> {
  const key = `${family}|${checkpoint}|${adapter ?? ''}|${loop}`;
  let m = loaded.get(key);
  if (!m) {
    m =
      family === 'ernie'
        ? await Ernie45VL.fromPretrained(checkpoint, { device: 'cpu', reference: 'hf', profile: { loop } })
        : await Granite4Vision.fromPretrained(checkpoint, { device: 'cpu', adapter, profile: { loop } });
    loaded.set(key, m as Generator);
  }
  return m as Generator;
}

afterAll(async () => {
  for (const m of loaded.values()) await m.release();
});

const cases = [
  ...fixtureCases('ernie-tiny').map((c) => ({ family: 'ernie' as const, ...c })),
  ...fixtureCases('granite-tiny').map((c) => ({ family: 'granite' as const, ...c })),
];

/** What one generate call shows: the ids and every onToken call. */
async function run(m: Generator, inputs: never, o: ModelGenerateOptions) {
  const streamed: [number, number[]][] = [];
  const out = await m.generate(inputs, { ...o, onToken: (t, n) => void streamed.push([n, [...t]]) });
  return { tokens: out.tokens, streamed, stepMs: out.timings.stepMs.length };
}

describe.each(cases)('loop graph = loop host: $family $name', (c) => {
  const adapter = typeof c.json.adapter === 'string' ? join(FIXTURE_DIR, c.json.adapter) : undefined;
  let inputs: never;
  let host: Generator;
  let graph: Generator;
  beforeAll(async () => {
    inputs = (await readTensors(`${c.dir}/inputs.safetensors`)) as never;
    host = await load(c.family, c.checkpoint, adapter, 'host');
    graph = await load(c.family, c.checkpoint, adapter, 'graph');
  });
  const N = 7;

  it(`greedy, ${N} tokens, no eos: identical ids and streaming with chunks of 1, 3 and all`, async () => {
    const want = await run(host, inputs, { maxNewTokens: N, eos: [] });
    expect(want.tokens[0]).toHaveLength(N);
    for (const loopChunk of [1, 3, N]) {
      const got = await run(graph, inputs, { maxNewTokens: N, eos: [], loop: 'graph', loopChunk });
      expect({ loopChunk, ...got }).toEqual({ loopChunk, ...want });
    }
    console.log(`[graph-loop] ${c.family} ${c.name} greedy rows=${want.tokens.length}: ${JSON.stringify(want.tokens)} equal`);
  });

  it('greedy with an eos that row 0 generates at step 2: rows end (pad after) and generation stops as on the host', async () => {
    const first = await run(host, inputs, { maxNewTokens: N, eos: [] });
    const eos = first.tokens[0]![2]!;
    const want = await run(host, inputs, { maxNewTokens: N, eos });
    for (const loopChunk of [1, 3, N]) {
      const got = await run(graph, inputs, { maxNewTokens: N, eos, loop: 'graph', loopChunk });
      expect(got).toEqual(want);
    }
    console.log(`[graph-loop] ${c.family} ${c.name} eos=${eos}: ${JSON.stringify(want.tokens)} equal`);
  });

  it('seeded sampling (temperature, top-k, top-p; and plain temperature): identical ids', async () => {
    for (const sampling of [
      { temperature: 0.9, topK: 5, topP: 0.8, seed: 11 },
      { temperature: 1.7, seed: 3 },
    ]) {
      const want = await run(host, inputs, { maxNewTokens: N, eos: [], ...sampling });
      for (const loopChunk of [1, 3, N]) {
        const got = await run(graph, inputs, { maxNewTokens: N, eos: [], loop: 'graph', loopChunk, ...sampling });
        expect(got).toEqual(want);
      }
      console.log(`[graph-loop] ${c.family} ${c.name} sample ${JSON.stringify(sampling)}: ${JSON.stringify(want.tokens)} equal`);
    }
  });
});

describe('loop graph = loop host: maxNewTokens 0 and 1, abort', () => {
  it('returns what the host loop returns for 0 and 1 new tokens and when aborted from onToken at step 2 (ERNIE batch-padded)', async () => {
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'batch-padded')!;
    const inputs = (await readTensors(`${c.dir}/inputs.safetensors`)) as never;
    const [host, graph] = [await load('ernie', c.checkpoint, undefined, 'host'), await load('ernie', c.checkpoint, undefined, 'graph')];
    for (const maxNewTokens of [0, 1]) {
      expect(await run(graph, inputs, { maxNewTokens, eos: [], loop: 'graph' })).toEqual(
        await run(host, inputs, { maxNewTokens, eos: [] }),
      );
    }
    const aborted = async (m: Generator, o: Partial<ModelGenerateOptions>) => {
      const stop = new AbortController();
      const streamed: number[][] = [];
      const out = await m.generate(inputs, {
        ...o,
        maxNewTokens: 6,
        eos: [],
        signal: stop.signal,
        onToken: (t, n) => {
          streamed.push([...t]);
          if (n === 2) stop.abort();
        },
      });
      return { tokens: out.tokens, streamed };
    };
    const want = await aborted(host, {});
    expect(want.tokens[0]).toHaveLength(3);
    for (const loopChunk of [1, 4]) expect(await aborted(graph, { loop: 'graph', loopChunk })).toEqual(want);
  });
});

describe('loop graph = loop host with other decoder builds', () => {
  for (const [label, load] of [
    ['int8 weights (MatMulNBits inside the body)', { quantize: 'int8' }],
    ['the contrib passes (fused kernels inside the body)', { profile: OPS_FIELDS.contrib }],
  ] as const) {
    it(`${label}: greedy and sampled ids equal, ERNIE images and Granite batch-2`, async () => {
      const picks = [
        { family: 'ernie' as const, c: fixtureCases('ernie-tiny').find((x) => x.name === 'images')! },
        { family: 'granite' as const, c: fixtureCases('granite-tiny').find((x) => x.name === 'batch-2')! },
      ];
      for (const { family, c } of picks) {
        const inputs = (await readTensors(`${c.dir}/inputs.safetensors`)) as never;
        const open = (loop: DecodeLoop) => {
          const o = { device: 'cpu' as const, ...load, profile: { ...('profile' in load ? load.profile : {}), loop } };
          return family === 'ernie'
            ? Ernie45VL.fromPretrained(c.checkpoint, { ...o, reference: 'hf' })
            : Granite4Vision.fromPretrained(c.checkpoint, o);
        };
        const [host, graph] = [await open('host'), await open('graph')];
        try {
          for (const o of [
            { maxNewTokens: 6, eos: [] },
            { maxNewTokens: 6, eos: [], temperature: 1.2, topP: 0.9, seed: 5 },
          ]) {
            const want = await run(host as unknown as Generator, inputs, o);
            expect(await run(graph as unknown as Generator, inputs, { ...o, loopChunk: 4 })).toEqual(want);
          }
        } finally {
          await host.release();
          await graph.release();
        }
      }
    });
  }
});

describe('loop option errors', () => {
  it('a model loaded for one loop refuses the other (DECODE_LOOP_UNAVAILABLE), forward included; a bad loopChunk is refused', async () => {
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
    const inputs = (await readTensors(`${c.dir}/inputs.safetensors`)) as never;
    const graph = (await load('ernie', c.checkpoint, undefined, 'graph')) as unknown as Ernie45VL;
    const host = await load('ernie', c.checkpoint, undefined, 'host');
    for (const p of [host.generate(inputs, { maxNewTokens: 2, loop: 'graph' }), graph.forward(inputs)]) {
      const err = await (p as Promise<unknown>).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as ModelError).code).toBe('DECODE_LOOP_UNAVAILABLE');
    }
    const err = await graph.generate(inputs, { maxNewTokens: 2, loopChunk: 0 }).catch((e: unknown) => e);
    expect((err as ModelError).code).toBe('BAD_GENERATION_OPTIONS');
  });
});

describe('the loop graph', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it("holds one copy of the decoder: the step graph's decoder nodes once, in the Loop body; its weights once, in the root", async () => {
    const root = join(FIXTURE_DIR, 'ernie-tiny');
    const config = ernie45VLConfig((await readConfigFile(root)).json, 'hf', await readGenerationConfig(root));
    const ckpt = await Checkpoint.open(root);
    const { decoder } = await loadErnieWeights(ckpt, config);
    const step = buildErnieTextDecoderModel(decoder, config.text, { logitsToKeep: true, kvCache: 'concat' }).snapshot();
    const loop = buildErnieDecodeLoopModel(decoder, config.text).snapshot();
    await ckpt.close();
    const decoderNodes = (nodes: readonly { name?: string | null; opType?: string | null }[]) =>
      nodes.filter((n) => n.name!.startsWith('decoder.')).map((n) => n.opType);
    const loops = loop.nodes.filter((n) => n.opType === 'Loop');
    expect(loops).toHaveLength(1);
    expect(decoderNodes(loop.nodes)).toEqual([]);
    const body = loops[0]!.attribute!.find((a) => a.name === 'body')!.g!;
    expect(decoderNodes(body.node!)).toEqual(decoderNodes(step.nodes));
    const names = loop.initializers.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    for (const e of step.initializers.filter((x) => x.name.startsWith('decoder.'))) expect(names).toContain(e.name);
  });

  it('goes through the graph cache with a bf16 checkpoint: folded as the step graph is (no Cast of a weight left in the body), then found', async () => {
    const root = join(FIXTURE_DIR, 'ernie-tiny-bf16');
    const cacheDir = await mkdtemp(join(tmpdir(), 'vlmkit-loop-cache-'));
    dirs.push(cacheDir);
    const config = ernie45VLConfig((await readConfigFile(root)).json, 'hf', await readGenerationConfig(root));
    const ckpt = await Checkpoint.open(root);
    const { decoder } = await loadErnieWeights(ckpt, config);
    const o = { cacheDir, device: 'cpu' as const };
    const first = await cachedSession(buildErnieDecodeLoopModel(decoder, config.text), root, 'ernie-decode-loop', o);
    const again = await cachedSession(buildErnieDecodeLoopModel(decoder, config.text), root, 'ernie-decode-loop', o);
    const step = await cachedSession(buildErnieTextDecoderModel(decoder, config.text, { logitsToKeep: true }), root, 'ernie-decoder', o);
    await ckpt.close();
    expect([first.cached, again.cached]).toEqual([false, true]);
    expect(again.modelPath).toBe(first.modelPath);
    const weights = async (path: string) => {
      const proto = await loadModelProto(path);
      return {
        proto,
        types: new Map(proto.graph!.initializer!.filter((t) => t.name!.startsWith('decoder.')).map((t) => [t.name!, t.dataType!])),
      };
    };
    const loop = await weights(first.modelPath);
    const body = loop.proto.graph!.node!.find((n) => n.opType === 'Loop')!.attribute!.find((a) => a.name === 'body')!.g!;
    expect(body.node!.filter((n) => n.opType === 'Cast' && loop.types.has(n.input![0]!))).toEqual([]);
    // The same weights, folded the same way (bf16 -> float32 [in, out]) as in the step graph.
    expect([...loop.types].sort()).toEqual([...(await weights(step.modelPath)).types].sort());
    expect([...loop.types.values()]).toContain(1);
    await step.session.release();
    await first.session.release();
    await again.session.release();
  });
});
