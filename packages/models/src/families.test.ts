// The family specs: every shared place loops over FAMILIES (none names a model type), a spec's flags decide
// what it supports, and each family's model class is the public model itself.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Processor } from '@vlmkit/processors';
import { int64 } from '@vlmkit/runtime';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { exportModel } from './export.node.js';
import { FAMILIES, familyAt, supportedModelTypes } from './families.js';
import { checkAdapter } from './family.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { Granite4Vision } from './granite/model.js';
import { inspectCheckpoint } from './inspect.node.js';
import { FamilyModel } from './pretrained-model.js';
import { loadPretrained } from './registry.js';

const ROOT = join(FIXTURE_DIR, '..');
const ERNIE = join(FIXTURE_DIR, 'ernie-tiny');
const GRANITE = join(FIXTURE_DIR, 'granite-tiny');
const ADAPTER = join(FIXTURE_DIR, 'granite-tiny-lora');
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

/** Non-test .ts files under `dir`, family folders and the registration list left out. */
async function sharedSources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    const rel = relative(ROOT, path);
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.test.ts') || rel.includes('test-utils')) continue;
    // A family's folder (the one with its family.ts) and the registration list may name its model types.
    if (/^packages\/models\/src\/[^/]+\//.test(rel) && existsSync(join(e.parentPath, 'family.ts'))) continue;
    if (rel === 'packages/models/src/families.ts') continue;
    if (/^packages\/processors\/src\/families\//.test(rel)) continue;
    out.push(path);
  }
  return out;
}

describe('model families', () => {
  it('no shared place names a model type: models outside the family folders, the CLI, the Processor', async () => {
    const files = [
      ...(await sharedSources(join(ROOT, 'packages/models/src'))),
      ...(await sharedSources(join(ROOT, 'packages/cli/src'))),
      join(ROOT, 'packages/processors/src/processor.ts'),
      join(ROOT, 'packages/processors/src/processor-files.ts'),
      join(ROOT, 'packages/processors/src/processor-family.ts'),
    ];
    const names = FAMILIES.flatMap((f) => [...f.modelTypes, f.processor.processorClass]);
    const found: string[] = [];
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      for (const name of names) if (text.includes(name)) found.push(`${relative(ROOT, file)}: ${name}`);
    }
    expect(found).toEqual([]);
  });

  it("a checkpoint's model_type (the hub's alias too) chooses its family; the supported list is the families'", async () => {
    expect((await familyAt(ERNIE)).name).toBe('ERNIE-4.5-VL');
    expect((await familyAt(GRANITE)).name).toBe('Granite 4 Vision');
    expect(FAMILIES.find((f) => f.modelTypes.includes('ernie4_5_moe_vl'))?.name).toBe('ERNIE-4.5-VL');
    expect(supportedModelTypes()).toEqual(FAMILIES.map((f) => f.modelTypes[0]).sort());
  });

  it('LoRA support is the spec flag: one message from load, export and inspect; a family with the flag takes one', async () => {
    expect(() => checkAdapter({ name: 'Some VLM', supports: { adapter: false, video: false } }, ADAPTER)).toThrow(
      `LoRA adapters are not supported for Some VLM: drop the adapter (${ADAPTER}).`,
    );
    expect(() => checkAdapter({ name: 'Some VLM', supports: { adapter: true, video: false } }, ADAPTER)).not.toThrow();
    const message = `LoRA adapters are not supported for ERNIE-4.5-VL: drop the adapter (${ADAPTER}).`;
    await expect(loadPretrained(ERNIE, { adapter: ADAPTER })).rejects.toMatchObject({ code: 'BAD_INPUT', message });
    const out = await mkdtemp(join(tmpdir(), 'vlmkit-family-export-'));
    dirs.push(out);
    await expect(exportModel(ERNIE, join(out, 'x'), { adapter: ADAPTER })).rejects.toMatchObject({ code: 'BAD_INPUT', message });
    expect((await inspectCheckpoint(ERNIE, { adapter: ADAPTER })).problems[0]).toMatchObject({ code: 'BAD_INPUT', message });
    expect((await inspectCheckpoint(GRANITE, { adapter: ADAPTER })).problems).toEqual([]);
  });

  it("the loaded model is the family's class itself, with chat, processor and the prompt-length check", async () => {
    const model = await loadPretrained(ERNIE);
    try {
      expect(model).toBeInstanceOf(Ernie45VL);
      expect(model).toBeInstanceOf(FamilyModel);
      expect(model.modelType).toBe('ernie4_5_vl_moe');
      const spy = vi.spyOn(Processor, 'fromPretrained');
      const p = await model.processor();
      expect(await model.processor()).toBe(p);
      expect(spy).toHaveBeenCalledTimes(1);
      spy.mockRestore();
      // The class's own generate refuses a prompt past max_position_embeddings, as loadPretrained's did.
      const json = JSON.parse(await readFile(join(ERNIE, 'config.json'), 'utf8')) as { text_config?: { max_position_embeddings?: number } };
      const max = json.text_config?.max_position_embeddings;
      if (max !== undefined) {
        const ids = int64(new Array<number>(max + 1).fill(1), [1, max + 1]);
        await expect(model.generate({ input_ids: ids }, { maxNewTokens: 1 })).rejects.toMatchObject({ code: 'PROMPT_TOO_LONG' });
      }
    } finally {
      await model.release();
    }
    const granite = await loadPretrained(GRANITE);
    expect(granite).toBeInstanceOf(Granite4Vision);
    await granite.release();
  });
});
