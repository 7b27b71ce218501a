// --quantize / --quantize-vision int8|int4: the flag reaches the model (its logits are the quantized model's, not
// float32's) and a bad value is a usage error.
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
    const logits = async (options: { quantize?: 'int8' | { vision: 'int8' } } = {}) => {
      const m = await loadPretrained(model, { device: 'cpu', cacheDir, ...options });
      try {
        return (await m.forwardNamed(inputs)).logits!.data as Float32Array;
      } finally {
        await m.release();
      }
    };
    expect(got).toEqual(await logits({ quantize: 'int8' }));
    expect(got).not.toEqual(await logits());
    // --quantize-vision: the vision encoder's weights, independently of the decoder's.
    expect(await main([...args, '--quantize-vision', 'int8'], () => {})).toBe(0);
    const vision = (await readNamedTensors(out)).logits!.data as Float32Array;
    expect(vision).toEqual(await logits({ quantize: { vision: 'int8' } }));
    expect(vision).not.toEqual(await logits());
    expect(vision).not.toEqual(got);
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
    err = '';
    const args = ['forward', '--model', model, '--inputs', inputsPath, '--out', 'x', '--quantize-vision', 'int2'];
    const onErr = (s: string) => {
      err += s;
    };
    expect(await main(args, () => {}, { err: onErr })).toBe(2);
    expect(err).toMatch(/--quantize-vision must be one of int8, int4, got 'int2'/);
  });
});
