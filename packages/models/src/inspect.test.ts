// inspectCheckpoint on the fixture checkpoints and on copies with one thing broken: each problem is found,
// named (code, file / tensor / field / parameter) and listed first; a good directory has none.
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SafetensorsFile, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectCheckpoint } from './inspect.node.js';
import { formatInspectReport } from './inspect-report.js';
import { FIXTURES } from './test-utils/fixtures.js';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function readAll(file: string): Promise<Record<string, Tensor>> {
  const st = await SafetensorsFile.open(file);
  const out: Record<string, Tensor> = {};
  for (const n of st.names()) out[n] = await st.read(n);
  await st.close();
  return out;
}

/** A copy of a fixture checkpoint with its tensors and config.json changed. */
async function variant(
  model: string,
  tensors: (t: Record<string, Tensor>) => void,
  config: (c: Record<string, unknown>) => void = () => {},
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-inspect-'));
  dirs.push(dir);
  const src = join(FIXTURES, model);
  const t = await readAll(join(src, 'model.safetensors'));
  tensors(t);
  await writeSafetensors(join(dir, 'model.safetensors'), t);
  const c = JSON.parse(await readFile(join(src, 'config.json'), 'utf8')) as Record<string, unknown>;
  config(c);
  await writeFile(join(dir, 'config.json'), JSON.stringify(c));
  await copyFile(join(src, 'generation_config.json'), join(dir, 'generation_config.json'));
  return dir;
}

const Q = 'model.language_model.layers.1.self_attn.q_proj.weight';

