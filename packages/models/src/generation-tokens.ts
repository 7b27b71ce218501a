import { type ConfigObject, fields } from '@vlmkit/config';
import { ModelError } from './errors.js';
import { type CheckpointSource, readSourceText, sourceFile } from './model-source.js';

/** The ids generation stops on and pads finished rows with. */
export interface GenerationTokens {
  /** Any of these ends a row (HF allows one id or a list); empty: rows run to max_new_tokens. */
  eos: readonly number[];
  pad: number;
}

/** An int or a list of ints (HF's eos_token_id), undefined when the field is absent. */
function ids(c: ConfigObject, key: string): number[] | undefined {
  if (!c.has(key)) return undefined;
  return typeof c.raw(key) === 'number' ? [c.int(key, { min: 0 })] : c.ints(key, { min: 0 });
}

/**
 * eos / pad as HF generate reads them, for every model: from generation_config.json when the checkpoint
 * has one (`GenerationConfig.from_pretrained`), else from config.json, the text config's first (HF 5.17
 * nests it as `text_config`; hub layouts may be flat) then the top level (`GenerationConfig.from_model_config`).
 * A missing pad is the first eos, as HF generate's `_prepare_special_tokens` sets it; with no eos either no row
 * can finish, so pad is never emitted (0).
 */
export function generationTokens(config: Record<string, unknown>, generationConfig?: unknown): GenerationTokens {
  const sources: ConfigObject[] = [];
  if (generationConfig !== undefined) {
    sources.push(fields(generationConfig, 'generation_config.json'));
  } else {
    const top = fields(config, 'config.json');
    const text = top.optionalObj('text_config');
    if (text) sources.push(text);
    sources.push(top);
  }
  const first = (key: string) => sources.map((c) => ids(c, key)).find((v) => v !== undefined);
  const eos = first('eos_token_id') ?? [];
  const pad = first('pad_token_id');
  if (pad !== undefined && pad.length !== 1)
    sources[0]!.fail('INVALID_CONFIG', 'pad_token_id', `must be one id, found [${pad.join(', ')}].`);
  return { eos, pad: pad?.[0] ?? eos[0] ?? 0 };
}

/** A checkpoint's generation_config.json, undefined when it has none (then config.json holds the ids). */
export async function readGenerationConfig(source: CheckpointSource): Promise<unknown> {
  const path = sourceFile(source, 'generation_config.json');
  let text: string;
  try {
    text = await readSourceText(source, 'generation_config.json');
  } catch (e) {
    if ((e as { code?: string }).code === 'FILE_NOT_FOUND') return undefined;
    throw new ModelError('BAD_CONFIG', `cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new ModelError('BAD_CONFIG', `${path} is not valid JSON: ${(e as Error).message}`);
  }
}
