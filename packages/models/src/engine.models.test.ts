// Continuous batching (./batch-scheduler.ts) against each request run alone (model.generate): on both tiny
// models, in float32, float16, bfloat16 (emulated), int4 and the 'cuda' profile's graphs (run on the CPU EP),
// requests with different prompts and images started while others decode give the same greedy ids, and logits
// within 1e-4 at every step. Then the engine's lifecycle: a cancelled request frees its row, a bad request
// fails alone, the KV memory limit holds, chat text equals model.chat's, close().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HostTensor } from '@vlmkit/runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { BatchScheduler } from './batch-scheduler.js';
import type { DecoderModel } from './decoder-model.js';
import { createEngine } from './engine.js';
import { ModelError } from './errors.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import type { LoadOptions } from './model-load.js';
import { PROFILES } from './profiles.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { caseMessages, fixtureCases, PROCESSORS, readTensors } from './test-utils/fixtures.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-engine-test-'));
const models = new Map<string, Promise<PretrainedModel>>();
afterAll(async () => {
  for (const m of models.values()) await (await m.catch(() => undefined))?.release();
  rmSync(cacheDir, { recursive: true, force: true });
});

type Family = 'ernie' | 'granite';
const CHECKPOINT: Record<Family, string> = { ernie: join(FIXTURE_DIR, 'ernie-tiny'), granite: join(FIXTURE_DIR, 'granite-tiny') };

interface Variant {
  name: string;
  options: LoadOptions;
  /** The largest |batched - alone| logit allowed, given max |logit|. */
  bound: (scale: number) => number;
}
/**
 * float32: 1e-4. A batch runs other kernel shapes than one row, so a 16-bit result can round the other way: within
 * 4 units in the last place at max |logit| (float16 2^-10, bfloat16 2^-7 relative); measured 2.5 and 1.5 units on
 * ERNIE, 0 on Granite bfloat16. int4: most steps agree within 5e-6, but an ERNIE step can jump (0.22 here): the
 * signature of a router's top-k choice flipping on a near tie of two experts' scores; bound 5% of max |logit|.
 */
const ulps = (bits: number) => (scale: number) => 4 * 2 ** (Math.floor(Math.log2(scale)) - bits);
const VARIANTS: Variant[] = [
  { name: 'float32', options: {}, bound: () => 1e-4 },
  { name: 'float16', options: { dtype: 'float16' }, bound: ulps(10) },
  {
    name: 'bfloat16 (emulated)',
    options: { dtype: 'bfloat16', profile: { ...PROFILES.cpu, emulateBfloat16: true } },
    bound: ulps(7),
  },
  { name: 'int4', options: { quantize: 'int4' }, bound: (scale) => 0.05 * scale },
  { name: "'cuda' profile graphs", options: { profile: 'cuda' }, bound: () => 1e-4 },
  { name: "'concat' KV cache", options: { profile: { kvCache: 'concat' } }, bound: () => 1e-4 },
];

function load(family: Family, v: Variant): Promise<PretrainedModel> {
  const key = `${family}|${v.name}`;
  let m = models.get(key);
  if (m === undefined) {
    m = loadPretrained(CHECKPOINT[family], { device: 'cpu', cacheDir, ...v.options });
    models.set(key, m);
  }
  return m;
}

/** The model's decoder as the engine drives it (every loaded model is a DecoderModel). */
const decoderOf = (model: PretrainedModel) => (model as unknown as DecoderModel<never, never, never>).batchDecoder();
const CHAT_CASES: Record<Family, string[]> = {
  ernie: ['image-photo', 'two-images', 'text-only', 'image-wide'],
  granite: ['image-photo', 'two-images', 'text-only', 'image-tiny'],
};

