/** What is wrong with a config, as a stable code callers can branch on. */
export type ConfigErrorCode =
  /** Not a JSON object, or a field of the wrong type or out of range. */
  | 'INVALID_CONFIG'
  /** A field the component needs and no reference gives a default for. */
  | 'MISSING_CONFIG_FIELD'
  /** A valid reference config this package does not build (biased projections, another rope type, mamba layers). */
  | 'UNSUPPORTED_CONFIG'
  /** Two fields that disagree (hidden_size vs embed_dim, heads that do not divide the width). */
  | 'INCONSISTENT_CONFIG';

/**
 * Thrown by every config reader in vlmkit. `field` is the path of the field
 * inside the JSON (`text_config.moe_k`; '' for the object itself), `config`
 * names what was being read ('ERNIE text config'), and `message` says both,
 * with what was expected and what was found.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly code: ConfigErrorCode,
    readonly field: string,
    readonly config: string,
    detail: string,
  ) {
    super(`${config}: ${field === '' ? '' : `${field} `}${detail}`);
  }
}

/** A value as a message shows it: JSON, cut at 80 characters; `nothing` for undefined. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
