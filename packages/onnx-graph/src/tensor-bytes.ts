import { readFileRange } from '#platform';
import type { TypedArray } from './dtype.js';
import { reportFileRead } from './read-observer.js';
import type { TensorRef } from './tensor-ref.js';

function asBytes(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * The tensor's bytes in memory: a `data` tensor's own (a view, not a copy), a `file` tensor's range (Node
 * only: the browser has no paths), a `source` tensor's range, a `lazy` one's result. File and source reads
 * are reported to the read observer (`observeFileReads`).
 */
export async function tensorBytes(ref: TensorRef): Promise<Uint8Array> {
  switch (ref.kind) {
    case 'data':
      return asBytes(ref.data);
    case 'lazy':
      return asBytes(await ref.load());
    case 'file': {
      const bytes = await readFileRange(ref.path, ref.byteOffset, ref.byteLength);
      reportFileRead(ref);
      return bytes;
    }
    case 'source': {
      const bytes = await ref.source.read(ref.byteOffset, ref.byteLength);
      if (bytes.byteLength !== ref.byteLength) {
        throw new Error(`${ref.source.name}: read ${bytes.byteLength} bytes at ${ref.byteOffset}, expected ${ref.byteLength}`);
      }
      reportFileRead({ path: ref.source.name, byteOffset: ref.byteOffset, byteLength: ref.byteLength });
      return bytes;
    }
  }
}
