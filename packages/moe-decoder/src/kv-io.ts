// The KV cache tensors both decoder models declare (the HF / optimum ONNX decoder naming) and the outputs
// every decoder step has, as contract entries: each name is written once, here, and typed from its
// template (`past_key_values.${number}.key`). The models package hands the names to runtime's KvCache.
import {
  COMPUTE_DTYPE_IO,
  type ComputeDType,
  type ContractEntry,
  computeIoDType,
  contract,
  dtypeVar,
  type Graph,
} from '@vlmkit/onnx-graph';
import { MoeDecoderError } from './errors.js';
import type { KvPair } from './types.js';

export type KvKind = 'key' | 'value';
const KV_KINDS = ['key', 'value'] as const satisfies readonly KvKind[];

/** The KV cache's I/O dtype: float32 as built, `kvCacheDType(computeDtype)` once converted (`floatConvertPass`). */
export const KV_CACHE_DTYPE = dtypeVar('kv_cache', ['float32', 'float16']);

/**
 * The contract entry of the cache inputs: `past_key_values.{i}.key` / `.value`, layer i's cache before the
 * step, [B, Hkv, P, headDim]; a decoder contract lists it under the key `past_key_values`.
 */
export const PAST_KEY_VALUES = [
  KV_CACHE_DTYPE,
  ['batch', 'kv_heads', 'past', 'head_dim'],
  { each: 'layer', name: 'past_key_values.{i}.{part}', parts: KV_KINDS },
] as const satisfies ContractEntry;

/**
 * The outputs every decoder step graph has: `logits` float32 [B, S, V] ([B, n, V] with `logits_to_keep`)
 * and `present.{i}.key` / `.value`, the cache after the step (past + the new tokens, [B, Hkv, P+S, headDim];
 * 'append': the new rows).
 */
export const DECODER_OUTPUTS = contract({
  logits: ['float32', ['batch', 'kept', 'vocab']],
  present: [KV_CACHE_DTYPE, ['batch', 'kv_heads', 'present', 'head_dim'], { each: 'layer', name: 'present.{i}.{part}', parts: KV_KINDS }],
});

const PAST = contract({ past_key_values: PAST_KEY_VALUES });

/** The cache's input and output names per layer and kind (runtime's `KvCacheNames`). */
export const KV_CACHE_IO = { past: PAST.names.past_key_values, present: DECODER_OUTPUTS.names.present } as const;

/**
 * The names a host decode loop needs of either decoder step graph: the KV cache's (`KvCacheNames`), `logits`
 * and the `logits_to_keep` input both contracts have.
 */
export const DECODER_STEP_IO = { ...KV_CACHE_IO, logits: DECODER_OUTPUTS.names.logits, logitsToKeep: 'logits_to_keep' } as const;

/** Input `past_key_values.{i}.key` / `.value`. */
export type PastName = ReturnType<typeof KV_CACHE_IO.past>;
/** Output `present.{i}.key` / `.value`. */
export type PresentName = ReturnType<typeof KV_CACHE_IO.present>;

/** One layer's cache as tensors of the caller's type (ORT, host, ...). */
export interface KvTensors<T> {
  key: T;
  value: T;
}

/** The dtype the KV cache is fed and returned in (`past_key_values.*`, `present.*`). */
export type KvCacheDType = 'float32' | 'float16';

/**
 * The KV cache's I/O dtype for a graph computing in `compute`: the compute dtype itself, so the cache takes
 * half the memory in float16, except bfloat16, whose cache is fed and returned as float32 holding bfloat16
 * values (exact both ways): onnxruntime-node 1.29 has no bfloat16 tensor type (its Tensor takes float16 as
 * Uint16Array, and no 'bfloat16'), so a bfloat16 graph input or output cannot be fed or read from Node. The
 * cache is marked `COMPUTE_DTYPE_IO` (`markPast`, `presentOutputsOf`): `floatConvertPass` types it so.
 */
export function kvCacheDType(compute: ComputeDType): KvCacheDType {
  return computeIoDType(compute);
}

/** The declared `past_key_values.*` inputs, marked as held in `kvCacheDType` once the graph is converted. */
export function markPast(g: Graph, past: readonly Readonly<KvPair>[]): KvPair[] {
  return past.map((kv) => ({ key: g.mark(kv.key, COMPUTE_DTYPE_IO), value: g.mark(kv.value, COMPUTE_DTYPE_IO) }));
}

/** Layer i's `present.*` outputs, [batch, Hkv, length, headDim], in `kvCacheDType` once the graph is converted. */
export function presentOutputsOf(g: Graph, present: readonly KvPair[], kvHeads: number, headDim: number, length: string): void {
  present.forEach((kv, i) => {
    const shape = ['batch', kvHeads, length, headDim];
    g.mark(g.output(kv.key, KV_CACHE_IO.present(i, 'key'), shape), COMPUTE_DTYPE_IO);
    g.mark(g.output(kv.value, KV_CACHE_IO.present(i, 'value'), shape), COMPUTE_DTYPE_IO);
  });
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
