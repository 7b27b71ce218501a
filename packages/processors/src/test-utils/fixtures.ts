import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** test-fixtures/processors, from this package's sources. */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../../../test-fixtures/processors');

export function fixturePath(...parts: string[]): string {
  return join(FIXTURES, ...parts);
}

export function readJson<T>(...parts: string[]): T {
  return JSON.parse(readFileSync(fixturePath(...parts), 'utf8')) as T;
}

export function readBytes(...parts: string[]): Uint8Array {
  return new Uint8Array(readFileSync(fixturePath(...parts)));
}

export function readF32(...parts: string[]): Float32Array {
  const b = readFileSync(fixturePath(...parts));
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}
