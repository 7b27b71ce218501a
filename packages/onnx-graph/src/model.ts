import { SERIALIZE_INLINE_BELOW } from '#platform';
import { onnxDataType } from './dtype.js';
import { GraphError } from './errors.js';
import { foldInitializerTransforms } from './fold.js';
import type { Graph } from './graph.js';
import { type InitializerEntry, MS_DOMAIN } from './graph-core.js';
import { type OnnxTypes, onnx } from './proto.js';
import { tensorBytes } from './tensor-bytes.js';
import { tensorByteLength } from './tensor-ref.js';
import { valueInfo } from './value-info.js';

/** An external-data buffer handed to onnxruntime with the model bytes. */
export interface ExternalBuffer {
  path: string;
  data: Uint8Array;
}

/** A model in memory, as `createSession` (@vlmkit/runtime) takes it. */
export interface SerializedModel {
  bytes: Uint8Array;
  externalData: ExternalBuffer[];
}

export interface SerializeOptions {
  /**
   * Initializers of at least this many bytes become external data (default: in Node, inline everything while
   * the weights stay under 1.5 GB, else 1 MiB; in the browser 1 MiB, whose runtime holds external weights once
   * and inline ones twice).
   */
  externalThreshold?: number;
  /**
   * Fold the Cast (16-bit float -> float32) and Transpose nodes that read an initializer into float32 /
   * transposed initializers, as `saveModel`'s `fold` does (default false): the session then holds the
   * weights it computes with once, instead of ORT folding them again at creation beside the stored copy.
   */
  fold?: boolean;
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

const PROTOBUF_LIMIT = 2 ** 31;

/**
 * Serialises the graph in memory: the model bytes plus one external buffer per large initializer. Each
 * tensor is read (a lazy one run, a file or source range read) once, when its place in the output comes,
 * and copied straight into the model's one buffer: the model costs its own size plus one tensor, never a
 * second copy of the weights. The bytes are protobufjs' encoding of the same model, byte for byte.
 */
export async function serializeModel(g: Graph, opts: SerializeOptions = {}): Promise<SerializedModel> {
  return serializeWith(g, opts, SERIALIZE_INLINE_BELOW);
}

/** `serializeModel` with the platform's inline limit given (tests run the browser's in Node). */
export async function serializeWith(g: Graph, opts: SerializeOptions, inlineBelow: number): Promise<SerializedModel> {
  const snap = g.snapshot();
  const folded = opts.fold ? foldInitializerTransforms(snap, tensorBytes) : undefined;
  const initializers = folded?.initializers ?? snap.initializers;
  const total = initializers.reduce((a, e) => a + tensorByteLength(e.ref), 0);
  const threshold = opts.externalThreshold ?? (total < inlineBelow ? Number.POSITIVE_INFINITY : 2 ** 20);
  const externalData: ExternalBuffer[] = [];
  // Every initializer's encoding but the inline ones' raw bytes, which are read into place below.
  const pieces: { head: Uint8Array; inline?: InitializerEntry; length: number }[] = [];
  for (const [i, entry] of initializers.entries()) {
    const length = tensorByteLength(entry.ref);
    if (length >= threshold) {
      const path = `initializer_${i}.bin`;
      externalData.push({ path, data: await exactBytes(entry, length) });
      pieces.push({ head: encodeTensor(externalTensor(entry, path, 0, length)), length: 0 });
    } else {
      // TensorProto fields are written in field order; raw_data (9) comes after dims (1), data_type (2) and
      // name (8), the only others an inline tensor has.
      pieces.push({
        head: encodeTensor({ name: entry.name, dataType: onnxDataType(entry.ref.dtype), dims: [...entry.ref.shape] }),
        inline: entry,
        length,
      });
    }
  }
  // GraphProto and ModelProto fields are written in field order too, so the graph is the nodes and name (1, 2),
  // the initializers (5), then inputs and outputs (11, 12); the model its fields 1-3, the graph (7), the opsets (8).
  const { head: modelHead, graph: graphFields, tail: modelTail } = modelFields(g, folded?.nodes);
  const graphHead = onnx.GraphProto.encode({ node: graphFields.node, name: graphFields.name }).finish();
  const graphTail = onnx.GraphProto.encode({ input: graphFields.input, output: graphFields.output }).finish();
  const tensorLength = (p: (typeof pieces)[number]) => p.head.byteLength + (p.inline ? 1 + varintLength(p.length) + p.length : 0);
  let graphLength = graphHead.byteLength + graphTail.byteLength;
  for (const p of pieces) graphLength += 1 + varintLength(tensorLength(p)) + tensorLength(p);
  const size = modelHead.byteLength + 1 + varintLength(graphLength) + graphLength + modelTail.byteLength;
  if (size >= PROTOBUF_LIMIT) {
    throw new GraphError(
      'MODEL_TOO_LARGE',
      `graph '${snap.name}': ${size} bytes with ${total - externalData.reduce((a, e) => a + e.data.byteLength, 0)} bytes of weights inline is over protobuf's 2 GiB limit; pass a smaller externalThreshold (or leave it unset) so large initializers go to external data`,
    );
  }
  const out = new Uint8Array(size);
  let at = 0;
  const put = (bytes: Uint8Array) => {
    out.set(bytes, at);
    at += bytes.byteLength;
  };
  const tag = (field: number, length: number) => {
    out[at++] = (field << 3) | 2;
    at = writeVarint(out, at, length);
  };
  put(modelHead);
  tag(7, graphLength);
  put(graphHead);
  for (const p of pieces) {
    tag(5, tensorLength(p));
    put(p.head);
    if (p.inline) {
      tag(9, p.length);
      put(await exactBytes(p.inline, p.length));
    }
  }
  put(graphTail);
  put(modelTail);
  return { bytes: out, externalData };
}

/** Serialises with every initializer inline (small models, tests). */
export async function modelBytes(g: Graph): Promise<Uint8Array> {
  const s = await serializeModel(g, { externalThreshold: Number.POSITIVE_INFINITY });
  return s.bytes;
}

async function exactBytes(entry: InitializerEntry, length: number): Promise<Uint8Array> {
  const bytes = await tensorBytes(entry.ref);
  if (bytes.byteLength !== length) {
    throw new GraphError(
      'PARAMETER_SHAPE',
      `initializer '${entry.name}': ${bytes.byteLength} bytes read, its shape and dtype need ${length}`,
    );
  }
  return bytes;
}

function encodeTensor(t: OnnxTypes.ITensorProto): Uint8Array {
  return onnx.TensorProto.encode(onnx.TensorProto.create(t)).finish();
}

function varintLength(n: number): number {
  let length = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    length++;
  }
  return length;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}