/** The requests: the model fixture cases of one sequence (its checkpoint), then chat prompts with images made by the processor. */
async function requests(family: Family, model: PretrainedModel): Promise<{ name: string; inputs: Record<string, HostTensor> }[]> {
  const out: { name: string; inputs: Record<string, HostTensor> }[] = [];
  for (const c of fixtureCases(`${family}-tiny`)) {
    if (c.checkpoint !== CHECKPOINT[family] || c.json.adapter !== undefined) continue;
    const inputs = (await readTensors(join(c.dir, 'inputs.safetensors'))) as Record<string, HostTensor>;
    if (inputs.input_ids!.dims[0] === 1) out.push({ name: c.name, inputs });
  }
  const processor = await model.processor();
  for (const name of CHAT_CASES[family]) {
    const inputs = await processor.processChat(caseMessages(family, name), { addGenerationPrompt: true });
    out.push({ name: `chat ${name}`, inputs: inputs as unknown as Record<string, HostTensor> });
  }
  return out;
}

interface Run {
  ids: number[];
  logits: Float32Array[];
}

/** Request i's new tokens: different lengths, so rows leave at different steps. */
const newTokens = (i: number) => 6 + ((i * 5) % 7);

describe.each(
  VARIANTS.flatMap((v) => (['ernie', 'granite'] as const).map((f) => [`${f} ${v.name}`, f, v] as const)),
)('batched = alone: %s', (_, family, variant) => {
  it('every request decoded with the others, joining between steps, gives its own ids and logits', async () => {
    const model = await load(family, variant);
    const reqs = await requests(family, model);
    expect(reqs.length).toBeGreaterThanOrEqual(5);
    const alone: Run[] = [];
    for (const [i, r] of reqs.entries()) {
      const logits: Float32Array[] = [];
      const out = await model.generate(r.inputs, { maxNewTokens: newTokens(i), eos: [], onLogits: (l) => void logits.push(l.slice()) });
      alone.push({ ids: out.tokens[0]!, logits });
    }
    const scheduler = new BatchScheduler(decoderOf(model), {
      maxBatch: 4,
      kvLimitBytes: 2 ** 30,
    });
    // Request 0 first; request i starts once request i - 1 has made its second token (its first decode step):
    // every later one joins a running batch between two steps.
    const runs: Promise<Run>[] = [];
    let peak = 0;
    let started = (_: number) => {};
    const start = (i: number) => {
      const r = reqs[i]!;
      const logits: Float32Array[] = [];
      let made = 0;
      const run = scheduler
        .generate(r.inputs, {
          maxNewTokens: newTokens(i),
          eos: [],
          onLogits: (l) => void logits.push(l.slice()),
          onToken: () => {
            peak = Math.max(peak, scheduler.running);
            if (++made === 2 && i + 1 < reqs.length) started(i + 1);
          },
        })
        .then((out) => ({ ids: out.tokens[0]!, logits }));
      runs.push(run);
    };
    started = start;
    start(0);
    await new Promise<void>((resolve) => {
      const wait = () => (runs.length === reqs.length ? resolve() : setTimeout(wait, 5));
      wait();
    });
    const batched = await Promise.all(runs);
    let [worst, scale] = [0, 0];
    batched.forEach((b, i) => {
      expect(b.ids, `${reqs[i]!.name}: ids`).toEqual(alone[i]!.ids);
      expect(b.logits.length).toBe(alone[i]!.logits.length);
      b.logits.forEach((l, n) => {
        const a = alone[i]!.logits[n]!;
        for (let v = 0; v < l.length; v++) {
          worst = Math.max(worst, Math.abs(l[v]! - a[v]!));
          scale = Math.max(scale, Math.abs(a[v]!));
        }
      });
    });
    console.log(
      `${family} ${variant.name}: ${reqs.length} requests, max |logit diff| ${worst.toExponential(2)}, max |logit| ${scale.toFixed(2)}`,
    );
    expect(worst, 'max |logit diff|').toBeLessThan(variant.bound(scale));
    expect(peak, 'rows decoding together').toBe(4);
    expect(scheduler.running + scheduler.queued).toBe(0);
  });
});

const FLOAT32 = VARIANTS[0]!;