describe('inspectCheckpoint', () => {
  it.each([
    'granite-tiny',
    'ernie-tiny',
    'qwen3-vl-tiny',
    'qwen3-vl-moe-tiny',
  ])('%s: no problems; every tensor mapped or ignored; parameters counted per component', async (model) => {
    const r = await inspectCheckpoint(join(FIXTURES, model));
    expect(r.problems).toEqual([]);
    const headers = await readAll(join(FIXTURES, model, 'model.safetensors'));
    const names = Object.keys(headers);
    expect(r.files).toEqual([{ path: join(FIXTURES, model, 'model.safetensors'), tensors: names.length }]);
    expect(r.tensors.mapped + r.tensors.ignored).toBe(names.length);
    expect(r.tensors.unused).toEqual([]);
    const own = { 'granite-tiny': ['projectors'], 'ernie-tiny': ['resampler'] }[model as string] ?? [];
    expect(r.components.map((c) => c.name).sort()).toEqual(['decoder', ...own, 'vision']);
    // Independent count: every element of every checkpoint tensor, less the ignored ones, lands in one parameter.
    const numel = (t: Tensor) => t.shape.reduce((a, d) => a * d, 1);
    const total = r.components.reduce((a, c) => a + c.parameters, 0);
    const all = Object.values(headers).reduce((a, t) => a + numel(t), 0);
    if (r.tensors.ignored === 0) expect(total).toBe(all);
    else expect(total).toBeLessThan(all);
    expect(formatInspectReport(r)).toMatch(/\nok\n$/);
  });

  it('a good LoRA adapter is checked and summarised', async () => {
    const r = await inspectCheckpoint(join(FIXTURES, 'granite-tiny'), { adapter: join(FIXTURES, 'granite-tiny-lora') });
    expect(r.problems).toEqual([]);
    expect(r.adapter).toEqual({ dir: join(FIXTURES, 'granite-tiny-lora'), rank: 4, alpha: 8, targets: 56 });
  });

  it('a missing tensor: MISSING_TENSOR naming the parameter and the checkpoint name, nearest names offered', async () => {
    const dir = await variant('granite-tiny', (t) => {
      delete t[Q];
    });
    const r = await inspectCheckpoint(dir);
    expect(r.problems[0]!.code).toBe('MISSING_TENSOR');
    expect(r.problems[0]!.message).toContain(`'${Q}', which the checkpoint lacks`);
    expect(r.problems[0]!.message).toContain('Nearest present:');
    expect(r.tensors.missing.length).toBe(1);
    // k and v of that layer are left unused: counted, not reported as problems of their own.
    expect(r.problems).toHaveLength(1);
    expect(r.tensors.unused).toHaveLength(2);
    expect(formatInspectReport(r)).toMatch(/1 problem\(s\); first: MISSING_TENSOR decoder parameter /);
  });

  it('a wrong shape: SHAPE_MISMATCH naming the tensor, expected and found shapes', async () => {
    const dir = await variant('granite-tiny', (t) => {
      const q = t[Q]!;
      // Same element count, so the header is valid: only the shape is wrong.
      t[Q] = { ...q, shape: [q.shape[0]! / 2, q.shape[1]! * 2] };
    });
    const r = await inspectCheckpoint(dir);
    expect(r.problems.map((p) => p.code)).toEqual(['SHAPE_MISMATCH']);
    expect(r.problems[0]!.message).toContain(Q);
    expect(r.problems[0]!.message).toMatch(/\[32, 128\]/);
    expect(r.tensors.mismatched.length).toBe(1);
  });

  it('a wrong dtype: UNSUPPORTED_DTYPE naming the tensor and what was found', async () => {
    const dir = await variant('ernie-tiny', (t) => {
      const name = Object.keys(t).find((n) => n.endsWith('post_attention_layernorm.weight'))!;
      const x = t[name]!;
      t[name] = { dtype: 'I32', shape: [...x.shape], data: new Int32Array(x.data.length) };
    });
    const r = await inspectCheckpoint(dir);
    expect(r.problems.map((p) => p.code)).toEqual(['UNSUPPORTED_DTYPE']);
    expect(r.problems[0]!.message).toMatch(/post_attention_layernorm\.weight.*I32/);
  });

  it('an unused tensor: UNMAPPED_TENSOR naming the file and tensor', async () => {
    const dir = await variant('granite-tiny', (t) => {
      t['model.language_model.extra_head.weight'] = { dtype: 'F32', shape: [2, 2], data: new Float32Array(4) };
    });
    const r = await inspectCheckpoint(dir);
    expect(r.problems).toEqual([
      {
        code: 'UNMAPPED_TENSOR',
        where: `${join(dir, 'model.safetensors')}: model.language_model.extra_head.weight`,
        message:
          "checkpoint tensor 'model.language_model.extra_head.weight' is used by no parameter of Granite 4 Vision as config.json describes it (a different layout, or a config that does not match the weights).",
      },
    ]);
    expect(r.tensors.unused).toEqual(['model.language_model.extra_head.weight']);
  });

  it('a bad config: the config reader error naming the field; nothing else is read', async () => {
    const dir = await variant(
      'granite-tiny',
      () => {},
      (c) => {
        (c.text_config as Record<string, unknown>).num_attention_heads = 'eight';
      },
    );
    const r = await inspectCheckpoint(dir);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.where).toMatch(/num_attention_heads/);
    expect(r.problems[0]!.message).toMatch(/num_attention_heads.*"eight"/);
    expect(r.files).toEqual([]);
    const notJson = await variant('granite-tiny', () => {});
    await writeFile(join(notJson, 'config.json'), 'null');
    expect((await inspectCheckpoint(notJson)).problems[0]!.code).toBe('BAD_CONFIG');
  });

  it('a damaged header: the safetensors error naming the file', async () => {
    const dir = await variant('granite-tiny', () => {});
    const bytes = await readFile(join(dir, 'model.safetensors'));
    await writeFile(join(dir, 'model.safetensors'), bytes.subarray(0, bytes.length - 10));
    const r = await inspectCheckpoint(dir);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.where).toContain(join(dir, 'model.safetensors'));
  });

  it('an adapter that disagrees with its tensors is named, the checkpoint still checked', async () => {
    const adapter = await mkdtemp(join(tmpdir(), 'vlmkit-inspect-adapter-'));
    dirs.push(adapter);
    const cfg = JSON.parse(await readFile(join(FIXTURES, 'granite-tiny-lora', 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(adapter, 'adapter_config.json'), JSON.stringify({ ...cfg, r: 8 }));
    await copyFile(join(FIXTURES, 'granite-tiny-lora', 'adapter_model.safetensors'), join(adapter, 'adapter_model.safetensors'));
    const r = await inspectCheckpoint(join(FIXTURES, 'granite-tiny'), { adapter });
    expect(r.problems.map((p) => p.code)).toEqual(['SHAPE_MISMATCH']);
    expect(r.problems[0]!.message).toMatch(/r = 8/);
    expect(r.components.length).toBe(3);
  });
});
