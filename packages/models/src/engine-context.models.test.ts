// The engine at the model's context (./batch-scheduler.ts, the family's batchDecoder): a prompt longer than
// max_position_embeddings is refused; one that fits generates until its last token is predicted from
// max_position_embeddings positions and stops there ('length'), its KV row never longer, where model.generate
// warns and goes on (as HF). ernie-tiny: max_position_embeddings 4096.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HostTensor } from '@vlmkit/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KvSlots } from './batch-kv.js';
import type { DecoderModel } from './decoder-model.js';
import { createEngine } from './engine.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { loadPretrained, type PretrainedModel } from './registry.js';

const MAX = 4096;
const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-engine-context-'));
let model: PretrainedModel;
beforeAll(async () => {
  model = await loadPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu', cacheDir });
});
afterAll(async () => {
  await model?.release();
  rmSync(cacheDir, { recursive: true, force: true });
});

/** A text prompt of `n` tokens (id 5: a text token of the fixture's vocabulary). */
const prompt = (n: number) =>
  ({ input_ids: { dtype: 'int64', data: new BigInt64Array(n).fill(5n), dims: [1, n] } }) as unknown as Record<string, HostTensor>;

/** The process warnings (their codes) emitted while `f` runs. */
async function warningsOf(f: () => Promise<unknown>): Promise<string[]> {
  const codes: string[] = [];
  const on = (w: Error & { code?: string }) => void codes.push(w.code ?? '');
  process.on('warning', on);
  try {
    await f();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', on);
  }
  return codes;
}

describe('the engine at max_position_embeddings (ernie-tiny, 4096)', () => {
  it("stops a request at the context's end with the ids generate makes there, its KV row within the context", async () => {
    const seq = 4090;
    let alone: number[] = [];
    // model.generate goes past the context, warning (HF's behaviour): the reference ids.
    const generateWarnings = await warningsOf(async () => {
      alone = (await model.generate(prompt(seq), { maxNewTokens: 10, eos: [] })).tokens[0]!;
    });
    expect(generateWarnings).toEqual(['PAST_MAX_POSITION_EMBEDDINGS']);
    const d = (model as unknown as DecoderModel<never, never, never>).batchDecoder();
    const bytesPerSlot = new KvSlots(d.dims, d.kvDtype, d.io).bytesPerSlot;
    const engine = await createEngine(model);
    let peak = 0;
    const onToken = () => {
      peak = Math.max(peak, engine.stats().kvBytes);
    };
    let r: Awaited<ReturnType<typeof engine.generate>> | undefined;
    const codes = await warningsOf(async () => {
      r = await engine.generate(prompt(seq), { maxNewTokens: 10, eos: [], onToken });
    });
    expect(codes).toEqual([]);
    expect(r!.tokens[0]).toEqual(alone.slice(0, MAX - seq + 1));
    expect(r!.maxNewTokens).toBe(MAX - seq + 1);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(MAX * bytesPerSlot);
    // Within the context nothing is cut; a prompt of exactly the context makes one token; one more is refused.
    const within = await engine.generate(prompt(seq), { maxNewTokens: 3, eos: [] });
    expect(within.tokens[0]).toEqual(alone.slice(0, 3));
    expect(within.maxNewTokens).toBeUndefined();
    expect((await engine.generate(prompt(MAX), { maxNewTokens: 5, eos: [] })).tokens[0]).toHaveLength(1);
    await expect(engine.generate(prompt(MAX + 1), { maxNewTokens: 1 })).rejects.toMatchObject({ code: 'PROMPT_TOO_LONG' });
    expect(engine.stats()).toMatchObject({ running: 0, queued: 0, kvBytes: 0 });
    await engine.close();
  });

  it("ends a chat at the context's end with finishReason 'length', beside a request it does not cut", async () => {
    const processor = await model.processor();
    const messages = (n: number) => [{ role: 'user', content: 'word '.repeat(n) }];
    const length = async (n: number) => (await processor.processChat(messages(n), { addGenerationPrompt: true })).input_ids.dims[1]!;
    // The words' token count is linear in their number: a prompt 5-8 tokens short of the context.
    const [a, b] = [await length(100), await length(200)];
    const words = 100 + Math.floor(((MAX - 8 - a) * 100) / (b - a));
    const seq = await length(words);
    expect(seq).toBeGreaterThan(MAX - 40);
    expect(seq).toBeLessThanOrEqual(MAX);
    const engine = await createEngine(model);
    const [long, short] = await Promise.all([
      engine.chat(messages(words), { maxNewTokens: 64, eos: [] }).summary(),
      engine.chat(messages(10), { maxNewTokens: 12, eos: [] }).summary(),
    ]);
    expect(long).toMatchObject({ promptTokens: seq, newTokens: MAX - seq + 1, finishReason: 'length' });
    expect(short).toMatchObject({ newTokens: 12, finishReason: 'length' });
    await engine.close();
  });
});
