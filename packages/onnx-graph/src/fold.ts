import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from '@vlmkit/safetensors';
import type { DType, TypedArray } from './dtype.js';
import type { InitializerEntry } from './graph-core.js';
import type { OnnxTypes } from './proto.js';
import { lazyTensor, type TensorRef } from './tensor-ref.js';

/**
 * Folds the Cast (16-bit float -> float32) and Transpose nodes that read an initializer into new
 * initializers, computed once when the model is saved: what ORT's constant folding does at every session
 * creation (a bf16 checkpoint's Linear weight `Cast -> Transpose -> MatMul` becomes one float32 [in, out]
 * initializer read by the MatMul). Numbers are unchanged: bf16/fp16 -> float32 is exact and a transpose
 * moves values. The folded tensors are lazy: each is produced from its source tensor when written, one at
 * a time. Casts to float16 / bfloat16 (a float32 checkpoint computed in 16 bits) round to nearest, ties to
 * even, bit for bit as ORT's Cast does; casts to other types are left to ORT, and so is a node whose output
 * is a graph output.
 * Nodes inside Loop / If bodies are folded the same way (their weights become root initializers).
 */
export interface FoldResult {
  nodes: OnnxTypes.INodeProto[];
  initializers: InitializerEntry[];
  /** Nodes removed. */
  folded: number;
}

interface Recipe {
  base: TensorRef;
  /** The float dtypes cast to, in order (empty: no cast). */
  casts: readonly FloatDType[];
  /** out[j] = base axis perm[j]; undefined: no transpose. */
  perm: readonly number[] | undefined;
}

type FloatDType = 'float32' | 'float16' | 'bfloat16';
/** ONNX TensorProto data types of the casts folded. */
const CAST_TO: ReadonlyMap<number, FloatDType> = new Map([
  [1, 'float32'],
  [10, 'float16'],
  [16, 'bfloat16'],
]);
const CASTABLE: readonly DType[] = ['bfloat16', 'float16', 'float32'];

export function foldInitializerTransforms(
  snap: {
    nodes: readonly OnnxTypes.INodeProto[];
    initializers: readonly InitializerEntry[];
    outputs: readonly { name: string }[];
  },
  read: (ref: TensorRef) => Promise<Uint8Array>,
): FoldResult {
  const recipes = new Map<string, Recipe>();
  for (const e of snap.initializers) recipes.set(e.name, { base: e.ref, casts: [], perm: undefined });
  const made: string[] = [];
  let folded = 0;
  const used = new Set<string>();
  // Loop / If bodies read the root's initializers from the outer scope (names are unique model-wide): a
  // Cast or Transpose of a weight inside a body folds into a root initializer too, so no iteration redoes it.
  const walk = (list: readonly OnnxTypes.INodeProto[], graphOutputs: readonly string[]): OnnxTypes.INodeProto[] => {
    const outputs = new Set(graphOutputs);
    for (const o of graphOutputs) used.add(o);
    const nodes: OnnxTypes.INodeProto[] = [];
    for (const node of list) {
      const src = node.input?.length === 1 ? recipes.get(node.input[0]!) : undefined;
      const out = node.output?.length === 1 ? node.output[0]! : undefined;
      let next: Recipe | undefined;
      if (src && out !== undefined && !outputs.has(out) && (node.domain ?? '') === '') {
        const to = node.opType === 'Cast' ? CAST_TO.get(intAttr(node, 'to') ?? -1) : undefined;
        if (to !== undefined && CASTABLE.includes(src.base.dtype)) {
          next = { ...src, casts: [...src.casts, to] };
        } else if (node.opType === 'Transpose') {
          const rank = src.base.shape.length;
          const p = intsAttr(node, 'perm') ?? [...Array(rank).keys()].reverse();
          if (p.length === rank) next = { ...src, perm: p.map((j) => (src.perm ? src.perm[j]! : j)) };
        }
      }
      if (next === undefined) {
        nodes.push(withBodies(node, walk));
        continue;
      }
      recipes.set(out!, next);
      made.push(out!);
      folded++;
    }
    for (const n of nodes) for (const i of n.input ?? []) used.add(i);
    return nodes;
  };
  const nodes = walk(
    snap.nodes,
    snap.outputs.map((o) => o.name),
  );
  const initializers = snap.initializers.filter((e) => used.has(e.name));
  for (const name of made) {
    if (!used.has(name)) continue;
    const r = recipes.get(name)!;
    initializers.push({ name, ref: foldedTensor(r, read) });
  }
  return { nodes, initializers, folded };
}

