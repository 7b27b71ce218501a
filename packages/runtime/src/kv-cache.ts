/**
 * Host-side KV cache for decoder loops. Each layer keeps a past key and value
 * [B, Hkv, T, hd] float32 tensor; a step feeds them under the decoder graph's
 * past names and takes its present outputs (past with the new tokens appended
 * along axis 2) as the next past. The cache starts empty (T = 0), so the first
 * (prefill) step runs the same graph as decode steps. The names belong to the
 * graph that declares them (e.g. @vlmkit/moe-decoder's `KV_CACHE_IO`,
 * `past_key_values.{i}.key` / `present.{i}.key`, the HF / optimum ONNX
 * naming): the caller passes them in, this package does not guess them.
 * ORT-node has no IO binding for CUDA, so the cache round-trips through host
 * memory each step.
 */
import { RuntimeError } from './errors.js';
import { float32, type HostTensor } from './tensor.js';

export type KvKind = 'key' | 'value';

/** The decoder graph's cache input and output names per layer and kind. */
export interface KvCacheNames {
  /** Input name of layer `layer`'s past `kind`. */
  past(layer: number, kind: KvKind): string;
  /** Output name of layer `layer`'s present `kind`. */
  present(layer: number, kind: KvKind): string;
}

export interface KvCacheOptions {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  /** Default 1. */
  batchSize?: number;
  /** The graph's cache input/output names (a decoder's I/O constants fit as they are). */
  names: KvCacheNames;
}

type Layer = Record<KvKind, HostTensor<'float32'>>;

const KINDS: readonly KvKind[] = ['key', 'value'];

function positiveInt(name: string, v: number, allowZero = false): void {
  if (!Number.isInteger(v) || v < (allowZero ? 0 : 1)) {
    throw new RuntimeError('INVALID_OPTIONS', `KvCache: ${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got ${v}.`);
  }
}

export class KvCache {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly names: KvCacheNames;
  #batchSize: number;
  #length = 0;
  #layers: Layer[] = [];

  constructor(opts: KvCacheOptions) {
    positiveInt('numLayers', opts.numLayers);
    positiveInt('numKvHeads', opts.numKvHeads);
    positiveInt('headDim', opts.headDim);
    positiveInt('batchSize', opts.batchSize ?? 1);
    this.numLayers = opts.numLayers;
    this.numKvHeads = opts.numKvHeads;
    this.headDim = opts.headDim;
    this.#batchSize = opts.batchSize ?? 1;
    this.names = { past: opts.names.past, present: opts.names.present };
    this.reset();
  }

  /** Cached positions (T). */
  get length(): number {
    return this.#length;
  }

  get batchSize(): number {
    return this.#batchSize;
  }

  /** Drop everything: back to T = 0 (keeps the batch size). */
  reset(): void {
    const empty = (): HostTensor<'float32'> => float32(new Float32Array(0), [this.#batchSize, this.numKvHeads, 0, this.headDim]);
    this.#layers = Array.from({ length: this.numLayers }, () => ({ key: empty(), value: empty() }));
    this.#length = 0;
  }

  /** Layer i's past key and value. */
  layer(i: number): Readonly<Layer> {
    const layer = this.#layers[i];
    if (layer === undefined) throw new RuntimeError('KV_CACHE_MISMATCH', `KvCache: no layer ${i} (numLayers ${this.numLayers}).`);
    return layer;
  }

  /** Every layer's past key and value, in layer order (for a decoder's own feed builder). */
  layers(): readonly Readonly<Layer>[] {
    return this.#layers;
  }

  /** The past tensors as feeds, under the past names. */
  feeds(): Record<string, HostTensor<'float32'>> {
    const out: Record<string, HostTensor<'float32'>> = {};
    this.#layers.forEach((layer, i) => {
      for (const kind of KINDS) out[this.names.past(i, kind)] = layer[kind];
    });
    return out;
  }

  /**
   * Take the present tensors from a run's outputs as the new past. All of
   * them must be there, float32, [B, Hkv, T', hd] with one T' for every layer.
   */
  update(outputs: Record<string, HostTensor>): void {
    const next: Layer[] = [];
    let newLength: number | undefined;
    for (let i = 0; i < this.numLayers; i++) {
      const layer: Partial<Layer> = {};
      for (const kind of KINDS) {
        const name = this.names.present(i, kind);
        const t = outputs[name];
        if (t === undefined) {
          throw new RuntimeError(
            'KV_CACHE_MISMATCH',
            `KvCache.update: output '${name}' is missing; got ${Object.keys(outputs).join(', ') || 'no outputs'}.`,
          );
        }
        if (t.dtype !== 'float32') {
          throw new RuntimeError('KV_CACHE_MISMATCH', `KvCache.update: '${name}' is ${t.dtype}; the cache holds float32.`);
        }
        const [b, h, len, d] = t.dims;
        if (t.dims.length !== 4 || b !== this.#batchSize || h !== this.numKvHeads || d !== this.headDim || len === undefined) {
          throw new RuntimeError(
            'KV_CACHE_MISMATCH',
            `KvCache.update: '${name}' has dims [${t.dims.join(', ')}], expected [${this.#batchSize}, ${this.numKvHeads}, T, ${this.headDim}].`,
          );
        }
        if (newLength !== undefined && len !== newLength) {
          throw new RuntimeError(
            'KV_CACHE_MISMATCH',
            `KvCache.update: '${name}' holds ${len} positions but earlier present tensors hold ${newLength}.`,
          );
        }
        newLength = len;
        layer[kind] = t;
      }
      next.push(layer as Layer);
    }
    this.#layers = next;
    this.#length = newLength ?? 0;
  }

  /**
   * Keep batch rows `batchIndices` in that order (beam search reorder, or
   * dropping finished sequences); indices may repeat. Copies the data.
   */
  select(batchIndices: readonly number[]): void {
    for (const b of batchIndices) {
      if (!Number.isInteger(b) || b < 0 || b >= this.#batchSize) {
        throw new RuntimeError('KV_CACHE_MISMATCH', `KvCache.select: batch index ${b} is out of range [0, ${this.#batchSize}).`);
      }
    }
    const row = this.numKvHeads * this.#length * this.headDim;
    const dims = [batchIndices.length, this.numKvHeads, this.#length, this.headDim];
    const gather = (t: HostTensor<'float32'>): HostTensor<'float32'> => {
      const out = new Float32Array(batchIndices.length * row);
      batchIndices.forEach((b, j) => {
        out.set(t.data.subarray(b * row, (b + 1) * row), j * row);
      });
      return float32(out, dims);
    };
    this.#layers = this.#layers.map((l) => ({ key: gather(l.key), value: gather(l.value) }));
    this.#batchSize = batchIndices.length;
  }

  /** Same as select(); the name beam search uses. */
  reorder(batchIndices: readonly number[]): void {
    this.select(batchIndices);
  }
}
