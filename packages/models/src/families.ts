// The registered model families. Adding a family is its folder (./<family>/family.ts and its parts) and one
// line here; the registry, export, inspect, the parameter docs and the CLI loop over this list.
import { type ConfigFile, readConfigFile } from './config-file.js';
import { ernie45VL } from './ernie/family.js';
import { ModelError } from './errors.js';
import type { ModelFamily } from './family.js';
import { granite4Vision } from './granite/family.js';
import type { CheckpointSource } from './model-source.js';
import { qwen3VL, qwen3VLMoe } from './qwen3vl/family.js';

export const FAMILIES: readonly ModelFamily[] = [ernie45VL, granite4Vision, qwen3VL, qwen3VLMoe];

/** The family that answers config.json's model_type; UNSUPPORTED_MODEL_TYPE naming the supported ones otherwise. */
export function familyOf({ path, json }: ConfigFile): ModelFamily {
  const type = String(json.model_type);
  const family = FAMILIES.find((f) => f.modelTypes.includes(type));
  if (family === undefined) {
    throw new ModelError(
      'UNSUPPORTED_MODEL_TYPE',
      `${path}: model_type '${type}' is not supported. Supported: ${FAMILIES.map((f) => f.modelTypes[0]).join(', ')}.`,
    );
  }
  return family;
}

/** The family of a checkpoint (its directory's path, or its files): its config.json's model_type. */
export async function familyAt(source: CheckpointSource): Promise<ModelFamily> {
  return familyOf(await readConfigFile(source));
}

/** The model types a checkpoint may name (each family's HF name), sorted. */
export function supportedModelTypes(): string[] {
  return FAMILIES.map((f) => f.modelTypes[0]).sort();
}