/** `node` with each subgraph attribute's nodes passed through `walk` (the node itself when it has none). */
function withBodies(
  node: OnnxTypes.INodeProto,
  walk: (nodes: readonly OnnxTypes.INodeProto[], outputs: readonly string[]) => OnnxTypes.INodeProto[],
): OnnxTypes.INodeProto {
  if (!node.attribute?.some((a) => a.g)) return node;
  return {
    ...node,
    attribute: node.attribute.map((a) =>
      a.g
        ? {
            ...a,
            g: {
              ...a.g,
              node: walk(
                a.g.node ?? [],
                (a.g.output ?? []).map((o) => o.name ?? ''),
              ),
            },
          }
        : a,
    ),
  };
}

function foldedTensor(r: Recipe, read: (ref: TensorRef) => Promise<Uint8Array>): TensorRef {
  const dtype: DType = r.casts.at(-1) ?? r.base.dtype;
  const shape = r.perm ? r.perm.map((p) => r.base.shape[p]!) : [...r.base.shape];
  return lazyTensor(dtype, shape, async () => transform(await read(r.base), r));
}

/** The recipe applied to the base tensor's bytes. */
function transform(bytes: Uint8Array, r: Recipe): TypedArray {
  const { dtype, shape } = r.base;
  const n = shape.reduce((a, b) => a * b, 1);
  const size = n === 0 ? 0 : bytes.byteLength / n;
  // Elements as unsigned words of their size (a copy only when the bytes are misaligned for that view).
  const aligned = bytes.byteOffset % Math.max(1, size) === 0 ? bytes : bytes.slice();
  const words = viewOf(aligned, size, n);
  const target = r.casts.at(-1) ?? dtype;
  if (target === dtype && r.casts.every((c) => c === dtype)) return permute(words, shape, r.perm, size, undefined);
  if (target === 'float32' && r.casts.every((c) => c === 'float32')) {
    const conv = dtype === 'bfloat16' ? bf16Bits : f16Bits;
    return new Float32Array(permute(words, shape, r.perm, 4, conv).buffer);
  }
  // A rounding cast: through float32 (exact from any of the three), each cast in turn, then moved.
  let x = dtype === 'float32' ? new Float32Array(words.buffer, words.byteOffset, n) : widen(dtype, words as Uint16Array);
  let bits: Uint16Array | undefined;
  for (const c of r.casts) {
    bits = c === 'float16' ? f32ToF16(x) : c === 'bfloat16' ? f32ToBf16(x) : undefined;
    if (bits !== undefined && c !== target) x = widen(c, bits);
  }
  if (target === 'float32')
    return new Float32Array(permute(new Uint32Array(x.buffer, x.byteOffset, n), shape, r.perm, 4, undefined).buffer);
  return permute(bits!, shape, r.perm, 2, undefined);
}

/** 16-bit float bits as float32 (exact). */
function widen(dtype: DType, bits: Uint16Array): Float32Array {
  return dtype === 'bfloat16' ? bf16ToF32(bits) : f16ToF32(bits);
}