describe.each(['ernie', 'granite'] as const)('seeded sampling batched = alone: %s float32', (family) => {
  it('each request keeps its own sampler: the same tokens alone or in a batch; 5 rounds leave no row or KV behind', async () => {
    const model = await load(family, FLOAT32);
    const reqs = await requests(family, model);
    const options = (i: number) => ({
      maxNewTokens: newTokens(i),
      eos: [],
      temperature: 0.9,
      topP: 0.95,
      topK: i % 2 ? 20 : 0,
      seed: 1000 + i,
    });
    const alone = [];
    for (const [i, r] of reqs.entries()) alone.push((await model.generate(r.inputs, options(i))).tokens[0]);
    const scheduler = new BatchScheduler(decoderOf(model), { maxBatch: 4, kvLimitBytes: 2 ** 30 });
    for (let round = 0; round < 5; round++) {
      const outs = await Promise.all(reqs.map((r, i) => scheduler.generate(r.inputs, options(i))));
      expect(
        outs.map((o) => o.tokens[0]),
        `round ${round}`,
      ).toEqual(alone);
      await scheduler.idle();
      expect([scheduler.running, scheduler.queued, scheduler.kvBytes]).toEqual([0, 0, 0]);
    }
  });
});

describe('createEngine on ernie-tiny', () => {
  it('README example: two concurrent chats, stats, close', async () => {
    const model = await load('ernie', FLOAT32);
    const engine = await createEngine(model);
    const ask = (text: string, signal?: AbortSignal) =>
      engine.chat([{ role: 'user', content: [{ type: 'text', text }] }], { maxNewTokens: 32, signal });
    const [a, b] = [ask('Describe a cat.'), ask('And a dog?')];
    let text = '';
    for await (const piece of a) text += piece;
    const { finishReason, timeToFirstTokenMs } = await b.summary();
    expect(text).toBe((await a.summary()).text);
    expect(['stop', 'length']).toContain(finishReason);
    expect(timeToFirstTokenMs).toBeGreaterThan(0);
    const { running, queued, maxBatch, kvLimitBytes } = engine.stats();
    expect({ running, queued }).toEqual({ running: 0, queued: 0 });
    expect(maxBatch).toBe(16);
    expect(kvLimitBytes).toBeGreaterThan(0);
    await engine.close();
    // The cache's memory goes back once nothing runs.
    expect(engine.stats().kvBytes).toBe(0);
  });

  it('chat text equals model.chat for concurrent requests', async () => {
    const model = await load('ernie', FLOAT32);
    const names = CHAT_CASES.ernie;
    const alone = [];
    for (const n of names) alone.push(await model.chat(caseMessages('ernie', n), { maxNewTokens: 10, eos: [] }).summary());
    const engine = await createEngine(model, { maxBatch: 3 });
    const together = await Promise.all(names.map((n) => engine.chat(caseMessages('ernie', n), { maxNewTokens: 10, eos: [] }).summary()));
    expect(together.map((s) => s.text)).toEqual(alone.map((s) => s.text));
    expect(together.map((s) => s.tokens)).toEqual(alone.map((s) => s.tokens));
    expect(together.every((s) => s.finishReason === 'length')).toBe(true);
    expect(engine.stats()).toMatchObject({ running: 0, queued: 0, maxBatch: 3, tokensGenerated: 40 });
    await engine.close();
    await expect(engine.chat(caseMessages('ernie', 'text-only'), { maxNewTokens: 2 }).summary()).rejects.toMatchObject({
      code: 'ENGINE_CLOSED',
    });
  });

  it('a cancelled request leaves at once and a later one reuses its row', async () => {
    const model = await load('ernie', FLOAT32);
    const engine = await createEngine(model, { maxBatch: 2 });
    const messages = caseMessages('ernie', 'text-only');
    const alone = await model.chat(caseMessages('ernie', 'image-photo'), { maxNewTokens: 12, eos: [] }).summary();
    const stop = new AbortController();
    const long = engine.chat(messages, { maxNewTokens: 400, eos: [], signal: stop.signal });
    const other = engine.chat(messages, { maxNewTokens: 400, eos: [] });
    let pieces = 0;
    const reading = (async () => {
      for await (const _ of long) if (++pieces === 3) stop.abort();
    })();
    const otherDone = other.summary();
    await reading;
    const cancelled = await long.summary();
    expect(cancelled.finishReason).toBe('aborted');
    expect(cancelled.newTokens).toBeLessThan(400);
    // The batch is full (maxBatch 2) until the cancelled row leaves: the third request runs in its row.
    const third = engine.chat(caseMessages('ernie', 'image-photo'), { maxNewTokens: 12, eos: [] });
    const s = await third.summary();
    expect(s.tokens).toEqual(alone.tokens);
    expect(engine.stats().running).toBeLessThanOrEqual(1);
    await engine.close({ abort: true });
    expect((await otherDone).finishReason).toBe('aborted');
    expect(engine.stats()).toMatchObject({ running: 0, queued: 0, kvBytes: 0 });
  });

  it('a bad request fails alone; the others in the batch decode undisturbed', async () => {
    const model = await load('ernie', FLOAT32);
    const engine = await createEngine(model, { maxBatch: 4 });
    const good = CHAT_CASES.ernie.slice(0, 2);
    const alone = [];
    for (const n of good) alone.push((await model.chat(caseMessages('ernie', n), { maxNewTokens: 8, eos: [] }).summary()).tokens);
    const streams = good.map((n) => engine.chat(caseMessages('ernie', n), { maxNewTokens: 8, eos: [] }).summary());
    const broken = engine.chat([{ role: 'user', content: [{ type: 'image', path: join(PROCESSORS, 'missing.png') }] }], {
      maxNewTokens: 4,
    });
    const badOption = engine.chat(caseMessages('ernie', 'text-only'), { maxNewTokens: 4, temperature: -1 });
    await expect(broken.summary()).rejects.toThrow();
    await expect(badOption.summary()).rejects.toMatchObject({ code: 'BAD_GENERATION_OPTIONS' });
    expect((await Promise.all(streams)).map((s) => s.tokens)).toEqual(alone);
    await engine.close();
  });

  it('a request whose vision input breaks while others decode fails alone', async () => {
    const model = await load('ernie', FLOAT32);
    const reqs = await requests('ernie', model);
    const withImage = reqs.find((r) => r.inputs.pixel_values !== undefined)!;
    const good = reqs.slice(0, 2);
    const alone = [];
    for (const r of good) alone.push((await model.generate(r.inputs, { maxNewTokens: 10, eos: [] })).tokens[0]);
    const scheduler = new BatchScheduler(decoderOf(model), {
      maxBatch: 4,
      kvLimitBytes: 2 ** 30,
    });
    const pixels = withImage.inputs.pixel_values!;
    // One patch row short of what image_grid_thw needs: refused by the vision encoder's check, in its prefill.
    const broken = {
      ...withImage.inputs,
      pixel_values: { ...pixels, data: pixels.data.slice(pixels.dims[1]!), dims: [pixels.dims[0]! - 1, pixels.dims[1]!] },
    };
    let failedWhileRunning = -1;
    let bad: Promise<unknown> | undefined;
    const runs = good.map((r, i) =>
      scheduler.generate(r.inputs, {
        maxNewTokens: 10,
        eos: [],
        onToken: (_, n) => {
          if (i === 1 && n === 2)
            bad = scheduler.generate(broken as Record<string, HostTensor>, { maxNewTokens: 4 }).then(
              () => 'no error',
              (e: unknown) => {
                failedWhileRunning = scheduler.running;
                return e;
              },
            );
        },
      }),
    );
    const outs = await Promise.all(runs);
    expect(await bad).toMatchObject({ code: 'BAD_INPUT' });
    expect(failedWhileRunning).toBe(2);
    expect(outs.map((o) => o.tokens[0])).toEqual(alone);
  });

  it('a failed decode step fails the running requests only; the engine serves the next ones', async () => {
    const model = await load('ernie', FLOAT32);
    const reqs = await requests('ernie', model);
    const decoder = decoderOf(model);
    let steps = 0;
    const failing = {
      ...decoder,
      step: (s: Parameters<typeof decoder.step>[0]) =>
        ++steps === 3 ? Promise.reject(new Error('injected run failure')) : decoder.step(s),
    };
    const scheduler = new BatchScheduler(failing, { maxBatch: 4, kvLimitBytes: 2 ** 30 });
    const running = reqs.slice(0, 2).map((r) => scheduler.generate(r.inputs, { maxNewTokens: 8, eos: [] }));
    for (const r of running) await expect(r).rejects.toThrow('injected run failure');
    const alone = (await model.generate(reqs[2]!.inputs, { maxNewTokens: 8, eos: [] })).tokens;
    expect((await scheduler.generate(reqs[2]!.inputs, { maxNewTokens: 8, eos: [] })).tokens).toEqual(alone);
    expect(scheduler.running + scheduler.queued).toBe(0);
  });

  it('a request whose KV cache cannot fit the limit is refused; one that fits beside none waits its turn', async () => {
    const model = await load('ernie', FLOAT32);
    const decoder = decoderOf(model);
    const probe = new BatchScheduler(decoder, { maxBatch: 1, kvLimitBytes: 1 });
    const perToken = probe.bytesPerToken;
    const messages = caseMessages('ernie', 'text-only');
    const prompt = (await (await model.processor()).processChat(messages, { addGenerationPrompt: true })).input_ids.dims[1]!;
    // Room for one request of prompt + 20 positions: two cannot run together, a third of prompt + 200 never fits.
    const engine = await createEngine(model, { maxBatch: 4, kvMemoryBytes: (prompt + 20) * perToken });
    const a = engine.chat(messages, { maxNewTokens: 20, eos: [] });
    const b = engine.chat(messages, { maxNewTokens: 20, eos: [] });
    const tooBig = engine.chat(messages, { maxNewTokens: 200, eos: [] });
    await expect(tooBig.summary()).rejects.toMatchObject({ code: 'INSUFFICIENT_MEMORY' });
    let peak = 0;
    const watch = setInterval(() => {
      const s = engine.stats();
      peak = Math.max(peak, s.running);
      expect(s.kvBytes).toBeLessThanOrEqual(s.kvLimitBytes);
    }, 1);
    const [sa, sb] = await Promise.all([a.summary(), b.summary()]);
    clearInterval(watch);
    expect(peak).toBeLessThanOrEqual(1);
    expect(sa.tokens).toEqual(sb.tokens);
    expect(sa.newTokens).toBe(20);
    await engine.close();
  });

  it('refuses bad options and a model it cannot batch', async () => {
    const model = await load('ernie', FLOAT32);
    await expect(createEngine(model, { maxBatch: 0 })).rejects.toBeInstanceOf(ModelError);
    await expect(createEngine(model, { kvMemoryBytes: -1 })).rejects.toMatchObject({ code: 'BAD_GENERATION_OPTIONS' });
    await expect(createEngine({} as PretrainedModel)).rejects.toMatchObject({ code: 'BAD_INPUT' });
    const engine = await createEngine(model);
    const padded = (await readTensors(join(FIXTURE_DIR, 'ernie-tiny/cases/batch-padded/inputs.safetensors'))) as Record<string, HostTensor>;
    await expect(engine.generate(padded, { maxNewTokens: 2 })).rejects.toMatchObject({ code: 'BAD_INPUT' });
    const ids = new BigInt64Array(4097).fill(5n);
    const long = { input_ids: { dtype: 'int64', data: ids, dims: [1, ids.length] } } as unknown as Record<string, HostTensor>;
    await expect(engine.generate(long, { maxNewTokens: 2 })).rejects.toMatchObject({ code: 'PROMPT_TOO_LONG' });
    await engine.close();
    const inGraph = await load('ernie', { name: "loop 'graph'", options: { profile: { loop: 'graph' } }, bound: () => 0 });
    await expect(createEngine(inGraph)).rejects.toMatchObject({ code: 'DECODE_LOOP_UNAVAILABLE' });
  });
});
