// computeDtype float16 / bfloat16 with the in-graph decode loop (loop: 'graph') against the host loop in the
// same dtype, on every fixture case of both models: the same greedy ids and streaming, chunks of 1 and 3, left-
// padded batches included; seeded sampling too. float16 runs on ORT's CPU EP as built; bfloat16 through emulateInFloat32 (Loop
// bodies rewritten too), since ORT's CPU EP has no bfloat16 compute kernels: without emulation the bfloat16
// loop graph's session fails with NO_KERNEL, checked below.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ComputeDType } from '@vlmkit/onnx-graph';
import { RuntimeError } from '@vlmkit/runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import type { GenerateResult } from './generate.js';
import type { DecodeLoop, ModelGenerateOptions } from './graph-loop.js';
import { loadPretrained } from './registry.js';
import { fixtureCases, readTensors } from './test-utils/fixtures.js';
import { loadFailure } from './test-utils/load-failure.js';

const work = mkdtempSync(join(tmpdir(), 'vlmkit-dtype-loop-test-'));
const cacheDir = join(work, 'cache');
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Generator {
  generate(inputs: never, o: ModelGenerateOptions): Promise<GenerateResult>;
  release(): Promise<void>;
}

const loaded = new Map<string, Promise<Generator>>();
afterAll(async () => {
  for (const m of loaded.values()) await (await m).release();
});
function load(checkpoint: string, adapter: string | undefined, dtype: ComputeDType, loop: DecodeLoop): Promise<Generator> {
  const key = `${checkpoint}|${adapter ?? ''}|${dtype}|${loop}`;
  let m = loaded.get(key);
  if (m === undefined) {
    m = loadPretrained(checkpoint, {
      device: 'cpu',
      cacheDir,
      reference: 'hf',
      adapter,
      dtype,
      profile: { emulateBfloat16: dtype === 'bfloat16', loop },
    }) as unknown as Promise<Generator>;
    loaded.set(key, m);
  }
  return m;
}

async function run(m: Generator, inputs: never, o: ModelGenerateOptions) {
  const streamed: [number, number[]][] = [];
  const out = await m.generate(inputs, { ...o, onToken: (t, n) => void streamed.push([n, [...t]]) });
  return { tokens: out.tokens, streamed };
}

const cases = [...fixtureCases('ernie-tiny'), ...fixtureCases('granite-tiny')];
const N = 7;

describe.each(['float16', 'bfloat16'] as const)('%s: loop graph = loop host', (dtype) => {
  it.each(
    cases.map((c) => [`${c.checkpoint.split('/').at(-1)} ${c.name}`, c] as const),
  )('%s: greedy ids and streaming equal, chunks of 1 and 3; seeded sampling equal', async (_, c) => {
    const adapter = typeof c.json.adapter === 'string' ? join(FIXTURE_DIR, c.json.adapter) : undefined;
    const inputs = (await readTensors(join(c.dir, 'inputs.safetensors'))) as never;
    const host = await load(c.checkpoint, adapter, dtype, 'host');
    const graph = await load(c.checkpoint, adapter, dtype, 'graph');
    const want = await run(host, inputs, { maxNewTokens: N, eos: [] });
    expect(want.tokens[0]).toHaveLength(N);
    for (const loopChunk of [1, 3]) {
      const got = await run(graph, inputs, { maxNewTokens: N, eos: [], loop: 'graph', loopChunk });
      expect({ loopChunk, ...got }).toEqual({ loopChunk, ...want });
    }
    // Seeded sampling reads the same float32 logits: the same ids too.
    const sampling = { temperature: 0.9, topK: 5, topP: 0.8, seed: 11 };
    const sampled = await run(host, inputs, { maxNewTokens: N, eos: [], ...sampling });
    expect(await run(graph, inputs, { maxNewTokens: N, eos: [], loop: 'graph', loopChunk: 3, ...sampling })).toEqual(sampled);
    console.log(
      `[dtype-loop] ${dtype} ${c.checkpoint.split('/').at(-1)} ${c.name} rows=${want.tokens.length}: ${JSON.stringify(want.tokens)} equal`,
    );
  });
});

it('the loop graphs the tests above loaded were built in their dtype (graph-cache entries of both models record it)', async () => {
  for (const c of [fixtureCases('ernie-tiny')[0]!, fixtureCases('granite-tiny')[0]!])
    for (const dtype of ['float16', 'bfloat16'] as const) await load(c.checkpoint, undefined, dtype, 'graph');
  for (const family of ['ernie', 'granite']) {
    const dtypes = readdirSync(cacheDir)
      .filter((f) => new RegExp(`^vlmkit-${family}-decode-loop-[0-9a-f]+\\.json$`).test(f))
      .map((f) => (JSON.parse(readFileSync(join(cacheDir, f), 'utf8')) as { computeDtype?: string }).computeDtype);
    expect(new Set(dtypes), family).toEqual(new Set(['float16', 'bfloat16']));
  }
});

it('the bfloat16 loop graph without emulation: the session on the CPU EP fails with NO_KERNEL naming op and dtype', async () => {
  const err = await loadFailure(join(FIXTURE_DIR, 'ernie-tiny'), {
    device: 'cpu',
    cacheDir,
    dtype: 'bfloat16',
    profile: { loop: 'graph' },
  });
  expect(err).toBeInstanceOf(RuntimeError);
  const e = err as RuntimeError;
  expect(e.code).toBe('NO_KERNEL');
  expect(e.dtype).toBe('bfloat16');
});
