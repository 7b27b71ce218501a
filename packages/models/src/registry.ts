// Opens a checkpoint directory with the family its config.json names (./families.ts).
import { familyAt } from './families.js';
import type { LoadOptions } from './model-load.js';
import type { PretrainedModel } from './pretrained-model.js';

/** Opens a checkpoint directory with the model its config.json names. */
export async function loadPretrained(dir: string, options: LoadOptions = {}): Promise<PretrainedModel> {
  return (await familyAt(dir)).load(dir, options);
}

export type { PretrainedModel } from './pretrained-model.js';
