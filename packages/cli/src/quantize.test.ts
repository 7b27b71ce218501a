// --quantize int8|int4: the flag reaches the model (its logits are the quantized model's, not float32's) and a
// bad value is a usage error.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, loadPretrained, readNamedTensors } from '@vlmkit/models';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const model = join(FIXTURE_DIR, 'granite-tiny');
const inputsPath = join(model, 'cases', 'batch-2', 'inputs.safetensors');

describe('vlmkit --quantize', () => {
  const work = mkdtemp(join(tmpdir(), 'vlmkit-cli-quantize-'));
  afterAll(async () => rm(await work, { recursive: true, force: true }));

  it('forward --quantize int8 writes the int8 model logits', async () => {
    const dir = await work;
    const cacheDir = join(dir, 'cache');
    const out = join(dir, 'out.safetensors');
    const args = ['forward', '--model', model, '--inputs', inputsPath, '--out', out, '--device', 'cpu', '--cache-dir', cacheDir];
    expect(await main([...args, '--quantize', 'int8'], () => {})).toBe(0);
    const got = (await readNamedTensors(out)).logits!.data as Float32Array;
    const inputs = await readNamedTensors(inputsPath);
    const logits = async (quantize?: 'int8') => {
      const m = await loadPretrained(model, { device: 'cpu', cacheDir, ...(quantize ? { quantize } : {}) });
      try {
        return (await m.forwardNamed(inputs)).logits!.data as Float32Array;
      } finally {
        await m.release();
      }
    };
    expect(got).toEqual(await logits('int8'));
    expect(got).not.toEqual(await logits());
  });

  it('an unknown mode is a usage error naming the choices', async () => {
    let err = '';
    const code = await main(['forward', '--model', model, '--inputs', inputsPath, '--out', 'x', '--quantize', 'int3'], () => {}, {
      err: (s) => {
        err += s;
      },
    });
    expect(code).toBe(2);
    expect(err).toMatch(/--quantize must be one of int8, int4, got 'int3'/);
  });
});
