import { QFormerError } from './errors.js';

/** config.json readers shared by the two config parsers: each names the field's path in its message. */
export type Json = Record<string, unknown>;

export function isObject(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

export function describe(x: unknown): string {
  return x === null ? 'null' : Array.isArray(x) ? 'an array' : `${typeof x} ${JSON.stringify(x)}`;
}

/** A sub-object (`vision_config`), or `{}` when absent. */
export function section(o: Json, key: string, path: string): Json {
  const x = o[key];
  if (x === undefined || x === null) return {};
  if (!isObject(x)) throw new QFormerError('INVALID_CONFIG', `config.json: ${path}${key} must be an object, got ${describe(x)}`);
  return x;
}

export function int(o: Json, key: string, path: string, fallback?: number): number {
  const x = o[key];
  if (x === undefined || x === null) {
    if (fallback !== undefined) return fallback;
    throw new QFormerError('MISSING_CONFIG_FIELD', `config.json: ${path}${key} is missing`);
  }
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) {
    throw new QFormerError('INVALID_CONFIG', `config.json: ${path}${key} must be a positive integer, got ${describe(x)}`);
  }
  return x;
}

export function positive(o: Json, key: string, path: string, fallback: number): number {
  const x = o[key];
  if (x === undefined || x === null) return fallback;
  if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) {
    throw new QFormerError('INVALID_CONFIG', `config.json: ${path}${key} must be a positive number, got ${describe(x)}`);
  }
  return x;
}

export function str(o: Json, key: string, path: string, fallback: string): string {
  const x = o[key];
  if (x === undefined || x === null) return fallback;
  if (typeof x !== 'string') throw new QFormerError('INVALID_CONFIG', `config.json: ${path}${key} must be a string, got ${describe(x)}`);
  return x;
}

export function bool(o: Json, key: string, path: string, fallback: boolean): boolean {
  const x = o[key];
  if (x === undefined || x === null) return fallback;
  if (typeof x !== 'boolean')
    throw new QFormerError('INVALID_CONFIG', `config.json: ${path}${key} must be true or false, got ${describe(x)}`);
  return x;
}
