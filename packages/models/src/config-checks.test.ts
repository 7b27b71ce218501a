// Checkpoint directories whose config.json cannot be read as the reference reads it are refused by name.
// A config.json that describes fewer layers than its checkpoint holds is refused by name (EXTRA_LAYERS):
// the layers past it would otherwise be ignored and the model would run with exit 0 and other numbers.
import { copyFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MappingError } from '@vlmkit/weight-mapper';
import { describe, expect, it } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { ModelError } from './errors.js';
import { exportModel } from './export.node.js';
import { Granite4Vision } from './granite/model.js';
import { loadPretrained } from './registry.js';
import { FIXTURES } from './test-utils/fixtures.js';

async function withConfig(model: string, edit: (config: Record<string, Record<string, unknown>>) => void): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-layers-'));
  const config = JSON.parse(await readFile(join(FIXTURES, model, 'config.json'), 'utf8'));
  edit(config);
  await writeFile(join(dir, 'config.json'), JSON.stringify(config));
  await copyFile(join(FIXTURES, model, 'model.safetensors'), join(dir, 'model.safetensors'));
  return dir;
}

describe('a config with fewer layers than the checkpoint', () => {
  it('ERNIE: text_config.num_hidden_layers 1 of 4 is EXTRA_LAYERS naming model.layers.1', async () => {
    const dir = await withConfig('ernie-tiny', (c) => {
      c.text_config!.num_hidden_layers = 1;
      c.text_config!.mlp_layer_types = (c.text_config!.mlp_layer_types as string[]).slice(0, 1);
    });
    const e = await loadPretrained(dir, { device: 'cpu', cacheDir: dir }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(MappingError);
    expect((e as MappingError).code).toBe('EXTRA_LAYERS');
    expect((e as MappingError).message).toMatch(/tensors of model\.layers\.1 .* describes model\.layers\.0 to model\.layers\.0 only/);
  });

  it('ERNIE: vision_config.depth 1 of 2 is EXTRA_LAYERS naming the vision blocks', async () => {
    const dir = await withConfig('ernie-tiny', (c) => {
      c.vision_config!.depth = 1;
    });
    const e = await loadPretrained(dir, { device: 'cpu', cacheDir: dir }).catch((x: unknown) => x);
    expect((e as MappingError).code).toBe('EXTRA_LAYERS');
    expect((e as MappingError).message).toMatch(/vision_model\.blocks\.1/);
  });
});

describe('config.json that is not an object', () => {
  it.each(['null', '[]', '3'])('%s is BAD_CONFIG naming the file, not a TypeError', async (text) => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-config-'));
    await writeFile(join(dir, 'config.json'), text);
    const e = await loadPretrained(dir, { device: 'cpu' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelError);
    expect((e as ModelError).code).toBe('BAD_CONFIG');
    expect((e as ModelError).message).toMatch(/config\.json must hold a JSON object \(a model config\), found /);
  });
});

describe('config.json read once for every entry point', () => {
  it('the model classes and export refuse a non-object config.json as loadPretrained does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-config-'));
    await writeFile(join(dir, 'config.json'), 'null');
    for (const open of [
      () => Ernie45VL.fromPretrained(dir),
      () => Granite4Vision.fromPretrained(dir),
      () => exportModel(dir, join(dir, 'out')),
    ]) {
      const e = await open().catch((x: unknown) => x);
      expect((e as ModelError).code).toBe('BAD_CONFIG');
    }
  });
});
