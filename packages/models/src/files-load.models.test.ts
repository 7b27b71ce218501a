// A model loaded from its files (`ModelFiles`) as a page loads it: through `urlFiles` from a real HTTP server on
// 127.0.0.1 (range requests), its graphs built in memory. It must answer as the same checkpoint loaded by path
// (graph cache, checkpoint read in place): the same forward outputs bit for bit, the same greedy ids, the same
// processor (tokenizer and chat template read through the files too).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dirFiles, urlFiles } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ernie45VL, type ErnieInputs } from './ernie/model.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { readNamedTensors } from './inputs-file.node.js';
import type { LoadProgress } from './progress.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { caseMessages } from './test-utils/fixtures.js';
import { type RangeServer, rangeServer } from './test-utils/range-server.js';

let server: RangeServer;
let cacheDir: string;
beforeAll(async () => {
  server = await rangeServer(FIXTURE_DIR.replace(/\/$/, ''));
  cacheDir = await mkdtemp(join(tmpdir(), 'vlmkit-files-load-'));
});
afterAll(async () => {
  await server.close();
  await rm(cacheDir, { recursive: true, force: true });
});

async function collect(stream: AsyncIterable<string>): Promise<string> {
  let text = '';
  for await (const piece of stream) text += piece;
  return text;
}

for (const [checkpoint, caseName, family] of [
  ['ernie-tiny', 'images', 'ernie'],
  ['granite-tiny', 'multi-image', 'granite'],
  ['qwen3-vl-tiny', 'two-images', 'qwen3vl'],
  ['qwen3-vl-moe-tiny', 'image', 'qwen3vl'],
] as const) {
  describe(`${checkpoint} from urlFiles (a 127.0.0.1 server) against its directory`, () => {
    let byPath: PretrainedModel;
    let byUrl: PretrainedModel;
    beforeAll(async () => {
      byPath = await loadPretrained(join(FIXTURE_DIR, checkpoint), { device: 'cpu', cacheDir });
      const before = server.requests.length;
      byUrl = await loadPretrained(urlFiles(`${server.url}${checkpoint}/`), { device: 'cpu' });
      // Every weight came by range requests, never a whole file.
      expect(server.requests.slice(before).every((r) => r.range)).toBe(true);
    });
    afterAll(async () => {
      await byPath?.release();
      await byUrl?.release();
    });

    it('gives the same forward outputs, bit for bit', async () => {
      const inputs = await readNamedTensors(join(FIXTURE_DIR, checkpoint, 'cases', caseName, 'inputs.safetensors'));
      const [want, got] = [await byPath.forwardNamed(inputs), await byUrl.forwardNamed(inputs)];
      expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
      for (const [name, t] of Object.entries(want)) {
        expect(got[name]!.dims, name).toEqual(t.dims);
        expect(Array.from(got[name]!.data as ArrayLike<number | bigint>), name).toEqual(Array.from(t.data as ArrayLike<number | bigint>));
      }
      expect(byUrl.modelType).toBe(byPath.modelType);
      expect(byUrl.eos).toEqual(byPath.eos);
    });

    it('gives the same greedy ids', async () => {
      const inputs = await readNamedTensors(join(FIXTURE_DIR, checkpoint, 'cases', caseName, 'inputs.safetensors'));
      const [want, got] = [await byPath.generate(inputs, { maxNewTokens: 6 }), await byUrl.generate(inputs, { maxNewTokens: 6 })];
      expect(got.tokens).toEqual(want.tokens);
    });

    if (family !== 'qwen3vl') {
      it("chats on the processor read through the files (the directory's tokenizer and template)", async () => {
        const messages = caseMessages(family, 'text-only');
        const want = await collect(byPath.chat(messages, { maxNewTokens: 6 }));
        const got = byUrl.chat(messages, { maxNewTokens: 6 });
        expect(await collect(got)).toBe(want);
        expect((await got.summary()).tokens.length).toBeGreaterThan(0);
      });
    }
  });
}

