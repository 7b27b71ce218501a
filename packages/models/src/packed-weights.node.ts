// A graph-cache entry's packed copy (the profile's `packedWeights: 'cache'`): the model as ORT runs it, written
// by ORT with its prepacked weights in one data file, so that later sessions map the packed weights from the
// cache instead of packing them at every creation into anonymous memory (onnxruntime-node runtime's
// `savePacked`). It is an addition to an entry, never a condition of it: a missing or damaged copy is written
// again by the next load; the entry itself stays valid. Files, beside the entry's:
//
//   <root>/<base>.packed.onnx   the model ORT wrote; its weights in the file below (a name relative to it)
//   <root>/<base>.packed.data   every weight of the session (checkpoint tensors too) and ORT's packed copies
//
// and their sizes and digests in the entry (`packed`), written last. Both are written in a private folder of
// the writing process and renamed into place, so a reader never sees a partial file. ORT packs for the CPU it
// runs on (MLAS picks its kernels, and their layouts, by instruction set) and its own version, so a copy records
// both (`packedFor`) and is used only where they match: a cache shared by other machines writes its own again.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { onnx } from '@vlmkit/onnx-graph';
import { cacheFileStamp, type FileRecord, readRegular, type Stamp, sameStamp, sha256File, stampOf } from './cache-files.node.js';

/** The entry's record of its packed copy, or of why it has none it can use (not written again then). */
export type PackedRecord = PackedCopy | PackedRefusal;

export interface PackedCopy {
  /** `packedFor()` of the process that wrote it. */
  for: string;
  onnx: FileRecord;
  data: FileRecord & { stamp: Stamp };
}

export interface PackedRefusal {
  for: string;
  refused: string;
}

/** ORT maps a tensor of the data file, and a packed copy with it, where it lies: only page-aligned ones are used. */
const ALIGN = 4096;

