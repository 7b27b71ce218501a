/**
 * Host-side KV cache for decoder loops: per layer a past key and value [B, Hkv, T, hd] (float32, or
 * float16 for a graph whose cache is float16), fed under the graph's past names; its present outputs
 * become the next past. It starts empty (T = 0), so prefill runs the same graph as decode. The caller
 * passes the names (e.g. @vlmkit/moe-decoder's `KV_CACHE_IO`): they belong to the graph that declares
 * them. ORT-node has no IO binding for CUDA, so the cache goes through host memory each step.
 *
 * With `capacity` it is pre-allocated: one [B, Hkv, capacity, hd] buffer per layer and kind, fed whole,
 * and each run's new rows [B, Hkv, S, hd] are written into the next free slots (a graph built for it:
 * moe-decoder's `kvCache: 'append'`), so no step copies or reallocates the cache.
 */
import { RuntimeError } from './errors.js';
import { type HostTensor, hostTensor } from './tensor.js';

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
  /**
   * Pre-allocate this many slots per row (prompt + the tokens to generate) and append each run's new rows
   * into them (see above); a run past it is refused with KV_CACHE_FULL. Without it the cache keeps each
   * run's present outputs (past + new) as the next past.
   */
  capacity?: number;
  /**
   * The element type of the graph's cache inputs and outputs (default 'float32'); 'float16' holds raw IEEE half
   * bits in Uint16Arrays (onnxruntime-node's float16 tensors). A present output of another type is refused.
   */
  dtype?: KvCacheDType;
}

/** The cache's element types: those onnxruntime-node can feed and read (it has no bfloat16 tensors). */
export type KvCacheDType = 'float32' | 'float16';

