// A graph-cache entry (`<base>.json`): what `GraphCache` writes last for a build, and the shape check that makes
// a file edited or written by something else a missing entry rather than a crash.
import type { ComputeDType } from '@vlmkit/onnx-graph';
import type { FileRecord, Stamp } from './cache-files.node.js';
import { FORMAT } from './cache-key.node.js';
import { isPackedRecord, type PackedRecord } from './packed-weights.node.js';

export interface Entry {
  format: number;
  name: string;
  key: string;
  /** The checkpoint directory it was built from (realpath). */
  checkpoint: string;
  /** Every file the graph or its build reads (realpath), with its stamp: part of the key. */
  inputs: Record<string, Stamp>;
  /** The checkpoint files (realpath) the .onnx's external data lies in, by the logical name the build gave each. */
  references: Record<string, string>;
  /** The folder the .onnx's locations are relative to: the deepest one above the cache and `references`. */
  folder: string;
  /** The cache folder (realpath) it was built in: its data file's location was written from there. */
  root: string;
  onnx: FileRecord;
  data?: FileRecord & { stamp: Stamp };
  /** The float type the written graph computes in (onnx-graph's `ComputeDType`). */
  computeDtype: ComputeDType;
  /** The written graph has block-quantized weights (MatMulNBits): its session prepacks them. */
  quantized: boolean;
  /** Bytes of checkpoint tensors the written graph uses as ORT holds them (16-bit ones twice in a float32 graph). */
  referenced: number;
  /** Its packed copy, once a load has written one (./packed-weights.node.ts). */
  packed?: PackedRecord;
  createdAt: number;
}

/**
 * `json` when it has an entry's shape (the fields `get`, `verify` and `prune` read), else undefined: a file
 * edited or written by something else is a missing entry, never a crash.
 */
export function entryShape(json: unknown): Entry | undefined {
  const e = json as Partial<Entry> | undefined;
  const record = (r: unknown) =>
    typeof r === 'object' && r !== null && typeof (r as FileRecord).size === 'number' && typeof (r as FileRecord).sha256 === 'string';
  if (typeof e !== 'object' || e === null || typeof e.format !== 'number') return undefined;
  // Another format is reported as such (and removed) whatever else it holds.
  if (e.format !== FORMAT) return e as Entry;
  const stamp = (t: unknown) =>
    typeof t === 'object' &&
    t !== null &&
    ['size', 'mtimeMs', 'ctimeMs', 'ino', 'dev'].every((k) => typeof (t as Record<string, unknown>)[k] === 'number');
  const ok =
    typeof e.checkpoint === 'string' &&
    typeof e.createdAt === 'number' &&
    typeof e.inputs === 'object' &&
    e.inputs !== null &&
    Object.values(e.inputs).every(stamp) &&
    typeof e.references === 'object' &&
    e.references !== null &&
    Object.values(e.references).every((f) => typeof f === 'string') &&
    typeof e.folder === 'string' &&
    typeof e.root === 'string' &&
    typeof e.computeDtype === 'string' &&
    typeof e.quantized === 'boolean' &&
    typeof e.referenced === 'number' &&
    record(e.onnx) &&
    (e.data === undefined || (record(e.data) && typeof e.data.stamp === 'object' && e.data.stamp !== null)) &&
    (e.packed === undefined || isPackedRecord(e.packed));
  return ok ? (e as Entry) : undefined;
}

/** Whether process `pid` runs (ours, or one we may not signal). */
export function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
