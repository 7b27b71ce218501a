// A checkpoint directory's config.json, read once the same way by the registry, both models' loaders and export:
// an unreadable file or bad JSON is CONFIG_NOT_FOUND, anything but a JSON object BAD_CONFIG, naming the file.
import { join, resolve } from 'node:path';
import { readRegularTextFile } from '@vlmkit/safetensors';
import { ModelError } from './errors.js';

export interface ConfigFile {
  readonly path: string;
  readonly json: Record<string, unknown>;
}

export async function readConfigFile(dir: string): Promise<ConfigFile> {
  const path = join(resolve(dir), 'config.json');
  let json: unknown;
  try {
    json = JSON.parse(await readRegularTextFile(path));
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

/** The implemented model types; the hub's own name for ERNIE-4.5-VL differs from HF's. */
export const MODEL_TYPES = ['ernie4_5_vl_moe', 'granite4_vision'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];
const ALIASES: Record<string, ModelType> = { ernie4_5_moe_vl: 'ernie4_5_vl_moe' };

/** config.json's model_type as one of MODEL_TYPES; UNSUPPORTED_MODEL_TYPE naming the supported ones otherwise. */
export function modelType({ path, json }: ConfigFile): ModelType {
  const type = String(json.model_type);
  const known = ALIASES[type] ?? (MODEL_TYPES as readonly string[]).find((t) => t === type);
  if (known === undefined) {
    throw new ModelError('UNSUPPORTED_MODEL_TYPE', `${path}: model_type '${type}' is not supported. Supported: ${MODEL_TYPES.join(', ')}.`);
  }
  return known as ModelType;
}
