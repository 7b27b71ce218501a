// Writing a model to disk (Node): the .onnx file and one external data file beside it, tensors streamed
// into it one at a time. The browser has no files: it takes `serializeModel`'s bytes (model.ts).
import { createHash, type Hash } from 'node:crypto';
import { type FileHandle, mkdir, open, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { GraphError } from './errors.js';
import { foldInitializerTransforms } from './fold.js';
import type { Graph } from './graph.js';
import { encode, externalTensor, inlineTensor, type SavedModel, type SaveOptions } from './model.js';
import { type OnnxTypes, onnx } from './proto.js';
import { reportFileRead } from './read-observer.node.js';
import { tensorBytes } from './tensor-bytes.js';
import { type TensorRef, tensorByteLength } from './tensor-ref.js';

const ALIGN = 64;
/**
 * Tensors of at least 1 MiB start on a 4 KiB page in the data file: ORT (CPU) then memory-maps them instead
 * of reading them into its own buffers (the pages are the kernel's page cache, shared and reclaimable).
 */
const PAGE = 4096;
const PAGE_ALIGN_FROM = 2 ** 20;

/**
 * Writes `<path>` and, for initializers at or above the threshold, an
 * external data file beside it (tensors streamed one at a time, 64-byte
 * aligned). Deterministic: the same graph gives the same bytes.
 */
export async function saveModel(g: Graph, path: string, opts: SaveOptions = {}): Promise<SavedModel> {
  const modelPath = resolve(path);
  const dir = dirname(modelPath);
  await mkdir(dir, { recursive: true });
  const threshold = opts.externalThreshold ?? 1024;
  const dataName = opts.dataFile ?? `${modelPath.slice(dir.length + 1)}.data`;
  const dataPath = resolve(dir, dataName);
  const writePath = opts.writeDataTo !== undefined ? resolve(dir, opts.writeDataTo) : dataPath;
  const snap = g.snapshot();
  const folded = opts.fold ? foldInitializerTransforms(snap, tensorBytes) : undefined;
  const nodes = folded?.nodes ?? snap.nodes;
  const initializers = folded?.initializers ?? snap.initializers;
  const tensors: OnnxTypes.ITensorProto[] = [];
  let offset = 0;
  let referencedBytes = 0;
  let referenced16BitBytes = 0;
  const hash = opts.hashData ? createHash('sha256') : undefined;
  const realOf = new Map<string, string>();
  const locationOf = async (ref: TensorRef): Promise<string | undefined> => {
    if (ref.kind !== 'file' || opts.references === undefined) return undefined;
    let real = realOf.get(ref.path);
    if (real === undefined) {
      real = await realpath(ref.path);
      realOf.set(ref.path, real);
    }
    return opts.references.get(real);
  };
  const data = await open(writePath, 'w');
  try {
    for (const entry of initializers) {
      const ref = entry.ref;
      const length = tensorByteLength(ref);
      if (length < threshold) {
        tensors.push(inlineTensor(entry, await tensorBytes(ref)));
        continue;
      }
      const location = await locationOf(ref);
      if (location !== undefined && ref.kind === 'file') {
        tensors.push(externalTensor(entry, location, ref.byteOffset, ref.byteLength));
        referencedBytes += length;
        if (ref.dtype === 'float16' || ref.dtype === 'bfloat16') referenced16BitBytes += length;
        continue;
      }
      const align = length >= PAGE_ALIGN_FROM ? PAGE : ALIGN;
      const start = Math.ceil(offset / align) * align;
      // The gap reads back as zeros (never written).
      hash?.update(new Uint8Array(start - offset));
      offset = start;
      await writeTensor(ref, data, offset, hash);
      tensors.push(externalTensor(entry, dataName, offset, length));
      offset += length;
    }
  } catch (err) {
    throw new GraphError('SAVE_FAILED', `saving ${modelPath}: ${(err as Error).message}`);
  } finally {
    await data.close();
  }
  if (offset === 0) await rm(writePath, { force: true });
  await writeFile(modelPath, encode(g, tensors, nodes));
  return {
    modelPath,
    dataPath: offset > 0 ? dataPath : undefined,
    copiedBytes: offset,
    ...(hash && offset > 0 ? { dataSha256: hash.digest('hex') } : {}),
    referencedBytes,
    referenced16BitBytes,
    foldedNodes: folded?.folded ?? 0,
  };
}

const CHUNK = 64 * 2 ** 20;

async function writeTensor(ref: TensorRef, out: FileHandle, offset: number, hash: Hash | undefined): Promise<void> {
  if (ref.kind === 'source') {
    // A source range in bounded chunks too: each read is one request of at most CHUNK bytes.
    for (let done = 0; done < ref.byteLength; ) {
      const n = Math.min(CHUNK, ref.byteLength - done);
      const buf = await ref.source.read(ref.byteOffset + done, n);
      if (buf.byteLength !== n)
        throw new Error(`${ref.source.name}: read ${buf.byteLength} bytes at ${ref.byteOffset + done}, expected ${n}`);
      hash?.update(buf);
      await out.write(buf, 0, n, offset + done);
      done += n;
    }
    reportFileRead({ path: ref.source.name, byteOffset: ref.byteOffset, byteLength: ref.byteLength });
    return;
  }
  if (ref.kind !== 'file') {
    const bytes = await tensorBytes(ref);
    // In chunks: one write (and one hash update) takes at most 2 GiB, and a computed tensor can be larger
    // (128 experts' stacked weights for a MoE node).
    for (let done = 0; done < bytes.byteLength; done += CHUNK) {
      const part = bytes.subarray(done, Math.min(done + CHUNK, bytes.byteLength));
      hash?.update(part);
      await out.write(part, 0, part.byteLength, offset + done);
    }
    return;
  }
  // Stream a file range in bounded chunks: a multi-GB tensor never sits in memory whole.
  const fh = await open(ref.path, 'r');
  try {
    const buf = new Uint8Array(Math.min(CHUNK, ref.byteLength));
    let done = 0;
    while (done < ref.byteLength) {
      const n = Math.min(buf.byteLength, ref.byteLength - done);
      const { bytesRead } = await fh.read(buf, 0, n, ref.byteOffset + done);
      if (bytesRead === 0) throw new Error(`${ref.path}: file ends before byte ${ref.byteOffset + ref.byteLength}`);
      hash?.update(buf.subarray(0, bytesRead));
      await out.write(buf, 0, bytesRead, offset + done);
      done += bytesRead;
    }
    reportFileRead(ref);
  } finally {
    await fh.close();
  }
}

/** `byteLength` bytes of the file at `path` from `byteOffset` (a `file` tensor's range, for tensorBytes). */
export async function readFileRange(path: string, byteOffset: number, byteLength: number): Promise<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const buf = new Uint8Array(byteLength);
    let done = 0;
    while (done < buf.byteLength) {
      const { bytesRead } = await fh.read(buf, done, buf.byteLength - done, byteOffset + done);
      if (bytesRead === 0) throw new Error(`${path}: file ends before byte ${byteOffset + byteLength}`);
      done += bytesRead;
    }
    return buf;
  } finally {
    await fh.close();
  }
}

/** Reads a saved model back (for inspection and tests). */
export async function loadModelProto(path: string): Promise<OnnxTypes.ModelProto> {
  return onnx.ModelProto.decode(await readFile(path));
}
