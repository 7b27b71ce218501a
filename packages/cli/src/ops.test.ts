// --ops onnx|contrib: a shorthand for the profile's decoder passes (models' `OPS_FIELDS`). The flag reaches the
// model: `--ops contrib` builds the graph of `profile: OPS_FIELDS.contrib` (the cuda profile's passes over the
// cpu profile: the com.microsoft fused kernels), `--ops onnx` one without them; a bad value is a usage error.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, loadPretrained, OPS_FIELDS, readNamedTensors } from '@vlmkit/models';
import { expect, it } from 'vitest';
import { main } from './main.js';

const model = join(FIXTURE_DIR, 'ernie-tiny');
const inputsPath = join(model, 'cases', 'text-only', 'inputs.safetensors');

it('forward --ops contrib builds and runs the graph of OPS_FIELDS.contrib, --ops onnx the standard one; --ops fused is refused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-ops-'));
  try {
    const [cacheDir, out] = [join(dir, 'cache'), join(dir, 'out.safetensors')];
    const forward = (ops: string, err?: (s: string) => void) =>
      main(
        ['forward', '--model', model, '--inputs', inputsPath, '--out', out, '--device', 'cpu', '--cache-dir', cacheDir, '--ops', ops],
        () => {},
        {
          ...(err ? { err } : {}),
        },
      );
    const decoders = () => readdirSync(cacheDir).filter((f) => /^vlmkit-ernie-decoder-.*\.onnx$/.test(f));
    const fused = (f: string) => readFileSync(join(cacheDir, f)).includes('SkipSimplifiedLayerNormalization');

    expect(await forward('contrib')).toBe(0);
    const [contrib] = decoders();
    expect(decoders()).toHaveLength(1);
    expect(fused(contrib!)).toBe(true);
    const m = await loadPretrained(model, { device: 'cpu', cacheDir, profile: OPS_FIELDS.contrib });
    try {
      const logits = (await m.forwardNamed(await readNamedTensors(inputsPath))).logits!.data;
      expect(logits).toEqual((await readNamedTensors(out)).logits!.data);
    } finally {
      await m.release();
    }
    expect(decoders()).toEqual([contrib]); // the same graph, found in the cache

    expect(await forward('onnx')).toBe(0);
    const standard = decoders().filter((f) => f !== contrib);
    expect(standard).toHaveLength(1);
    expect(fused(standard[0]!)).toBe(false);

    let err = '';
    const collect = (s: string) => {
      err += s;
    };
    expect(await forward('fused', collect)).toBe(2);
    expect(err).toMatch(/--ops must be one of onnx, contrib, got 'fused'/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
