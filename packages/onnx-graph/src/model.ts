import { createHash, type Hash } from 'node:crypto';
import { mkdir, open, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { TypedArray } from './dtype.js';
import { onnxDataType } from './dtype.js';
import { GraphError } from './errors.js';
import { foldInitializerTransforms } from './fold.js';
import type { Graph } from './graph.js';
import { type InitializerEntry, MS_DOMAIN } from './graph-core.js';
import { type OnnxTypes, onnx } from './proto.js';
import { reportFileRead } from './read-observer.js';
import { type TensorRef, tensorByteLength } from './tensor-ref.js';
import { valueInfo } from './value-info.js';

/** An external-data buffer handed to onnxruntime with the model bytes. */
export interface ExternalBuffer {
  path: string;
  data: Uint8Array;
}

export interface SerializedModel {
  bytes: Uint8Array;
  externalData: ExternalBuffer[];
}

export interface SerializeOptions {
  /**
   * Initializers of at least this many bytes become external data (default:
   * inline everything while the model stays under 1.5 GB, else 1 MiB).
   */
  externalThreshold?: number;
}

export interface SaveOptions {
  /** Initializers of at least this many bytes go to external data (default 1 KiB). */
  externalThreshold?: number;
  /** External data file name, next to the model (default `<model file>.data`). */
  dataFile?: string;
  /**
   * Write the external data bytes here instead (a temporary name the caller
   * renames to `dataFile` afterwards, so a reader never sees a half-written
   * file); the model still refers to `dataFile`.
   */
  writeDataTo?: string;
  /**
   * Files whose `file` tensors are referenced in place instead of copied, by real path: such a tensor becomes
   * external data at the location given here, with its own byte offset and length in that file. The caller
   * makes the location resolve when the model is loaded (`relocateExternalData`). Default: none, every weight
   * is copied and the model stands alone (never linked: a link would make the model's folder an alias of the
   * user's file).
   */
  references?: ReadonlyMap<string, string>;
  /** Hash the external data file while it is written (`SavedModel.dataSha256`): no second read of it. */
  hashData?: boolean;
  /**
   * Fold the Cast (bf16/fp16 -> float32) and Transpose nodes that read an initializer into float32 /
   * transposed initializers written here, once (default false): ORT then loads weights it can use as they
   * are (memory-mapped from the data file, see below) instead of folding them again at every session
   * creation, and never holds a bf16 copy beside the float32 one. Numbers are unchanged.
   */
  fold?: boolean;
}

export interface SavedModel {
  modelPath: string;
  dataPath: string | undefined;
  /** Bytes written to the external data file. */
  copiedBytes: number;
  /** Bytes referenced in place in `references` files. */
  referencedBytes: number;
  /** Of `referencedBytes`, the float16 / bfloat16 tensors' (a float32 session casts them: it holds twice these). */
  referenced16BitBytes: number;
  /** sha256 of the external data file as written (`hashData`), when there is one. */
  dataSha256?: string;
  /** Nodes folded into initializers (`fold`). */
  foldedNodes: number;
}

const INLINE_LIMIT = 1.5 * 2 ** 30;
const ALIGN = 64;
/**
 * Tensors of at least 1 MiB start on a 4 KiB page in the data file: ORT (CPU) then memory-maps them instead
 * of reading them into its own buffers (the pages are the kernel's page cache, shared and reclaimable).
 */
const PAGE = 4096;
const PAGE_ALIGN_FROM = 2 ** 20;

/** Serialises the graph in memory: the model bytes plus external buffers for large initializers. */
export async function serializeModel(g: Graph, opts: SerializeOptions = {}): Promise<SerializedModel> {
  const snap = g.snapshot();
  const total = snap.initializers.reduce((a, e) => a + tensorByteLength(e.ref), 0);
  const threshold = opts.externalThreshold ?? (total < INLINE_LIMIT ? Number.POSITIVE_INFINITY : 2 ** 20);
  const externalData: ExternalBuffer[] = [];
  const tensors: OnnxTypes.ITensorProto[] = [];
  for (const [i, entry] of snap.initializers.entries()) {
    const bytes = await tensorBytes(entry.ref);
    if (bytes.byteLength >= threshold) {
      const path = `initializer_${i}.bin`;
      externalData.push({ path, data: bytes });
      tensors.push(externalTensor(entry, path, 0, bytes.byteLength));
    } else {
      tensors.push(inlineTensor(entry, bytes));
    }
  }
  return { bytes: encode(g, tensors), externalData };
}

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

/** Serialises with every initializer inline (small models, tests). */
export async function modelBytes(g: Graph): Promise<Uint8Array> {
  const s = await serializeModel(g, { externalThreshold: Number.POSITIVE_INFINITY });
  return s.bytes;
}

function encode(g: Graph, initializer: OnnxTypes.ITensorProto[], nodes?: readonly OnnxTypes.INodeProto[]): Uint8Array {
  const snap = g.snapshot();
  const opsetImport: OnnxTypes.IOperatorSetIdProto[] = [{ domain: '', version: snap.opset }];
  if (snap.domains.includes(MS_DOMAIN)) opsetImport.push({ domain: MS_DOMAIN, version: 1 });
  const model: OnnxTypes.IModelProto = {
    irVersion: 10,
    producerName: 'vlmkit',
    producerVersion: '0',
    opsetImport,
    graph: {
      name: snap.name,
      node: [...(nodes ?? snap.nodes)],
      input: snap.inputs.map(valueInfo),
      output: snap.outputs.map(valueInfo),
      initializer,
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

function inlineTensor(entry: InitializerEntry, bytes: Uint8Array): OnnxTypes.ITensorProto {
  return { name: entry.name, dataType: onnxDataType(entry.ref.dtype), dims: [...entry.ref.shape], rawData: bytes };
}

function externalTensor(entry: InitializerEntry, location: string, offset: number, length: number): OnnxTypes.ITensorProto {
  return {
    name: entry.name,
    dataType: onnxDataType(entry.ref.dtype),
    dims: [...entry.ref.shape],
    dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
    externalData: [
      { key: 'location', value: location },
      { key: 'offset', value: String(offset) },
      { key: 'length', value: String(length) },
    ],
  };
}

function asBytes(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** The tensor's bytes in memory (reads a `file` tensor's range, runs a `lazy` one). */
export async function tensorBytes(ref: TensorRef): Promise<Uint8Array> {
  switch (ref.kind) {
    case 'data':
      return asBytes(ref.data);
    case 'lazy':
      return asBytes(await ref.load());
    case 'file': {
      const fh = await open(ref.path, 'r');
      try {
        const buf = new Uint8Array(ref.byteLength);
        let done = 0;
        while (done < buf.byteLength) {
          const { bytesRead } = await fh.read(buf, done, buf.byteLength - done, ref.byteOffset + done);
          if (bytesRead === 0) throw new Error(`${ref.path}: file ends before byte ${ref.byteOffset + ref.byteLength}`);
          done += bytesRead;
        }
        reportFileRead(ref);
        return buf;
      } finally {
        await fh.close();
      }
    }
  }
}

const CHUNK = 64 * 2 ** 20;

async function writeTensor(
  ref: TensorRef,
  out: import('node:fs/promises').FileHandle,
  offset: number,
  hash: Hash | undefined,
): Promise<void> {
  if (ref.kind !== 'file') {
    const bytes = await tensorBytes(ref);
    hash?.update(bytes);
    await out.write(bytes, 0, bytes.byteLength, offset);
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

/**
 * The model with each external-data location rewritten by `locate` (undefined: left as it is), for a model
 * whose weights lie in several folders: ORT resolves every location against one folder (the model's, or
 * `SessionOptions.externalDataFolder` for a model given as bytes), so the caller names each file relative to
 * one folder above all of them. Only the graph is decoded and encoded again; no weight is read.
 */
export function relocateExternalData(model: Uint8Array, locate: (location: string) => string | undefined): Uint8Array {
  const proto = onnx.ModelProto.decode(model);
  for (const t of proto.graph?.initializer ?? []) {
    const where = t.externalData?.find((e) => e.key === 'location');
    const to = where?.value ? locate(where.value) : undefined;
    if (where && to !== undefined) where.value = to;
  }
  return onnx.ModelProto.encode(proto).finish();
}

/** Reads a saved model back (for inspection and tests). */
export async function loadModelProto(path: string): Promise<OnnxTypes.ModelProto> {
  return onnx.ModelProto.decode(await readFile(path));
}
