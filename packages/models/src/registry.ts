// Opens a checkpoint with the family its config.json names (./families.ts).
import { familyAt } from './families.js';
import type { LoadOptions } from './model-load.js';
import type { CheckpointSource } from './model-source.js';
import type { PretrainedModel } from './pretrained-model.js';

/**
 * Opens a checkpoint with the model its config.json names: a directory's path (Node), or its files
 * (`urlFiles(url)`, `blobFiles(files)` of @vlmkit/safetensors: a page; Node too), whose graphs are built in memory.
 */
export async function loadPretrained(source: CheckpointSource, options: LoadOptions = {}): Promise<PretrainedModel> {
  return (await familyAt(source)).load(source, options);
}

export type { PretrainedModel } from './pretrained-model.js';
