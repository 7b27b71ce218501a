// A checkpoint's config.json, read once the same way by the registry, every family's load, export and inspect:
// an unreadable file or bad JSON is CONFIG_NOT_FOUND, anything but a JSON object BAD_CONFIG, naming the file.
import { ModelError } from './errors.js';
import { type CheckpointSource, readSourceText, sourceFile } from './model-source.js';

export interface ConfigFile {
  readonly path: string;
  readonly json: Record<string, unknown>;
}

/** config.json of a checkpoint directory (its path) or of its files. */
export async function readConfigFile(source: CheckpointSource): Promise<ConfigFile> {
  const path = sourceFile(source, 'config.json');
  let json: unknown;
  try {
    json = JSON.parse(await readSourceText(source, 'config.json'));
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