type Layer = Record<KvKind, HostTensor<KvCacheDType>>;

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
  readonly dtype: KvCacheDType;
  #capacity: number | undefined;
  #batchSize: number;
  #length = 0;
  #layers: Layer[] = [];

  constructor(opts: KvCacheOptions) {
    positiveInt('numLayers', opts.numLayers);
    positiveInt('numKvHeads', opts.numKvHeads);
    positiveInt('headDim', opts.headDim);
    positiveInt('batchSize', opts.batchSize ?? 1);
    if (opts.capacity !== undefined) positiveInt('capacity', opts.capacity);
    this.numLayers = opts.numLayers;
    this.numKvHeads = opts.numKvHeads;
    this.headDim = opts.headDim;
    this.#capacity = opts.capacity;
    this.#batchSize = opts.batchSize ?? 1;
    this.names = { past: opts.names.past, present: opts.names.present };
    this.dtype = opts.dtype ?? 'float32';
    if (this.dtype !== 'float32' && this.dtype !== 'float16') {
      throw new RuntimeError('INVALID_OPTIONS', `KvCache: dtype must be 'float32' or 'float16', got '${String(this.dtype)}'.`);
    }
    if (this.#capacity !== undefined) {
      const slots = () => this.tensor(this.allocate(this.#capacity!), this.slotDims());
      this.#layers = Array.from({ length: this.numLayers }, () => ({ key: slots(), value: slots() }));
    }
    this.reset();
  }

  /** Slots per row when pre-allocated; undefined for the concat layout. */
  get capacity(): number | undefined {
    return this.#capacity;
  }

  /** Cached positions (T). */
  get length(): number {
    return this.#length;
  }

  get batchSize(): number {
    return this.#batchSize;
  }

  /**
   * The past length the graph is fed (the P of its attention_mask [B, P + S]): T in the concat layout;
   * pre-allocated, 0 while empty and `capacity` after (every slot is fed, used or not).
   */
  get pastLength(): number {
    return this.#capacity === undefined || this.#length === 0 ? this.#length : this.#capacity;
  }

  /** Bytes the cache holds now (pre-allocated: all of its slots). */
  get byteLength(): number {
    return this.#layers.reduce((a, l) => a + l.key.data.byteLength + l.value.data.byteLength, 0);
  }

  /** Drop everything: back to T = 0 (keeps the batch size; pre-allocated slots are kept and overwritten). */
  reset(): void {
    if (this.#capacity === undefined)
      this.#layers = Array.from({ length: this.numLayers }, () => ({ key: this.empty(), value: this.empty() }));
    this.#length = 0;
  }

  /** Layer i's past key and value, as fed (pre-allocated: every slot, or empty before the first update). */
  layer(i: number): Readonly<Layer> {
    const layer = this.#layers[i];
    if (layer === undefined) throw new RuntimeError('KV_CACHE_MISMATCH', `KvCache: no layer ${i} (numLayers ${this.numLayers}).`);
    return this.#capacity !== undefined && this.#length === 0 ? { key: this.empty(), value: this.empty() } : layer;
  }

  /** Every layer's past key and value, in layer order (for a decoder's own feed builder). */
  layers(): readonly Readonly<Layer>[] {
    return this.#layers.map((_, i) => this.layer(i));
  }

  /** The past tensors as feeds, under the past names. */
  feeds(): Record<string, HostTensor<KvCacheDType>> {
    const out: Record<string, HostTensor<KvCacheDType>> = {};
    this.layers().forEach((layer, i) => {
      for (const kind of KINDS) out[this.names.past(i, kind)] = layer[kind];
    });
    return out;
  }

  /**
   * Take a run's present outputs. All of them must be there, of the cache's dtype, [B, Hkv, T', hd] with one T' for every
   * layer: the concat layout keeps them as the new past (T' = T + S); pre-allocated, they are the run's new rows
   * (T' = S), copied into slots [T, T + S).
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
        if (t.dtype !== this.dtype) {
          throw new RuntimeError('KV_CACHE_MISMATCH', `KvCache.update: '${name}' is ${t.dtype}; the cache holds ${this.dtype}.`);
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
        layer[kind] = t as HostTensor<KvCacheDType>;
      }
      next.push(layer as Layer);
    }
    if (this.#capacity === undefined) {
      this.#layers = next;
      this.#length = newLength ?? 0;
      return;
    }
    const added = newLength ?? 0;
    if (this.#length + added > this.#capacity) {
      throw new RuntimeError(
        'KV_CACHE_FULL',
        `KvCache.update: ${this.#length} positions are cached and the run adds ${added}, past the capacity of ${this.#capacity} slots; reserve() more slots first, or create the cache with a larger capacity (prompt + tokens to generate).`,
      );
    }
    const [H, hd, cap] = [this.numKvHeads, this.headDim, this.#capacity];
    for (let i = 0; i < this.numLayers; i++) {
      for (const kind of KINDS) {
        const src = next[i]![kind].data as Float32Array;
        const dst = this.#layers[i]![kind].data as Float32Array;
        for (let r = 0; r < this.#batchSize * H; r++) {
          dst.set(src.subarray(r * added * hd, (r + 1) * added * hd), (r * cap + this.#length) * hd);
        }
      }
    }
    this.#length += added;
  }

  /**
   * Pre-allocated: grow to `capacity` slots per row (new buffers, the used slots copied once; a decode loop
   * that does not know its length up front doubles it now and then). Smaller than `length` is refused.
   */
  reserve(capacity: number): void {
    positiveInt('capacity', capacity);
    const old = this.#capacity;
    if (old === undefined) throw new RuntimeError('INVALID_OPTIONS', 'KvCache.reserve: this cache is not pre-allocated (no capacity).');
    if (capacity < this.#length) {
      throw new RuntimeError('INVALID_OPTIONS', `KvCache.reserve: capacity ${capacity} is below the ${this.#length} positions cached.`);
    }
    if (capacity === old) return;
    const [rows, hd, T] = [this.#batchSize * this.numKvHeads, this.headDim, this.#length];
    const move = (t: HostTensor<KvCacheDType>): HostTensor<KvCacheDType> => {
      const out = this.allocate(capacity) as Float32Array;
      const data = t.data as Float32Array;
      for (let r = 0; r < rows; r++) out.set(data.subarray(r * old * hd, (r * old + T) * hd), r * capacity * hd);
      return this.tensor(out, [this.#batchSize, this.numKvHeads, capacity, hd]);
    };
    this.#layers = this.#layers.map((l) => ({ key: move(l.key), value: move(l.value) }));
    this.#capacity = capacity;
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
    const slots = this.#capacity ?? this.#length;
    const row = this.numKvHeads * slots * this.headDim;
    const dims = [batchIndices.length, this.numKvHeads, slots, this.headDim];
    const gather = (t: HostTensor<KvCacheDType>): HostTensor<KvCacheDType> => {
      const out = this.array(batchIndices.length * row) as Float32Array;
      const data = t.data as Float32Array;
      batchIndices.forEach((b, j) => {
        out.set(data.subarray(b * row, (b + 1) * row), j * row);
      });
      return this.tensor(out, dims);
    };
    this.#layers = this.#layers.map((l) => ({ key: gather(l.key), value: gather(l.value) }));
    this.#batchSize = batchIndices.length;
  }

  /** Same as select(); the name beam search uses. */
  reorder(batchIndices: readonly number[]): void {
    this.select(batchIndices);
  }

  /** One layer's buffer of one kind for `capacity` slots; a failed allocation says how much the whole cache needs. */
  private allocate(capacity: number): Float32Array | Uint16Array {
    const n = this.#batchSize * this.numKvHeads * capacity * this.headDim;
    try {
      return this.array(n);
    } catch (e) {
      const mib = (2 * this.numLayers * n * (this.dtype === 'float16' ? 2 : 4)) / 2 ** 20;
      throw new RuntimeError(
        'KV_CACHE_FULL',
        `KvCache: cannot allocate ${capacity} slots per row (${mib.toFixed(0)} MiB for ${this.numLayers} layers x key/value x [${this.#batchSize}, ${this.numKvHeads}, ${capacity}, ${this.headDim}] ${this.dtype}): ${e instanceof Error ? e.message : String(e)}.`,
        { cause: e },
      );
    }
  }

  /** A zeroed buffer of the cache's element type (float16: raw half bits). */
  private array(n: number): Float32Array | Uint16Array {
    return this.dtype === 'float16' ? new Uint16Array(n) : new Float32Array(n);
  }

  private tensor(data: Float32Array | Uint16Array, dims: readonly number[]): HostTensor<KvCacheDType> {
    return this.dtype === 'float16' ? hostTensor('float16', data as Uint16Array, dims) : hostTensor('float32', data as Float32Array, dims);
  }

  private empty(): HostTensor<KvCacheDType> {
    return this.tensor(this.array(0), [this.#batchSize, this.numKvHeads, 0, this.headDim]);
  }

  private slotDims(): number[] {
    return [this.#batchSize, this.numKvHeads, this.#capacity ?? 0, this.headDim];
  }
}
