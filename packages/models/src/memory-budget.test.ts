import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deferPasses } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { loadErnieWeights } from './ernie/weights.js';
import { ModelError } from './errors.js';
import { MemoryBudget } from './memory-check.js';
import { resolveLoad } from './model-load.js';
import { cachedSession } from './session-cache.node.js';
import { FIXTURES } from './test-utils/fixtures.js';

const DIR = join(FIXTURES, 'ernie-tiny');
let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-memory-budget-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function visionGraph() {
  const config = ernie45VLConfig(JSON.parse(await readFile(join(DIR, 'config.json'), 'utf8')) as Record<string, unknown>, 'vllm');
  const ckpt = await Checkpoint.open(DIR);
  const mapped = await loadErnieWeights(ckpt, config);
  const build = resolveLoad({ device: 'cpu' }).vision;
  return { graph: deferPasses(() => buildErnieVisionEncoder(config, mapped, build)), close: () => ckpt.close() };
}

const quiet = { device: 'cpu' as const, logger: () => {} };

describe('one load checks its sessions together (MemoryBudget)', () => {
  it('reads the available memory once and counts the sessions it holds', async () => {
    let reads = 0;
    const budget = new MemoryBudget(async () => {
      reads++;
      return 1000;
    });
    await budget.check('a', 600, '/a.onnx');
    budget.hold(600);
    await budget.check('b', 400, '/b.onnx');
    const refused = budget.check('c', 401, '/c.onnx');
    await expect(refused).rejects.toBeInstanceOf(ModelError);
    await expect(refused).rejects.toMatchObject({ code: 'INSUFFICIENT_MEMORY' });
    await expect(refused).rejects.toThrow(/'c' needs at least .* beside 0\.00 GiB that this load's other sessions hold/);
    expect(reads).toBe(1);
    expect(budget.held).toBe(600);
    // Where the platform states no available memory, nothing is refused.
    const none = new MemoryBudget(async () => undefined);
    none.hold(2 ** 50);
    await expect(none.check('d', 2 ** 50, '/d.onnx')).resolves.toBeUndefined();
  });

  it('a second session that fits alone but not beside the first is refused before it is built or loaded', async () => {
    const first = await visionGraph();
    const measure = new MemoryBudget(async () => 2 ** 50);
    const alone = await cachedSession(first.graph, DIR, 'ernie-vision', { ...quiet, cacheDir: join(work, 'a') }, { memory: measure });
    await first.close();
    await alone.session.release();
    const size = measure.held;
    expect(size).toBeGreaterThan(0);

    // Room for one session and a half: the first fits, the second (built into an empty cache) does not.
    const budget = new MemoryBudget(async () => Math.floor(size * 1.5));
    const one = await visionGraph();
    const held = await cachedSession(one.graph, DIR, 'ernie-vision', { ...quiet, cacheDir: join(work, 'b') }, { memory: budget });
    await one.close();
    const two = await visionGraph();
    const cacheDir = join(work, 'c');
    await expect(cachedSession(two.graph, DIR, 'ernie-vision-2', { ...quiet, cacheDir }, { memory: budget })).rejects.toMatchObject({
      code: 'INSUFFICIENT_MEMORY',
    });
    await two.close();
    // Nothing of the refused graph was written.
    expect((await readdir(cacheDir).catch(() => [])).filter((f) => f.endsWith('.onnx') || f.endsWith('.data'))).toEqual([]);
    await held.session.release();
  });
});