function viewOf(b: Uint8Array, size: number, n: number): Uint8Array | Uint16Array | Uint32Array | BigUint64Array {
  if (size === 2) return new Uint16Array(b.buffer, b.byteOffset, n);
  if (size === 4) return new Uint32Array(b.buffer, b.byteOffset, n);
  if (size === 8) return new BigUint64Array(b.buffer, b.byteOffset, n);
  return b;
}

type Words = Uint8Array | Uint16Array | Uint32Array | BigUint64Array;

/** bf16 bits -> float32 bits. */
function bf16Bits(h: number): number {
  return (h << 16) >>> 0;
}

/** IEEE half bits -> float32 bits (subnormals normalised, inf/nan kept). */
function f16Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
  if (mant === 0) return sign >>> 0;
  let e = 113;
  while ((mant & 0x400) === 0) {
    mant <<= 1;
    e--;
  }
  return (sign | (e << 23) | ((mant & 0x3ff) << 13)) >>> 0;
}

/**
 * Elements of `src` (shape `shape`) in the order of `perm`, converted by `conv` (16-bit words -> 32-bit
 * words) when given. 2-D transposes go in 64x64 blocks (cache-friendly); other ranks by strides.
 */
function permute(
  src: Words,
  shape: readonly number[],
  perm: readonly number[] | undefined,
  outSize: number,
  conv: ((w: number) => number) | undefined,
): TypedArray {
  const n = src.length;
  const out =
    outSize === 8 ? new BigUint64Array(n) : outSize === 4 ? new Uint32Array(n) : outSize === 2 ? new Uint16Array(n) : new Uint8Array(n);
  const s = src as Uint32Array;
  const o = out as Uint32Array;
  const identity = perm === undefined || perm.every((p, i) => p === i);
  if (identity) {
    if (conv) for (let i = 0; i < n; i++) o[i] = conv(s[i]!);
    else out.set(src as never);
    return asTyped(out);
  }
  if (shape.length === 2) {
    const [R, C] = shape as [number, number];
    const B = 64;
    for (let r0 = 0; r0 < R; r0 += B) {
      const r1 = Math.min(R, r0 + B);
      for (let c0 = 0; c0 < C; c0 += B) {
        const c1 = Math.min(C, c0 + B);
        for (let r = r0; r < r1; r++) {
          const row = r * C;
          if (conv) for (let c = c0; c < c1; c++) o[c * R + r] = conv(s[row + c]!);
          else for (let c = c0; c < c1; c++) o[c * R + r] = s[row + c]!;
        }
      }
    }
    return asTyped(out);
  }
  const rank = shape.length;
  const strides = new Array<number>(rank).fill(1);
  for (let i = rank - 2; i >= 0; i--) strides[i] = strides[i + 1]! * shape[i + 1]!;
  const outShape = perm!.map((p) => shape[p]!);
  const srcStride = perm!.map((p) => strides[p]!);
  const idx = new Array<number>(rank).fill(0);
  let from = 0;
  for (let i = 0; i < n; i++) {
    o[i] = conv ? conv(s[from]!) : s[from]!;
    for (let d = rank - 1; d >= 0; d--) {
      idx[d]!++;
      from += srcStride[d]!;
      if (idx[d]! < outShape[d]!) break;
      from -= srcStride[d]! * outShape[d]!;
      idx[d] = 0;
    }
  }
  return asTyped(out);
}

/** Unsigned words as a TypedArray the serialiser takes (only the bytes matter). */
function asTyped(w: Words): TypedArray {
  if (w instanceof BigUint64Array) return new BigInt64Array(w.buffer, w.byteOffset, w.length);
  return w as TypedArray;
}

function intAttr(node: OnnxTypes.INodeProto, name: string): number | undefined {
  const a = node.attribute?.find((x) => x.name === name);
  return a?.i === undefined || a.i === null ? undefined : Number(a.i);
}

function intsAttr(node: OnnxTypes.INodeProto, name: string): number[] | undefined {
  const a = node.attribute?.find((x) => x.name === name);
  return a?.ints ? a.ints.map(Number) : undefined;
}
