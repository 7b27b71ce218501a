// `vlmkit export` loaded by a plain onnxruntime-node script (tools/export/run-exported.mjs, no @vlmkit
// import) gives the logits `vlmkit forward` gives and the greedy ids `vlmkit generate` gives (through the
// manifest's KV cache wiring), on every fixture case of both models.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { type ExportManifest, FIXTURE_DIR, readNamedTensors } from '@vlmkit/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const run = promisify(execFile);
const REPO = resolve(FIXTURE_DIR, '..');
const SCRIPT = join(REPO, 'tools', 'export', 'run-exported.mjs');
// The script imports onnxruntime-node by name; in this repo it is a dependency of @vlmkit/runtime.
const ORT_NODE = pathToFileURL(createRequire(join(REPO, 'packages', 'runtime', 'package.json')).resolve('onnxruntime-node')).href;

interface Case {
  model: string;
  name: string;
  dir: string;
  checkpoint: string;
  adapter: string | undefined;
}

const cases: Case[] = ['ernie-tiny', 'granite-tiny'].flatMap((model) =>
  readdirSync(join(FIXTURE_DIR, model, 'cases'))
    .sort()
    .map((name) => {
      const dir = join(FIXTURE_DIR, model, 'cases', name);
      const json = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8')) as { checkpoint: string; adapter?: string };
      return { model, name, dir, checkpoint: json.checkpoint, adapter: json.adapter };
    }),
);

let work: string;
const exports = new Map<string, string>();
const quiet = () => {};

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-export-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** One export per checkpoint + adapter, shared by its cases. */
async function exported(c: Case): Promise<string> {
  const id = `${c.checkpoint}${c.adapter ? `+${c.adapter}` : ''}`;
  let dir = exports.get(id);
  if (!dir) {
    dir = join(work, id);
    const args = ['export', '--model', join(FIXTURE_DIR, c.checkpoint), '--out', dir];
    if (c.adapter) args.push('--adapter', join(FIXTURE_DIR, c.adapter));
    let text = '';
    const code = await main(args, (s) => {
      text += s;
    });
    expect(code).toBe(0);
    expect(text).toMatch(/wrote vision_encoder\.onnx, .*decoder\.onnx, .*manifest\.json/);
    exports.set(id, dir);
  }
  return dir;
}

function maxDiff(x: Float32Array, y: Float32Array): number {
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i]! - y[i]!));
  return d;
}

const diffs: string[] = [];
afterAll(() => {
  process.stdout.write(`plain ORT vs vlmkit forward, max |logits diff| per case:\n${diffs.join('\n')}\n`);
});

describe('vlmkit export', () => {
  it('writes a manifest with every graph input and output, the KV cache wiring and the host-side rules', async () => {
    const dir = await exported(cases.find((c) => c.model === 'ernie-tiny' && c.checkpoint === 'ernie-tiny')!);
    const m = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as ExportManifest;
    expect(m).toMatchObject({ format: 'vlmkit-export', version: 1, model_type: 'ernie4_5_vl_moe' });
    const dec = m.graphs.decoder;
    expect(dec.inputs.find((i) => i.name === 'input_ids')).toEqual({ name: 'input_ids', dtype: 'int64', dims: ['batch', 'seq'] });
    const kv = m.decoder.kv_cache;
    expect(kv.layers[0]).toEqual({
      past_key: 'past_key_values.0.key',
      past_value: 'past_key_values.0.value',
      present_key: 'present.0.key',
      present_value: 'present.0.value',
    });
    expect(dec.inputs.find((i) => i.name === 'past_key_values.0.key')!.dims).toEqual(['batch', kv.num_kv_heads, 'past', kv.head_dim]);
    expect(dec.outputs.find((o) => o.name === 'present.0.key')!.dims).toEqual(['batch', kv.num_kv_heads, 'total', kv.head_dim]);
    expect(dec.inputs.filter((i) => i.name.startsWith('past_key_values.'))).toHaveLength(2 * kv.num_layers);
    expect(m.ernie).toHaveProperty('text_rotary.axes');
    expect(m.ernie).toHaveProperty('position_ids.advance', 'vllm');
    expect(dec.external_data).toBe('decoder.onnx.data');
    expect(readdirSync(dir).sort()).toEqual([
      'decoder.onnx',
      'decoder.onnx.data',
      'manifest.json',
      'vision_encoder.onnx',
      'vision_encoder.onnx.data',
    ]);
  });

  it.each(
    cases,
  )('$model $name: plain onnxruntime-node on the export gives the logits of vlmkit forward and the ids of vlmkit generate', async (c) => {
    const dir = await exported(c);
    const inputs = join(c.dir, 'inputs.safetensors');
    const fwd = join(work, `${c.model}-${c.name}-forward.safetensors`);
    const gen = join(work, `${c.model}-${c.name}-generate.safetensors`);
    const plain = join(work, `${c.model}-${c.name}-plain.safetensors`);
    const common = ['--model', join(FIXTURE_DIR, c.checkpoint), '--inputs', inputs, '--device', 'cpu', '--cache-dir', join(work, 'cache')];
    if (c.adapter) common.push('--adapter', join(FIXTURE_DIR, c.adapter));
    expect(await main(['forward', ...common, '--out', fwd], quiet)).toBe(0);
    expect(await main(['generate', ...common, '--max-new-tokens', '8', '--out', gen], quiet)).toBe(0);
    await run(process.execPath, [SCRIPT, dir, inputs, plain, '8'], { env: { ...process.env, ORT_NODE } });
    const plainOut = await readNamedTensors(plain);
    const a = (await readNamedTensors(fwd)).logits!;
    const b = plainOut.logits!;
    expect(b.dims).toEqual(a.dims);
    const d = maxDiff(a.data as Float32Array, b.data as Float32Array);
    const ref = (a.data as Float32Array).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    diffs.push(`  ${c.model} ${c.name}: ${d} (max |logit| ${ref})`);
    // The export keeps standard ops; a load runs the cpu profile's passes: float32 weights read as stored
    // (FusedMatMul transB, another MLAS kernel for one-row products: ERNIE's routed experts see single tokens)
    // and fused or grouped expert kernels: rounding, relative to the logits.
    expect(d / ref).toBeLessThanOrEqual(1e-5);
    const ids = (await readNamedTensors(gen)).generated_ids!;
    expect(plainOut.generated_ids!.dims).toEqual(ids.dims);
    expect(Array.from(plainOut.generated_ids!.data as BigInt64Array)).toEqual(Array.from(ids.data as BigInt64Array));
  });

  it("the comparison sees a wrong host-side rule: HF's position advance after a video on a vLLM export", async () => {
    const c = cases.find((x) => x.name === 'video-long-t')!;
    const dir = join(work, 'wrong-rule');
    await cp(await exported(c), dir, { recursive: true });
    const m = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as ExportManifest & {
      ernie: { position_ids: { advance: string } };
    };
    m.ernie.position_ids.advance = 'hf';
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(m));
    const inputs = join(c.dir, 'inputs.safetensors');
    const plain = join(work, 'wrong-rule.safetensors');
    await run(process.execPath, [SCRIPT, dir, inputs, plain], { env: { ...process.env, ORT_NODE } });
    const fwd = join(work, `${c.model}-${c.name}-forward.safetensors`);
    const d = maxDiff(
      (await readNamedTensors(fwd)).logits!.data as Float32Array,
      (await readNamedTensors(plain)).logits!.data as Float32Array,
    );
    expect(d).toBeGreaterThan(1e-3);
  });
});
