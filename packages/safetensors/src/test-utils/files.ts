/** Helpers for tests: temp directories and hand-made (possibly malformed) safetensors bytes. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { SafetensorsError } from '../errors.js';

/** A fresh temp dir, removed after the test file's tests. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-safetensors-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * File bytes from a header (an object is JSON-encoded; a string or bytes is
 * used as is) and a data section of `data` bytes (a length gives zeros).
 * `headerLength` overrides the length prefix.
 */
export function rawFile(header: unknown, data: Uint8Array | number = 0, headerLength?: bigint): Uint8Array {
  const h = header instanceof Uint8Array ? header : new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const d = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + h.length + d.length);
  new DataView(out.buffer).setBigUint64(0, headerLength ?? BigInt(h.length), true);
  out.set(h, 8);
  out.set(d, 8 + h.length);
  return out;
}

/** The SafetensorsError a promise (or function) rejects with; fails the test if it resolves or throws something else. */
export async function rejection(p: Promise<unknown> | (() => unknown)): Promise<SafetensorsError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SafetensorsError);
  return err as SafetensorsError;
}