/** The model's fields before the graph, the graph's own fields, and those after it. */
function modelFields(
  g: Graph,
  nodes: readonly OnnxTypes.INodeProto[] | undefined,
): { head: Uint8Array; graph: OnnxTypes.IGraphProto; tail: Uint8Array } {
  const snap = g.snapshot();
  return {
    head: onnx.ModelProto.encode(onnx.ModelProto.create(PRODUCER)).finish(),
    graph: {
      name: snap.name,
      node: [...(nodes ?? snap.nodes)],
      input: snap.inputs.map(valueInfo),
      output: snap.outputs.map(valueInfo),
    },
    tail: onnx.ModelProto.encode(onnx.ModelProto.create({ opsetImport: opsets(g) })).finish(),
  };
}

const PRODUCER = { irVersion: 10, producerName: 'vlmkit', producerVersion: '0' };

function opsets(g: Graph): OnnxTypes.IOperatorSetIdProto[] {
  const snap = g.snapshot();
  const opsetImport: OnnxTypes.IOperatorSetIdProto[] = [{ domain: '', version: snap.opset }];
  if (snap.domains.includes(MS_DOMAIN)) opsetImport.push({ domain: MS_DOMAIN, version: 1 });
  return opsetImport;
}

/** The whole model with these initializers, encoded by protobufjs in one piece (saveModel). */
export function encode(g: Graph, initializer: OnnxTypes.ITensorProto[], nodes?: readonly OnnxTypes.INodeProto[]): Uint8Array {
  const snap = g.snapshot();
  const model: OnnxTypes.IModelProto = {
    ...PRODUCER,
    opsetImport: opsets(g),
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

export function inlineTensor(entry: InitializerEntry, bytes: Uint8Array): OnnxTypes.ITensorProto {
  return { name: entry.name, dataType: onnxDataType(entry.ref.dtype), dims: [...entry.ref.shape], rawData: bytes };
}

export function externalTensor(entry: InitializerEntry, location: string, offset: number, length: number): OnnxTypes.ITensorProto {
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
