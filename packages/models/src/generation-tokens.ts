/** The ids generation stops and pads with; a finished row emits `pad` until every row is done. */
export interface GenerationTokens {
  eos: number | undefined;
  pad: number;
}

function int(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
}

/**
 * eos / pad from config.json, read the same way for every model: the text
 * config's first (HF 5.17 nests it as `text_config`; hub layouts may be
 * flat), then the top level; pad defaults to 0. Values that are not a single
 * integer are ignored (HF allows eos lists; generate's `eos` option takes those).
 */
export function generationTokens(json: Record<string, unknown>): GenerationTokens {
  const text = (json.text_config ?? json) as Record<string, unknown>;
  return {
    eos: int(text.eos_token_id) ?? int(json.eos_token_id),
    pad: int(text.pad_token_id) ?? int(json.pad_token_id) ?? 0,
  };
}
