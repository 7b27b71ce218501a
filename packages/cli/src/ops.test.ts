// --ops onnx|contrib: a shorthand for the profile's decoder passes (models' `OPS_FIELDS`). The flag reaches the
// model: `--ops contrib` builds the graph of `profile: OPS_FIELDS.contrib` (the cuda profile's passes over the
// cpu profile: the com.microsoft fused kernels), `--ops onnx` one without them; a bad value is a usage error.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, loadPretrained, OPS_FIELDS, readNamedTensors } from '@vlmkit/models';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const model = join(FIXTURE_DIR, 'ernie-tiny');
const inputsPath = join(model, 'cases', 'text-only', 'inputs.safetensors');

describe('vlmkit --ops', () => {
  const work = mkdtemp(join(tmpdir(), 'vlmkit-cli-ops-'));
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

  it('forward --ops contrib builds and runs the graph of OPS_FIELDS.contrib; --ops onnx the standard one', async () => {
    const decoders = (cacheDir: string) => readdirSync(cacheDir).filter((f) => /^vlmkit-ernie-decoder-.*\.onnx$/.test(f));
    const fused = (cacheDir: string, f: string) => readFileSync(join(cacheDir, f)).includes('SkipSimplifiedLayerNormalization');
    const r = await run(['--ops', 'contrib']);
    expect(r.code).toBe(0);
    const [contrib] = decoders(r.cacheDir);
    expect(decoders(r.cacheDir)).toHaveLength(1);
    expect(fused(r.cacheDir, contrib!)).toBe(true);
    const got = (await readNamedTensors(r.out)).logits!.data as Float32Array;
    const m = await loadPretrained(model, { device: 'cpu', cacheDir: r.cacheDir, profile: OPS_FIELDS.contrib });
    try {
      expect((await m.forwardNamed(await readNamedTensors(inputsPath))).logits!.data).toEqual(got);
    } finally {
      await m.release();
    }
    expect(decoders(r.cacheDir)).toEqual([contrib]); // the same graph: found in the cache
    expect((await run(['--ops', 'onnx'])).code).toBe(0);
    const standard = decoders(r.cacheDir).filter((f) => f !== contrib);
    expect(standard).toHaveLength(1);
    expect(fused(r.cacheDir, standard[0]!)).toBe(false);
  });

  it('an unknown op set is a usage error naming the choices', async () => {
    const r = await run(['--ops', 'fused']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--ops must be one of onnx, contrib, got 'fused'/);
  });
});
