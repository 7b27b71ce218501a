// The KV cache of a batching engine: per layer and kind one host buffer [rows, Hkv, capacity, hd] whose first B
// rows are the running requests, fed to the decoder as they lie (an 'append' graph's slot buffers, moe-decoder
// `KvCacheMode`). Each row fills its own slots from 0; the attention mask says which ones a row attends, so rows
// at different lengths share one run. A step writes one new slot per row; a request that leaves hands its row to
// the last one (one row copied), so the first B rows stay the running ones and no step copies the cache.
import type { KvCacheDType, KvTensors } from '@vlmkit/moe-decoder';
import { type HostTensor, hostTensor, type KvCacheNames } from '@vlmkit/runtime';
import type { DecoderDims } from './decoder-model.js';
import { ModelError } from './errors.js';

type KvArray = Float32Array | Uint16Array;

export class KvSlots {
  #rows = 0;
  #capacity = 0;
  /** Layer i's key at 2i, its value at 2i + 1. */
  #buffers: KvArray[] = [];

  constructor(
    private readonly dims: Pick<DecoderDims, 'numHiddenLayers' | 'numKeyValueHeads' | 'headDim'>,
    readonly dtype: KvCacheDType,
    private readonly names: KvCacheNames,
  ) {}

  /** Rows allocated (at least the running ones). */
  get rows(): number {
    return this.#rows;
  }

  /** Slots per row. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Bytes one slot of one row takes over every layer, key and value. */
  get bytesPerSlot(): number {
    const d = this.dims;
    return 2 * d.numHiddenLayers * d.numKeyValueHeads * d.headDim * (this.dtype === 'float16' ? 2 : 4);
  }

  /** Bytes the buffers hold now. */
  get byteLength(): number {
    return this.#rows * this.#capacity * this.bytesPerSlot;
  }

  /**
   * New buffers of `rows` x `capacity` slots, row r keeping its first `lengths[r]` slots (0 x 0 frees them). One
   * layer and kind at a time, each old buffer dropped once copied: the peak is the new cache and one old buffer,
   * not both caches. Should an allocation fail, the cache is left empty (every row's slots lost) and the error
   * thrown.
   */
  resize(rows: number, capacity: number, lengths: readonly number[]): void {
    const [H, hd] = [this.dims.numKeyValueHeads, this.dims.headDim];
    lengths.forEach((n, r) => {
      if (n > capacity) throw new ModelError('BAD_INPUT', `KvSlots: row ${r} holds ${n} slots, more than the ${capacity} asked for`);
    });
    const old = this.#capacity;
    const buffers = this.#buffers;
    this.#buffers = [];
    [this.#rows, this.#capacity] = [0, 0];
    const next: KvArray[] = [];
    for (let i = 0; i < 2 * this.dims.numHiddenLayers; i++) {
      const to = this.array(rows * H * capacity * hd);
      const from = buffers[i];
      if (from !== undefined) {
        lengths.forEach((n, r) => {
          for (let h = 0; h < H; h++) {
            const src = (r * H + h) * old * hd;
            to.set(from.subarray(src, src + n * hd), (r * H + h) * capacity * hd);
          }
        });
      }
      buffers[i] = to;
      next.push(to);
    }
    this.#buffers = next;
    [this.#rows, this.#capacity] = [rows, capacity];
  }

  /**
   * Writes the last `count` positions of row `from` of a run's `present.*` outputs ([B, Hkv, T, hd]) into row `row`
   * at slots [at, at + count).
   */
  write(outputs: Record<string, HostTensor>, from: number, row: number, at: number, count: number): void {
    const [H, hd, C] = [this.dims.numKeyValueHeads, this.dims.headDim, this.#capacity];
    if (row >= this.#rows || at + count > C)
      throw new ModelError('BAD_INPUT', `KvSlots: slots [${at}, ${at + count}) of row ${row} are outside ${this.#rows} x ${C}`);
    for (let i = 0; i < this.#buffers.length; i++) {
      const name = this.names.present(i >> 1, i & 1 ? 'value' : 'key');
      const t = outputs[name];
      if (t === undefined || t.dtype !== this.dtype || t.dims.length !== 4 || t.dims[1] !== H || t.dims[3] !== hd)
        throw new ModelError(
          'BAD_INPUT',
          `the decoder's output '${name}' is ${t === undefined ? 'missing' : `${t.dtype} [${t.dims.join(', ')}]`}; expected ${this.dtype} [B, ${H}, T, ${hd}]`,
        );
      const T = t.dims[2]!;
      const src = t.data as KvArray;
      const dst = this.#buffers[i]!;
      for (let h = 0; h < H; h++) {
        const s = ((from * H + h) * T + T - count) * hd;
        dst.set(src.subarray(s, s + count * hd), ((row * H + h) * C + at) * hd);
      }
    }
  }

  /** Copies row `from`'s first `length` slots into row `to` (a leaving row's place taken by the last one). */
  move(from: number, to: number, length: number): void {
    const [H, hd, C] = [this.dims.numKeyValueHeads, this.dims.headDim, this.#capacity];
    for (const b of this.#buffers) {
      for (let h = 0; h < H; h++) {
        const s = (from * H + h) * C * hd;
        b.copyWithin((to * H + h) * C * hd, s, s + length * hd);
      }
    }
  }

  /** Every layer's past for the first `batch` rows, [batch, Hkv, capacity, hd]: views of the buffers, nothing copied. */
  past(batch: number): KvTensors<HostTensor>[] {
    const n = batch * this.dims.numKeyValueHeads * this.#capacity * this.dims.headDim;
    const dims = [batch, this.dims.numKeyValueHeads, this.#capacity, this.dims.headDim];
    const view = (b: KvArray): HostTensor =>
      b instanceof Uint16Array ? hostTensor('float16', b.subarray(0, n), dims) : hostTensor('float32', b.subarray(0, n), dims);
    return Array.from({ length: this.dims.numHiddenLayers }, (_, i) => ({
      key: view(this.#buffers[2 * i]!),
      value: view(this.#buffers[2 * i + 1]!),
    }));
  }

  private array(n: number): KvArray {
    try {
      return this.dtype === 'float16' ? new Uint16Array(n) : new Float32Array(n);
    } catch (e) {
      const mib = (n * 2 * this.dims.numHiddenLayers * (this.dtype === 'float16' ? 2 : 4)) / 2 ** 20;
      throw new ModelError(
        'INSUFFICIENT_MEMORY',
        `the engine's KV cache could not allocate ${mib.toFixed(0)} MiB (${e instanceof Error ? e.message : String(e)}): lower kvMemoryBytes or maxBatch`,
      );
    }
  }
}
