import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, type ModelError, readNamedTensors } from '@vlmkit/models';
import { describe, expect, it } from 'vitest';

import { main } from './main.js';

function capture(): { out: (s: string) => void; text: () => string } {
  let text = '';
  return {
    out: (s) => {
      text += s;
    },
    text: () => text,
  };
}

const ernie = join(FIXTURE_DIR, 'ernie-tiny');

function relError(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    s = Math.max(s, Math.abs(b[i]!));
  }
  return d / s;
}

describe('vlmkit forward / generate on the ERNIE fixtures', () => {
  for (const name of ['images', 'video-long-t']) {
    it(`forward writes logits, embeddings and position ids matching HF (${name})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-'));
      const c = capture();
      const caseDir = join(ernie, 'cases', name);
      const code = await main(
        [
          'forward',
          '--model',
          ernie,
          '--inputs',
          join(caseDir, 'inputs.safetensors'),
          '--out',
          join(dir, 'out.safetensors'),
          '--device',
          'cpu',
          '--reference',
          'hf',
        ],
        c.out,
      );
      expect(code).toBe(0);
      const got = await readNamedTensors(join(dir, 'out.safetensors'));
      const want = await readNamedTensors(join(caseDir, 'expected.safetensors'));
      expect(got.logits!.dtype).toBe('float32');
      expect(got.logits!.dims).toEqual(want.logits!.dims);
      expect(relError(got.logits!.data as Float32Array, want.logits!.data as Float32Array)).toBeLessThan(1e-4);
      expect(got.position_ids!.dims).toEqual([3, ...want.logits!.dims.slice(0, 2)]);
      expect(Array.from(got.position_ids!.data as BigInt64Array)).toEqual(Array.from(want.position_ids!.data as BigInt64Array));
      const key = name === 'images' ? 'image_embeds' : 'video_embeds';
      expect(relError(got[key]!.data as Float32Array, want[key]!.data as Float32Array)).toBeLessThan(1e-4);
    });
  }

  it('forward follows vLLM by default: text after a long video continues after its largest t position', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-'));
    const caseDir = join(ernie, 'cases', 'video-long-t');
    await main(
      [
        'forward',
        '--model',
        ernie,
        '--inputs',
        join(caseDir, 'inputs.safetensors'),
        '--out',
        join(dir, 'o.safetensors'),
        '--device',
        'cpu',
      ],
      capture().out,
    );
    const got = Array.from((await readNamedTensors(join(dir, 'o.safetensors'))).position_ids!.data as BigInt64Array, Number);
    const hf = Array.from((await readNamedTensors(join(caseDir, 'expected.safetensors'))).position_ids!.data as BigInt64Array, Number);
    // grid [8,2,4] -> t'=4 > max(h',w')=2: vLLM's last text position is 2 past HF's.
    const S = got.length / 3;
    expect(got[S - 1]! - hf[S - 1]!).toBe(2);
  });

  it('generate writes generated_ids identical to HF greedy generate() and streams them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-'));
    const c = capture();
    const caseDir = join(ernie, 'cases', 'batch-padded');
    const code = await main(
      [
        'generate',
        '--model',
        ernie,
        '--inputs',
        join(caseDir, 'inputs.safetensors'),
        '--max-new-tokens',
        '8',
        '--out',
        join(dir, 'gen.safetensors'),
        '--device',
        'cpu',
      ],
      c.out,
    );
    expect(code).toBe(0);
    const got = await readNamedTensors(join(dir, 'gen.safetensors'));
    const want = await readNamedTensors(join(caseDir, 'expected.safetensors'));
    expect(got.generated_ids!.dims).toEqual(want.generated_ids!.dims);
    expect(Array.from(got.generated_ids!.data as BigInt64Array)).toEqual(Array.from(want.generated_ids!.data as BigInt64Array));
    const streamed = /tokens:(.*)/.exec(c.text())![1]!;
    expect(streamed.match(/\[\d+, \d+\]/g)).toHaveLength(8);
  });
});

describe('vlmkit forward / generate on the Granite fixtures', () => {
  const granite = join(FIXTURE_DIR, 'granite-tiny');
  it('forward writes logits and every deepstack level matching HF (multi-image)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-'));
    const caseDir = join(granite, 'cases', 'multi-image');
    expect(
      await main(
        [
          'forward',
          '--model',
          granite,
          '--inputs',
          join(caseDir, 'inputs.safetensors'),
          '--out',
          join(dir, 'o.safetensors'),
          '--device',
          'cpu',
        ],
        capture().out,
      ),
    ).toBe(0);
    const got = await readNamedTensors(join(dir, 'o.safetensors'));
    const want = await readNamedTensors(join(caseDir, 'expected.safetensors'));
    expect(relError(got.logits!.data as Float32Array, want.logits!.data as Float32Array)).toBeLessThan(1e-4);
    const levels = Object.keys(got).filter((k) => k.startsWith('deepstack_'));
    expect(levels).toHaveLength(8);
    for (const k of levels) {
      const ref = want[`image_features_level_${k.slice('deepstack_'.length)}`]!;
      expect(got[k]!.dims).toEqual(ref.dims);
      expect(relError(got[k]!.data as Float32Array, ref.data as Float32Array)).toBeLessThan(1e-4);
    }
  });

  it('generate with --adapter merges the LoRA and reproduces HF greedy ids of the merged model', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-'));
    const caseDir = join(granite, 'cases', 'lora');
    const argv = [
      'generate',
      '--model',
      granite,
      '--adapter',
      join(FIXTURE_DIR, 'granite-tiny-lora'),
      '--inputs',
      join(caseDir, 'inputs.safetensors'),
      '--max-new-tokens',
      '8',
      '--out',
      join(dir, 'g.safetensors'),
      '--device',
      'cpu',
    ];
    expect(await main(argv, capture().out)).toBe(0);
    const got = await readNamedTensors(join(dir, 'g.safetensors'));
    const want = await readNamedTensors(join(caseDir, 'expected.safetensors'));
    expect(Array.from(got.generated_ids!.data as BigInt64Array)).toEqual(Array.from(want.generated_ids!.data as BigInt64Array));
  });
});

describe('vlmkit usage errors', () => {
  it('an unknown model type lists the supported ones; a directory without config.json says so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-'));
    await writeFile(join(dir, 'config.json'), JSON.stringify({ model_type: 'llama' }));
    const err = (await main(['forward', '--model', dir, '--inputs', 'x', '--out', 'y'], capture().out).catch(
      (e: unknown) => e,
    )) as ModelError;
    expect(err.code).toBe('UNSUPPORTED_MODEL_TYPE');
    expect(err.message).toMatch(/model_type 'llama' is not supported. Supported: ernie4_5_vl_moe, granite4_vision/);
    const none = (await main(['forward', '--model', join(FIXTURE_DIR, 'mrope'), '--inputs', 'x', '--out', 'y'], capture().out).catch(
      (e: unknown) => e,
    )) as ModelError;
    expect(none.code).toBe('CONFIG_NOT_FOUND');
  });

  it('rejects a missing flag, a bad device and an unknown command with exit code 2', async () => {
    for (const argv of [['forward', '--model', ernie], ['demo', '--device', 'tpu'], ['nope']]) {
      const [c, e] = [capture(), capture()];
      expect(await main(argv, c.out, { err: e.out })).toBe(2);
      expect(e.text()).toMatch(/^vlmkit: /);
      expect(c.text()).toBe('');
    }
  });

  it('graph-demo builds and runs a small graph and prints the numbers a TypeScript reference computes', async () => {
    const c = capture();
    expect(await main(['graph-demo', '--device', 'cpu'], c.out)).toBe(0);
    expect(c.text()).toMatch(/^device: cpu/);
    const printed = JSON.parse(/output: (\[.*\])/.exec(c.text())![1]!) as number[];
    const want = graphDemoReference();
    expect(printed).toHaveLength(8);
    // Printed with 4 decimals: each equals the reference rounded the same way (within one unit of rounding).
    printed.forEach((v, i) => {
      expect(Math.abs(v - want[i]!)).toBeLessThanOrEqual(5e-5 + 1e-6);
    });
    expect(new Set(printed).size).toBeGreaterThan(4);
  });
});

/** The first row of graph-demo's MLP in plain TypeScript: layerNorm(fc2(gelu(fc1(x)))), same weights as demo-graph.ts. */
function graphDemoReference(): number[] {
  const d = 8;
  const ramp = (n: number, scale: number) => Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * scale);
  const [w1, b1, w2, x] = [ramp(2 * d * d, 0.3), ramp(2 * d, 0.1), ramp(2 * d * d, 0.2), ramp(2 * d, 1).slice(0, d)];
  // erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
  const erf = (z: number) => {
    const t = 1 / (1 + 0.3275911 * Math.abs(z));
    return (
      Math.sign(z) *
      (1 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * Math.exp(-z * z))
    );
  };
  const h = Array.from({ length: 2 * d }, (_, o) => {
    const s = x.reduce((a, xi, i) => a + xi * w1[o * d + i]!, b1[o]!);
    return 0.5 * s * (1 + erf(s / Math.SQRT2));
  });
  const y = Array.from({ length: d }, (_, o) => h.reduce((a, hi, i) => a + hi * w2[o * 2 * d + i]!, 0));
  const mean = y.reduce((a, v) => a + v, 0) / d;
  const variance = y.reduce((a, v) => a + (v - mean) ** 2, 0) / d;
  return y.map((v) => (v - mean) / Math.sqrt(variance + 1e-5));
}
