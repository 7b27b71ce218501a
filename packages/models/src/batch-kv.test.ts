// The engine's KV cache buffers (./batch-kv.ts) alone: rows keep their slots across resizes, a step's new slot
// lands at each row's own length, a leaving row's place is taken by another, the fed views cover the running rows,
// and a failed allocation leaves an empty cache with a typed error.
import { KV_CACHE_IO } from '@vlmkit/moe-decoder';
import { type HostTensor, hostTensor } from '@vlmkit/runtime';
import { describe, expect, it } from 'vitest';
import { KvSlots } from './batch-kv.js';

const dims = { numHiddenLayers: 2, numKeyValueHeads: 2, headDim: 3 };
const [L, H, hd] = [2, 2, 3];

/** present.* of a run over `rows` rows of `T` positions: value = 1000 layer-kind + 100 row + 10 head + position. */
function present(rows: number, T: number): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (let i = 0; i < 2 * L; i++) {
    const data = new Float32Array(rows * H * T * hd);
    for (let r = 0; r < rows; r++)
      for (let h = 0; h < H; h++)
        for (let t = 0; t < T; t++) data.fill(1000 * i + 100 * r + 10 * h + t, ((r * H + h) * T + t) * hd, ((r * H + h) * T + t + 1) * hd);
    out[KV_CACHE_IO.present(i >> 1, i & 1 ? 'value' : 'key')] = hostTensor('float32', data, [rows, H, T, hd]);
  }
  return out;
}

/** Slot t of row r, head h, in layer-kind i, as fed. */
function slot(kv: KvSlots, batch: number, i: number, r: number, h: number, t: number): number {
  const layer = kv.past(batch)[i >> 1]!;
  const data = (i & 1 ? layer.value : layer.key).data as Float32Array;
  return data[((r * H + h) * kv.capacity + t) * hd]!;
}

describe('KvSlots', () => {
  it('keeps each row at its own length through writes, resizes and a leaving row', () => {
    const kv = new KvSlots(dims, 'float32', KV_CACHE_IO);
    expect(kv.bytesPerSlot).toBe(2 * L * H * hd * 4);
    kv.resize(2, 4, []);
    // Row 0 holds a 3-position prompt, row 1 a 2-position one (each prefill is its own run of one row).
    kv.write(present(1, 3), 0, 0, 0, 3);
    kv.write(present(1, 2), 0, 1, 0, 2);
    // A decode step over both rows: each new slot at the row's own length.
    kv.write(present(2, 1), 0, 0, 3, 1);
    kv.write(present(2, 1), 1, 1, 2, 1);
    expect([slot(kv, 2, 3, 0, 1, 3), slot(kv, 2, 3, 1, 1, 2)]).toEqual([3010, 3110]);
    kv.resize(3, 8, [4, 3]);
    expect(kv.byteLength).toBe(3 * 8 * kv.bytesPerSlot);
    expect(kv.past(2)[0]!.key.dims).toEqual([2, H, 8, hd]);
    expect([0, 1, 2].map((t) => slot(kv, 2, 2, 1, 0, t))).toEqual([2000, 2001, 2100]);
    expect(slot(kv, 2, 1, 0, 1, 3)).toBe(1010);
    // Row 0 leaves: row 1 takes its place.
    kv.move(1, 0, 3);
    expect([0, 1, 2].map((t) => slot(kv, 1, 0, 0, 1, t))).toEqual([10, 11, 110]);
    kv.resize(0, 0, []);
    expect(kv.byteLength).toBe(0);
  });

  it('refuses a write outside its slots and a present output of the wrong shape', () => {
    const kv = new KvSlots(dims, 'float32', KV_CACHE_IO);
    kv.resize(1, 2, []);
    expect(() => kv.write(present(1, 3), 0, 0, 0, 3)).toThrow(/outside 1 x 2/);
    const wrong = present(1, 1);
    const name = KV_CACHE_IO.present(0, 'key');
    wrong[name] = hostTensor('float32', new Float32Array(4), [1, 1, 1, 4]);
    expect(() => kv.write(wrong, 0, 0, 0, 1)).toThrow(/present\.0\.key/);
  });

  it('a failed allocation leaves the cache empty with INSUFFICIENT_MEMORY', () => {
    const kv = new KvSlots(dims, 'float32', KV_CACHE_IO);
    kv.resize(1, 4, []);
    // 6 x 2^32 elements per buffer: more than a typed array can hold.
    expect(() => kv.resize(1, 2 ** 32, [0])).toThrow(expect.objectContaining({ code: 'INSUFFICIENT_MEMORY' }));
    expect([kv.rows, kv.capacity, kv.byteLength]).toEqual([0, 0, 0]);
  });
});