let machine: string | undefined;
/** The ORT version and the CPU (model, instruction sets, architecture) a packed copy is made for. */
export function packedFor(): string {
  if (machine === undefined) {
    const ort = createRequire(import.meta.resolve('@vlmkit/runtime'))('onnxruntime-node/package.json') as { version: string };
    let cpu = '';
    try {
      const info = readFileSync('/proc/cpuinfo', 'utf8');
      cpu = ['model name', 'flags', 'Features', 'CPU part']
        .map((k) => new RegExp(`^${k}\\s*:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '')
        .join('|');
    } catch {
      cpu = 'unknown';
    }
    machine = `onnxruntime-node ${ort.version} ${process.arch} ${createHash('sha256').update(cpu).digest('hex').slice(0, 16)}`;
  }
  return machine;
}

/** Where ORT writes a packed copy: the model path and its data file's name (beside it). */
export interface PackedTarget {
  modelPath: string;
  dataFile: string;
}

/** The prefix of a writing process's private folder (`.vlmkit-packing-<pid>-<random>`), for the cleaner. */
export const PACKING_DIR = /^\.vlmkit-packing-(\d+)-[A-Za-z0-9]+$/;

const files = (base: string) => ({ onnx: `${base}.packed.onnx`, data: `${base}.packed.data` });

/** The suffixes of a packed copy's files, for removing an entry. */
export const PACKED_SUFFIXES = ['.packed.onnx', '.packed.data'] as const;

export function isPackedRecord(r: unknown): r is PackedRecord {
  const file = (f: unknown) =>
    typeof f === 'object' && f !== null && typeof (f as FileRecord).size === 'number' && typeof (f as FileRecord).sha256 === 'string';
  const p = r as Partial<PackedCopy & PackedRefusal> | undefined;
  if (typeof p !== 'object' || p === null || typeof p.for !== 'string') return false;
  if (typeof p.refused === 'string') return true;
  return file(p.onnx) && file(p.data) && typeof p.data?.stamp === 'object' && p.data.stamp !== null;
}

/**
 * Why ORT's written model cannot be used as a packed copy, or undefined: every tensor and packed copy in its data
 * file must start on a page (ORT aligns only tensors over 1 MiB, and uses a packed copy in place: one at an
 * unaligned offset computes garbage), and it must have a data file at all (else nothing is mapped).
 */
export function unusablePacked(model: Uint8Array): string | undefined {
  let external = 0;
  for (const t of onnx.ModelProto.decode(model).graph?.initializer ?? []) {
    for (const { key, value } of t.externalData ?? []) {
      // `offset`, and each packed copy's `prepacked_<i>`: '<kernel key>|<offset>;<length>;...'.
      const offset = key === 'offset' ? value : key?.startsWith('prepacked_') ? /\|(\d+);/.exec(value ?? '')?.[1] : undefined;
      if (offset === undefined) continue;
      if (Number(offset) % ALIGN !== 0) return `${t.name}'s ${key} ${offset} is not page-aligned`;
      external++;
    }
  }
  return external === 0 ? 'no tensor of it is over 1 MiB (nothing to map)' : undefined;
}

/**
 * The packed model's path when its files are what was written (the .onnx hashed every time, the data when its
 * stamp changed or with `full`); else why not. `onVerified`: the data's new stamp, to record after a rehash.
 */
export async function verifyPacked(
  root: string,
  base: string,
  record: PackedCopy,
  full: boolean,
  onVerified: (stamp: Stamp) => Promise<void>,
): Promise<string | { damaged: string }> {
  if (record.for !== packedFor()) return { damaged: `it was packed for ${record.for}, this process is ${packedFor()}` };
  const f = files(base);
  const onnx = join(root, f.onnx);
  const found = await cacheFileStamp(onnx);
  if (typeof found === 'string') return { damaged: found };
  if (found.size !== record.onnx.size) return { damaged: `${f.onnx} has ${found.size} bytes, ${record.onnx.size} were written` };
  const digest = await sha256File(onnx);
  if (digest !== record.onnx.sha256) return { damaged: `${f.onnx} does not have the sha256 it was written with` };
  const dataPath = join(root, f.data);
  const stamp = await cacheFileStamp(dataPath);
  if (typeof stamp === 'string') return { damaged: stamp };
  if (full || !sameStamp(record.data.stamp, stamp)) {
    if (stamp.size !== record.data.size) return { damaged: `${f.data} has ${stamp.size} bytes, ${record.data.size} were written` };
    if ((await sha256File(dataPath)) !== record.data.sha256) return { damaged: `${f.data} does not have the sha256 it was written with` };
    await onVerified(stamp);
  }
  return onnx;
}

/**
 * Has `write` make the packed copy of `base` (ORT writes it while creating a session; what `write` returns is
 * returned) in a private folder of `root`, then moves it into place and returns its record with the result.
 */
export async function writePacked<T>(
  root: string,
  base: string,
  write: (target: PackedTarget) => Promise<T>,
): Promise<{ result: T; record: PackedRecord }> {
  const f = files(base);
  const dir = await mkdtemp(join(root, `.vlmkit-packing-${process.pid}-`));
  try {
    const result = await write({ modelPath: join(dir, f.onnx), dataFile: f.data });
    const onnxBytes = await readRegular(join(dir, f.onnx));
    const refused = unusablePacked(onnxBytes);
    if (refused !== undefined) return { result, record: { for: packedFor(), refused } };
    const model = { size: onnxBytes.byteLength, sha256: createHash('sha256').update(onnxBytes).digest('hex') };
    const data = { size: (await stampOf(join(dir, f.data))).size, sha256: await sha256File(join(dir, f.data)) };
    // The data first: a packed .onnx in place always finds its data.
    await rename(join(dir, f.data), join(root, f.data));
    await rename(join(dir, f.onnx), join(root, f.onnx));
    return { result, record: { for: packedFor(), onnx: model, data: { ...data, stamp: await stampOf(join(root, f.data)) } } };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
