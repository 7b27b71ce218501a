// The KV cache inputs and outputs both decoder models declare: the HF / optimum ONNX decoder naming.
// Written once here; the models package hands these to @vlmkit/runtime's KvCache.
import type { Graph } from '@vlmkit/onnx-graph';
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

/** The `past_key_values.*` graph inputs of every layer: float32 [batch, Hkv, past, headDim]. */
export function pastInputs(g: Graph, layers: number, kvHeads: number, headDim: number): KvPair[] {
  const shape = ['batch', kvHeads, 'past', headDim] as const;
  return Array.from({ length: layers }, (_, i) => ({
    key: g.input(KV_CACHE_IO.past(i, 'key'), 'float32', [...shape]),
    value: g.input(KV_CACHE_IO.past(i, 'value'), 'float32', [...shape]),
  }));
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
