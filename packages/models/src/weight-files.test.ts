// Which files of a checkpoint directory are its weights: transformers' rule (safetensors `checkpointFiles`),
// model.safetensors only whatever lies beside it. A copy of the ernie-tiny fixture with HF's own expected
// outputs dumped beside the weights (other tensor names) and an adapter-like file repeating a weight's name
// with other values loads the weights HF loaded (its logits, within ernie/model.test.ts's 1e-4), inspects clean
// and keys the graph cache as before the extra files came; without model.safetensors, it is refused by name.
import { cp, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Checkpoint, SafetensorsError, writeSafetensors } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { Ernie45VL } from './ernie/model.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { loadErnieWeights } from './ernie/weights.js';
import { inspectCheckpoint } from './inspect.node.js';
import { graphKey } from './session-cache.node.js';
import { FIXTURES, fixtureCases, readTensors, relError } from './test-utils/fixtures.js';

const SOURCE = join(FIXTURES, 'ernie-tiny');
const CASE = fixtureCases('ernie-tiny').find((c) => c.name === 'text-only')!;
const EMBED = 'model.embed_tokens.weight';
let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-weight-files-'));
});
afterAll(() => rm(work, { recursive: true, force: true }));

/** The fixture checkpoint's files (not its cases) in a folder of its own. */
async function checkpointCopy(name: string): Promise<string> {
  const dir = join(work, name);
  await cp(SOURCE, dir, { recursive: true, filter: (src) => !src.startsWith(join(SOURCE, 'cases')) });
  return dir;
}

/** HF's expected outputs as a reference dump: tensors named logits, hidden_layer_0, ... */
const addReferenceDump = (dir: string) => cp(join(CASE.dir, 'expected.safetensors'), join(dir, 'reference.safetensors'));

/** A file holding one of the weights' names with other values (all zero). */
async function addShadowingFile(dir: string): Promise<void> {
  const ckpt = await Checkpoint.open(join(SOURCE, 'model.safetensors'));
  const info = ckpt.info(EMBED);
  await ckpt.close();
  const n = info.shape.reduce((a, d) => a * d, 1);
  expect(info.dtype).toBe('F32');
  await writeSafetensors(join(dir, 'adapter.safetensors'), {
    [EMBED]: { dtype: 'F32', shape: [...info.shape], data: new Float32Array(n) },
  });
}

async function visionKey(dir: string, cacheDir: string): Promise<string> {
  const config = ernie45VLConfig(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>, 'vllm');
  const ckpt = await Checkpoint.open(dir);
  try {
    const mapped = await loadErnieWeights(ckpt, config);
    return await graphKey(buildErnieVisionEncoder(config, mapped), dir, { cacheDir });
  } finally {
    await ckpt.close();
  }
}

describe("a checkpoint directory's weight files, as transformers' from_pretrained picks them", () => {
  it('model.safetensors beside a reference dump and a file repeating a weight name: the logits HF computed', async () => {
    const dir = await checkpointCopy('extras');
    await addReferenceDump(dir);
    await addShadowingFile(dir);
    const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir: join(work, 'cache-extras') });
    try {
      const inputs = await readTensors(join(CASE.dir, 'inputs.safetensors'));
      const expected = await readTensors(join(CASE.dir, 'expected.safetensors'));
      const out = await m.forward(inputs as never);
      expect(out.logits.dims).toEqual(expected.logits!.dims);
      expect(relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array)).toBeLessThan(1e-4);
    } finally {
      await m.release();
    }
  });

  it('vlmkit inspect: no problem, the weights alone read, the other files listed as not read', async () => {
    const dir = await checkpointCopy('inspect');
    await addReferenceDump(dir);
    await addShadowingFile(dir);
    const r = await inspectCheckpoint(dir);
    expect(r.problems).toEqual([]);
    expect(r.files.map((f) => f.path)).toEqual([join(dir, 'model.safetensors')]);
    expect(r.unread).toEqual([join(dir, 'adapter.safetensors'), join(dir, 'reference.safetensors')]);
    expect(r.tensors.unused).toEqual([]);
  });

  it('the graph cache key does not change when a reference dump is put beside the weights', async () => {
    const dir = await checkpointCopy('key');
    const cacheDir = join(work, 'cache-key');
    const before = await visionKey(dir, cacheDir);
    await addReferenceDump(dir);
    expect(await visionKey(dir, cacheDir)).toBe(before);
  });

  it('no model.safetensors, other .safetensors files: the load and inspect refuse, naming what was found', async () => {
    const dir = await checkpointCopy('misnamed');
    await rename(join(dir, 'model.safetensors'), join(dir, 'weights.safetensors'));
    await addReferenceDump(dir);
    const err = await Ernie45VL.fromPretrained(dir, { device: 'cpu', cacheDir: join(work, 'cache-misnamed') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SafetensorsError);
    expect((err as SafetensorsError).code).toBe('NO_MODEL_SAFETENSORS');
    expect((err as SafetensorsError).message).toContain(`${dir}: expected model.safetensors or model.safetensors.index.json`);
    expect((err as SafetensorsError).message).toContain("found only 'reference.safetensors', 'weights.safetensors'");
    const r = await inspectCheckpoint(dir);
    expect(r.problems.map((p) => [p.code, p.where])).toEqual([['NO_MODEL_SAFETENSORS', dir]]);
  });
});
