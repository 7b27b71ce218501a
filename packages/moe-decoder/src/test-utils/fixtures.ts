import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, type Tensor } from '@vlmkit/safetensors';

/** test-fixtures/ at the repository root (written by tools/fixtures/make_fixtures.py, HF transformers 5.17). */
export const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../test-fixtures');

/** Throws (so the test file fails, never skips) when a fixture file the tests need is missing. */
export function requireFixtures(...paths: string[][]): void {
  const missing = paths.map((p) => join(FIXTURES, ...p)).filter((p) => !existsSync(p));
  if (missing.length > 0) throw new Error(`test fixtures missing: ${missing.join(', ')} (generate them with tools/fixtures)`);
}

export async function readJson(...parts: string[]): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(FIXTURES, ...parts), 'utf8')) as Record<string, unknown>;
}

/** Every tensor of one .safetensors file, by name. */
export async function readAll(...parts: string[]): Promise<Record<string, Tensor>> {
  const ckpt = await Checkpoint.open(join(FIXTURES, ...parts));
  const out: Record<string, Tensor> = {};
  try {
    for (const name of ckpt.names()) out[name] = await ckpt.read(name);
  } finally {
    await ckpt.close();
  }
  return out;
}

export interface FixtureCase {
  inputs: Record<string, Tensor>;
  expected: Record<string, Tensor>;
  meta: Record<string, unknown>;
}

export async function loadCase(model: string, name: string): Promise<FixtureCase> {
  const dir = join(model, 'cases', name);
  return {
    inputs: await readAll(dir, 'inputs.safetensors'),
    expected: await readAll(dir, 'expected.safetensors'),
    meta: await readJson(dir, 'case.json'),
  };
}

export const numbers = (t: { data: unknown }): number[] => Array.from(t.data as ArrayLike<number | bigint>, Number);