describe('loads from ModelFiles', () => {
  it("Node's dirFiles loads as the path does (built in memory)", async () => {
    const inputs = (await readNamedTensors(join(FIXTURE_DIR, 'ernie-tiny', 'cases', 'text-only', 'inputs.safetensors'))) as ErnieInputs;
    const byPath = await Ernie45VL.fromPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu', cacheDir });
    const byFiles = await Ernie45VL.fromPretrained(dirFiles(join(FIXTURE_DIR, 'ernie-tiny')), { device: 'cpu' });
    try {
      expect((await byFiles.forwardNamed(inputs)).logits!.data).toEqual((await byPath.forwardNamed(inputs)).logits!.data);
    } finally {
      await byPath.release();
      await byFiles.release();
    }
  });

  it('reports its steps, and within each build the bytes read by URL (a progress bar in a page)', async () => {
    const events: LoadProgress[] = [];
    const url = `${server.url}ernie-tiny/`;
    const m = await loadPretrained(urlFiles(url), { device: 'cpu', quantize: 'int4', onProgress: (p) => events.push({ ...p }) });
    await m.release();
    const steps = events.filter((p) => p.detail === undefined).map((p) => `${p.stage}:${p.name}:${p.done}/${p.total}`);
    expect(steps).toEqual([
      'weights:checkpoint:0/5',
      'weights:checkpoint:1/5',
      'build:ernie-vision:1/5',
      'build:ernie-vision:2/5',
      'session:ernie-vision:2/5',
      'session:ernie-vision:3/5',
      'build:ernie-decoder:3/5',
      'build:ernie-decoder:4/5',
      'session:ernie-decoder:4/5',
      'session:ernie-decoder:5/5',
    ]);
    const reads = events.flatMap((p) => (p.detail?.kind === 'read' ? [{ step: `${p.stage}:${p.name}`, ...p.detail }] : []));
    expect(new Set(reads.map((r) => r.file))).toEqual(new Set([`${url}model.safetensors`]));
    expect(new Set(reads.map((r) => r.step))).toEqual(new Set(['build:ernie-vision', 'build:ernie-decoder']));
    expect(reads.every((r, i) => i === 0 || r.bytes > reads[i - 1]!.bytes)).toBe(true);
    // Every weight is read through the URL while the graphs are written (a tensor two graphs use, twice).
    expect(reads.at(-1)!.bytes).toBeGreaterThanOrEqual(reads.at(-1)!.totalBytes);
    expect(events.some((p) => p.detail?.kind === 'quantize' && p.name === 'ernie-decoder')).toBe(true);
  });

  it("keeps a graph's bytes only for a vision session opened per call, which runs again from them", async () => {
    const inputs = await readNamedTensors(join(FIXTURE_DIR, 'granite-tiny', 'cases', 'multi-image', 'inputs.safetensors'));
    const files = urlFiles(`${server.url}granite-tiny/`);
    const resident = await loadPretrained(files, { device: 'cpu' });
    const perCall = await loadPretrained(files, { device: 'cpu', profile: { visionSession: 'per-call' } });
    try {
      const want = (await resident.forwardNamed(inputs)).logits!.data;
      expect((await perCall.forwardNamed(inputs)).logits!.data).toEqual(want);
      expect((await perCall.forwardNamed(inputs)).logits!.data).toEqual(want);
    } finally {
      await resident.release();
      await perCall.release();
    }
  });

  it('merges a LoRA adapter given as files, as the path load merges it from its directory', async () => {
    const inputs = await readNamedTensors(join(FIXTURE_DIR, 'granite-tiny', 'cases', 'lora', 'inputs.safetensors'));
    const byPath = await loadPretrained(join(FIXTURE_DIR, 'granite-tiny'), {
      device: 'cpu',
      cacheDir,
      adapter: join(FIXTURE_DIR, 'granite-tiny-lora'),
    });
    const byUrl = await loadPretrained(urlFiles(`${server.url}granite-tiny/`), {
      device: 'cpu',
      adapter: urlFiles(`${server.url}granite-tiny-lora/`),
    });
    const plain = await loadPretrained(urlFiles(`${server.url}granite-tiny/`), { device: 'cpu' });
    try {
      const want = (await byPath.forwardNamed(inputs)).logits!.data;
      expect((await byUrl.forwardNamed(inputs)).logits!.data).toEqual(want);
      // The adapter changes the logits: it was merged, not dropped.
      expect((await plain.forwardNamed(inputs)).logits!.data).not.toEqual(want);
    } finally {
      await byPath.release();
      await byUrl.release();
      await plain.release();
    }
  });

  it("refuses an adapter given as files for a directory's load (its graph cache keys adapters by path), before reading", async () => {
    const before = server.requests.length;
    await expect(
      loadPretrained(join(FIXTURE_DIR, 'granite-tiny'), { device: 'cpu', cacheDir, adapter: urlFiles(`${server.url}granite-tiny-lora/`) }),
    ).rejects.toMatchObject({ code: 'BAD_LOAD_OPTIONS', message: expect.stringContaining("pass the adapter's directory path") });
    expect(server.requests.length).toBe(before);
  });

  it('names the URL when config.json is missing there', async () => {
    await expect(loadPretrained(urlFiles(`${server.url}no-such-model/`))).rejects.toMatchObject({
      code: 'CONFIG_NOT_FOUND',
      message: expect.stringContaining(`${server.url}no-such-model/config.json`),
    });
  });
});
