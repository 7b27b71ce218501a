import { VisionTowerError } from './errors.js';

/** Readers for config.json fields with messages that name the field and what was found. */
export type Json = Record<string, unknown>;

export function isObject(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

export function positiveInt(cfg: Json, key: string, where: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new VisionTowerError('INVALID_CONFIG', `${where}.${key}: expected a positive integer, found ${JSON.stringify(v)}.`);
  }
  return v;
}

export function optionalPositiveInt(cfg: Json, key: string, where: string): number | undefined {
  return cfg[key] === undefined ? undefined : positiveInt(cfg, key, where);
}

export function positiveNumber(cfg: Json, key: string, where: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new VisionTowerError('INVALID_CONFIG', `${where}.${key}: expected a positive number, found ${JSON.stringify(v)}.`);
  }
  return v;
}

export function optionalPositiveNumber(cfg: Json, key: string, where: string): number | undefined {
  return cfg[key] === undefined ? undefined : positiveNumber(cfg, key, where);
}

/** patch_size as HF writes it: an int, or [p, p] (square patches only). */
export function squarePatch(cfg: Json, key: string, where: string): number {
  const v = cfg[key];
  if (Array.isArray(v) && v.length === 2 && v[0] === v[1]) return positiveInt({ [key]: v[0] }, key, where);
  if (Array.isArray(v))
    throw new VisionTowerError('INVALID_CONFIG', `${where}.${key}: expected square patches, found ${JSON.stringify(v)}.`);
  return positiveInt(cfg, key, where);
}
