// --dtype float32|float16|bfloat16: the flag reaches the model (float16 logits are the float16 model's, not
// float32's), bfloat16 on the CPU fails with NO_KERNEL naming the op and dtype, a bad value is a usage error.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, loadPretrained, readNamedTensors } from '@vlmkit/models';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const model = join(FIXTURE_DIR, 'granite-tiny');
const inputsPath = join(model, 'cases', 'batch-2', 'inputs.safetensors');

describe('vlmkit --dtype', () => {
  const work = mkdtemp(join(tmpdir(), 'vlmkit-cli-dtype-'));
  afterAll(async () => rm(await work, { recursive: true, force: true }));
  const run = async (extra: string[]) => {
    const dir = await work;
    let err = '';
    const out = join(dir, 'out.safetensors');
    const args = ['forward', '--model', model, '--inputs', inputsPath, '--out', out, '--device', 'cpu', '--cache-dir', join(dir, 'cache')];
    const code = await main([...args, ...extra], () => {}, {
      err: (s) => {
        err += s;
      },
    });
    return { code, err, out, cacheDir: join(dir, 'cache') };
  };

  it('forward --dtype float16 writes the float16 model logits', async () => {
    const r = await run(['--dtype', 'float16']);
    expect(r.code).toBe(0);
    const got = (await readNamedTensors(r.out)).logits!.data as Float32Array;
    const inputs = await readNamedTensors(inputsPath);
    const logits = async (dtype: 'float16' | 'float32') => {
      const m = await loadPretrained(model, { device: 'cpu', cacheDir: r.cacheDir, dtype });
      try {
        return (await m.forwardNamed(inputs)).logits!.data as Float32Array;
      } finally {
        await m.release();
      }
    };
    expect(got).toEqual(await logits('float16'));
    expect(got).not.toEqual(await logits('float32'));
  });

  it('bfloat16 on the CPU throws NO_KERNEL naming the op and the dtype (bin.ts prints it, exit 1)', async () => {
    await expect(run(['--dtype', 'bfloat16'])).rejects.toMatchObject({
      code: 'NO_KERNEL',
      dtype: 'bfloat16',
      message: expect.stringMatching(/no kernel for \w+\(\d+\) in bfloat16 at node/),
    });
  });

  it('an unknown dtype is a usage error naming the choices', async () => {
    const r = await run(['--dtype', 'float8']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--dtype must be one of float32, float16, bfloat16, got 'float8'/);
  });
});
