// Progress within a load step (progress.ts): a first load of the tiny ERNIE with an int8 decoder, into an empty
// graph cache (and a float one of its bf16 copy), reports between each step's start and end the bytes read from each checkpoint file (counts that
// only grow, out of what the file's tensors hold) and, in the decoder's build, the layer being quantized each
// time the reads move to another one, every layer among them; the steps themselves are reported as before.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadProgress } from './progress.js';
import { loadPretrained } from './registry.js';
import { FIXTURES } from './test-utils/fixtures.js';

const DIR = join(FIXTURES, 'ernie-tiny');
let work: string;
const events: LoadProgress[] = [];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-progress-'));
  const m = await loadPretrained(DIR, { device: 'cpu', quantize: 'int8', cacheDir: work, onProgress: (p) => events.push({ ...p }) });
  await m.release();
});
afterAll(() => rm(work, { recursive: true, force: true }));

const steps = () => events.filter((p) => p.detail === undefined);

describe('load progress within a step (a first load, int8 decoder)', () => {
  it('the steps are reported as before: each once as it starts and once as it ends', () => {
    expect(steps().map((p) => `${p.stage}:${p.name}:${p.done}/${p.total}`)).toEqual([
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
  });

  it("each detail lies within a step, under that step's stage, name and count", () => {
    let step: LoadProgress | undefined;
    let open = false;
    for (const p of events) {
      if (p.detail === undefined) {
        open = !open;
        step = p;
        continue;
      }
      expect(open).toBe(true);
      expect([p.stage, p.name, p.done, p.total]).toEqual([step!.stage, step!.name, step!.done, step!.total]);
    }
    expect(events.length).toBeGreaterThan(steps().length);
  });

  it('read: per file, bytes that only grow, out of the bytes its tensors hold', async () => {
    const ckpt = await Checkpoint.open(DIR);
    const held = ckpt.names().reduce((a, n) => a + ckpt.info(n).byteLength, 0);
    await ckpt.close();
    const reads = events.flatMap((p) => (p.detail?.kind === 'read' ? [p.detail] : []));
    expect(reads.length).toBeGreaterThan(0);
    expect(new Set(reads.map((r) => r.file))).toEqual(new Set([join(DIR, 'model.safetensors')]));
    for (const [i, r] of reads.entries()) {
      expect(r.totalBytes).toBe(held);
      if (i > 0) expect(r.bytes).toBeGreaterThan(reads[i - 1]!.bytes);
    }
    expect(reads.at(-1)!.bytes).toBeGreaterThan(0);
  });

  it("quantize: in the decoder's build only, each report a move to another of its layers, every one reached", async () => {
    const config = JSON.parse(await readFile(join(DIR, 'config.json'), 'utf8')) as { text_config: { num_hidden_layers: number } };
    const n = config.text_config.num_hidden_layers;
    const reports = events.filter((p) => p.detail?.kind === 'quantize');
    expect(reports.every((p) => p.stage === 'build' && p.name === 'ernie-decoder')).toBe(true);
    const layers = reports.map((p) => p.detail as { stack: string; layer: number; layers: number });
    expect(layers.every((d) => d.stack === 'model.layers' && d.layers === n && d.layer >= 0 && d.layer < n)).toBe(true);
    expect(layers.every((d, i) => i === 0 || d.layer !== layers[i - 1]!.layer)).toBe(true);
    expect(new Set(layers.map((d) => d.layer))).toEqual(new Set(Array.from({ length: n }, (_, i) => i)));
  });
});

describe('load progress within a step (a first float load of a bf16 checkpoint)', () => {
  const BF16 = join(FIXTURES, 'ernie-tiny-bf16');
  const float: LoadProgress[] = [];
  beforeAll(async () => {
    const m = await loadPretrained(BF16, { device: 'cpu', cacheDir: join(work, 'bf16'), onProgress: (p) => float.push({ ...p }) });
    await m.release();
  });

  it('the weights the builds convert (bf16 to float32, transposed) are counted: nearly every byte, no quantize', async () => {
    const ckpt = await Checkpoint.open(BF16);
    const held = ckpt.names().reduce((a, n) => a + ckpt.info(n).byteLength, 0);
    await ckpt.close();
    const reads = float.filter((p) => p.detail?.kind === 'read');
    expect(new Set(reads.map((p) => `${p.stage}:${p.name}`))).toEqual(new Set(['build:ernie-vision', 'build:ernie-decoder']));
    const bytes = reads.map((p) => (p.detail as { bytes: number }).bytes);
    expect(bytes.every((b, i) => i === 0 || b > bytes[i - 1]!)).toBe(true);
    expect(bytes.at(-1)!).toBeGreaterThan(0.9 * held);
    expect(float.some((p) => p.detail?.kind === 'quantize')).toBe(false);
  });
});
