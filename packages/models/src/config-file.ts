// A checkpoint directory's config.json, read once the same way by the registry, every family's load, export and inspect:
// an unreadable file or bad JSON is CONFIG_NOT_FOUND, anything but a JSON object BAD_CONFIG, naming the file.
import { dirFile, readText } from '#platform';
import { ModelError } from './errors.js';

export interface ConfigFile {
  readonly path: string;
  readonly json: Record<string, unknown>;
}

export async function readConfigFile(dir: string): Promise<ConfigFile> {
  const path = dirFile(dir, 'config.json');
  let json: unknown;
  try {
    json = JSON.parse(await readText(path));
  } catch (e) {
    throw new ModelError(
      'CONFIG_NOT_FOUND',
      `cannot read ${path}: ${(e as Error).message}. Pass the directory holding config.json and the .safetensors files.`,
    );
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ModelError('BAD_CONFIG', `${path} must hold a JSON object (a model config), found ${JSON.stringify(json)}.`);
  }
  return { path, json: json as Record<string, unknown> };
}
