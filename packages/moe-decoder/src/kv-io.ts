// The KV cache inputs and outputs both decoder models declare: the HF / optimum ONNX decoder naming.
// Written once here; the models package hands these to @vlmkit/runtime's KvCache.
import type { ComputeDType, Graph } from '@vlmkit/onnx-graph';
import { MoeDecoderError } from './errors.js';
import type { KvPair } from './types.js';

export type KvKind = 'key' | 'value';

/** Input `past_key_values.{i}.key` / `.value`: layer i's cache before the step, [B, Hkv, P, headDim]. */
export type PastName = `past_key_values.${number}.${KvKind}`;
/** Output `present.{i}.key` / `.value`: the cache after the step (past + the new tokens), [B, Hkv, P+S, headDim]. */
export type PresentName = `present.${number}.${KvKind}`;

/** One layer's cache as tensors of the caller's type (ORT, host, ...). */
export interface KvTensors<T> {
  key: T;
  value: T;
}

export const KV_CACHE_IO = {
  past: (layer: number, kind: KvKind): PastName => `past_key_values.${layer}.${kind}`,
  present: (layer: number, kind: KvKind): PresentName => `present.${layer}.${kind}`,
} as const;

/** The dtype the KV cache is fed and returned in (`past_key_values.*`, `present.*`). */
export type KvCacheDType = 'float32' | 'float16';

/**
 * The KV cache's I/O dtype for a graph computing in `compute`: the compute dtype itself, so the cache takes
 * half the memory in float16, except bfloat16, whose cache is fed and returned as float32 holding bfloat16
 * values (exact both ways): onnxruntime-node 1.29 has no bfloat16 tensor type (its Tensor takes float16 as
 * Uint16Array, and no 'bfloat16'), so a bfloat16 graph input or output cannot be fed or read from Node.
 */
export function kvCacheDType(compute: ComputeDType): KvCacheDType {
  return compute === 'float16' ? 'float16' : 'float32';
}

/**
 * The `past_key_values.*` graph inputs of every layer, [batch, Hkv, past, headDim] in the cache dtype for the
 * graph's compute dtype (`kvCacheDType`), cast to the compute dtype where they differ.
 */
export function pastInputs(g: Graph, layers: number, kvHeads: number, headDim: number): KvPair[] {
  const shape = ['batch', kvHeads, 'past', headDim] as const;
  const dt = kvCacheDType(g.computeDtype);
  return Array.from({ length: layers }, (_, i) => ({
    key: g.cast(g.input(KV_CACHE_IO.past(i, 'key'), dt, [...shape]), g.computeDtype),
    value: g.cast(g.input(KV_CACHE_IO.past(i, 'value'), dt, [...shape]), g.computeDtype),
  }));
}

/** Layer i's `present.*` outputs, [batch, Hkv, length, headDim] in the cache dtype (`kvCacheDType`). */
export function presentOutputsOf(g: Graph, present: readonly KvPair[], kvHeads: number, headDim: number, length: string): void {
  const dt = kvCacheDType(g.computeDtype);
  present.forEach((kv, i) => {
    g.output(g.cast(kv.key, dt), KV_CACHE_IO.present(i, 'key'), ['batch', kvHeads, length, headDim]);
    g.output(g.cast(kv.value, dt), KV_CACHE_IO.present(i, 'value'), ['batch', kvHeads, length, headDim]);
  });
}

/** The `past_key_values.*` feeds of every layer, in layer order. */
export function pastFeeds<T>(past: readonly KvTensors<T>[]): Record<PastName, T> {
  const out: Record<PastName, T> = {};
  past.forEach((kv, i) => {
    out[KV_CACHE_IO.past(i, 'key')] = kv.key;
    out[KV_CACHE_IO.past(i, 'value')] = kv.value;
  });
  return out;
}

/** Every layer's `present.*` outputs of a run, in layer order; a missing one is an error naming it. */
export function presentOutputs<T>(outputs: Readonly<Record<string, T>>, numLayers: number): KvTensors<T>[] {
  return Array.from({ length: numLayers }, (_, i) => {
    const get = (kind: KvKind): T => {
      const name = KV_CACHE_IO.present(i, kind);
      const t = outputs[name];
      if (t === undefined)
        throw new MoeDecoderError('BAD_INPUT', `decoder output '${name}' is missing; got ${Object.keys(outputs).join(', ')}.`);
      return t;
    };
    return { key: get('key'), value: get('value') };
  });
}
