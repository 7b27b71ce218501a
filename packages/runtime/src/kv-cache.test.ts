import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeError } from './errors.js';
import { KvCache } from './kv-cache.js';
import { createSession, type VlmSession } from './session.js';
import { float32, type HostTensor } from './tensor.js';
import { kvConcatModel } from './test-utils/onnx-models.js';

/** The names kvConcatModel declares (HF / optimum decoder naming). */
const NAMES = { past: (i: number, k: string) => `past_key_values.${i}.${k}`, present: (i: number, k: string) => `present.${i}.${k}` };
const L = 2;
const H = 2;
const D = 4;

let s: VlmSession;
beforeAll(async () => {
  s = await createSession(kvConcatModel(L, H, D), { device: 'cpu', name: 'kv-step' });
});
afterAll(async () => s.release());

/** new_key / new_value for batch B, S tokens starting at position p: value = 1000*b + 100*h + 10*t + d (+ 0.5 for values). */
function step(B: number, S: number, p: number): { new_key: HostTensor; new_value: HostTensor } {
  const k = new Float32Array(B * H * S * D);
  const v = new Float32Array(B * H * S * D);
  let i = 0;
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < S; t++)
        for (let d = 0; d < D; d++, i++) {
          k[i] = 1000 * b + 100 * h + 10 * (p + t) + d;
          v[i] = k[i]! + 0.5;
        }
  return { new_key: float32(k, [B, H, S, D]), new_value: float32(v, [B, H, S, D]) };
}

/** What layer i's cache must hold after T positions for batch rows `rows`. */
function expectedCache(layer: number, kind: 'key' | 'value', rows: number[], T: number): number[] {
  const out: number[] = [];
  for (const b of rows)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let d = 0; d < D; d++) out.push((1000 * b + 100 * h + 10 * t + d + (kind === 'value' ? 0.5 : 0)) * (layer + 1));
  return out;
}

describe('KvCache', () => {
  it('starts empty with T = 0 feeds under the past names', () => {
    const kv = new KvCache({ numLayers: L, numKvHeads: H, headDim: D, names: NAMES });
    expect(kv.length).toBe(0);
    const feeds = kv.feeds();
    expect(Object.keys(feeds)).toEqual([
      'past_key_values.0.key',
      'past_key_values.0.value',
      'past_key_values.1.key',
      'past_key_values.1.value',
    ]);
    expect(feeds['past_key_values.1.value']).toEqual({ dtype: 'float32', dims: [1, H, 0, D], data: new Float32Array(0) });
  });

  it('runs prefill then decode steps through a Concat(past, new) graph', async () => {
    const kv = new KvCache({ numLayers: L, numKvHeads: H, headDim: D, batchSize: 2, names: NAMES });
    // prefill 3 tokens, then 2 decode steps of 1 token
    let p = 0;
    for (const S of [3, 1, 1]) {
      const out = await s.run({ ...step(2, S, p), ...kv.feeds() });
      kv.update(out);
      p += S;
      expect(kv.length).toBe(p);
    }
    for (let i = 0; i < L; i++) {
      for (const kind of ['key', 'value'] as const) {
        const t = kv.layer(i)[kind];
        expect(t.dims).toEqual([2, H, 5, D]);
        expect(Array.from(t.data)).toEqual(expectedCache(i, kind, [0, 1], 5));
      }
    }

    // beam-style reorder: row 1 twice, then row 0
    kv.reorder([1, 1, 0]);
    expect(kv.batchSize).toBe(3);
    expect(Array.from(kv.layer(1).value.data)).toEqual(expectedCache(1, 'value', [1, 1, 0], 5));
    // and the reordered cache feeds the next step
    const next = step(3, 1, 5);
    const out = await s.run({ ...next, ...kv.feeds() });
    kv.update(out);
    expect(kv.length).toBe(6);
    expect(kv.layer(0).key.dims).toEqual([3, H, 6, D]);

    kv.select([2]);
    expect(kv.batchSize).toBe(1);
    expect(Array.from(kv.layer(0).key.data).slice(0, 5 * D)).toEqual(expectedCache(0, 'key', [0], 5).slice(0, 5 * D));

    kv.reset();
    expect(kv.length).toBe(0);
    expect(kv.layer(0).key.dims).toEqual([1, H, 0, D]);
  });

  it('refuses outputs that do not fit', () => {
    const kv = new KvCache({ numLayers: 1, numKvHeads: H, headDim: D, names: NAMES });
    const good = float32(new Float32Array(H * 2 * D), [1, H, 2, D]);
    expect(() => kv.update({ 'present.0.key': good })).toThrow(/output 'present.0.value' is missing; got present.0.key/);
    expect(() => kv.update({ 'present.0.key': good, 'present.0.value': float32(new Float32Array(H * 2 * 3), [1, H, 2, 3]) })).toThrow(
      `'present.0.value' has dims [1, 2, 2, 3], expected [1, ${H}, T, ${D}]`,
    );
    expect(() => kv.update({ 'present.0.key': good, 'present.0.value': float32(new Float32Array(H * 3 * D), [1, H, 3, D]) })).toThrow(
      /holds 3 positions but earlier present tensors hold 2/,
    );
    try {
      kv.select([1]);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RuntimeError);
      expect((e as RuntimeError).code).toBe('KV_CACHE_MISMATCH');
    }
    expect(kv.length).toBe(0); // failed updates leave the cache as it was
  });

  it("takes the graph's names", () => {
    const kv = new KvCache({
      numLayers: 1,
      numKvHeads: 1,
      headDim: 2,
      names: { past: (i, k) => `past.${i}.${k}`, present: (i, k) => `cache.${i}.${k}` },
    });
    expect(Object.keys(kv.feeds())).toEqual(['past.0.key', 'past.0.value']);
    expect(kv.layers().map((l) => l.key.dims)).toEqual([[1, 1, 0, 2]]);
    const t = float32([1, 2], [1, 1, 1, 2]);
    kv.update({ 'cache.0.key': t, 'cache.0.value': t });
    expect(kv.length).toBe(1);
    expect(kv.layers()[0]!.value).toBe(t);
  });

  it("pre-allocated (capacity): appends each run's new rows into its slots, equal to the concat cache, and feeds every slot", async () => {
    const cap = 7;
    const concat = new KvCache({ numLayers: L, numKvHeads: H, headDim: D, batchSize: 2, names: NAMES });
    const slots = new KvCache({ numLayers: L, numKvHeads: H, headDim: D, batchSize: 2, names: NAMES, capacity: cap });
    expect(slots.byteLength).toBe(2 * L * 2 * H * cap * D * 4);
    expect(slots.layer(0).key.dims).toEqual([2, H, 0, D]); // the prefill sees no past
    expect(slots.pastLength).toBe(0);
    let p = 0;
    for (const S of [3, 1, 1]) {
      const x = step(2, S, p);
      const out = await s.run({ ...x, ...concat.feeds() });
      concat.update(out);
      // An 'append' graph returns the new rows only: here, what the concat graph appended (scaled per layer).
      const news: Record<string, HostTensor> = {};
      for (let i = 0; i < L; i++)
        for (const kind of ['key', 'value'] as const) {
          const all = out[`present.${i}.${kind}`]!;
          const rows = new Float32Array(2 * H * S * D);
          for (let r = 0; r < 2 * H; r++)
            rows.set((all.data as Float32Array).subarray((r * (p + S) + p) * D, (r * (p + S) + p + S) * D), r * S * D);
          news[`present.${i}.${kind}`] = float32(rows, [2, H, S, D]);
        }
      slots.update(news);
      p += S;
      expect(slots.length).toBe(p);
      expect(slots.pastLength).toBe(cap);
    }
    for (let i = 0; i < L; i++)
      for (const kind of ['key', 'value'] as const) {
        const t = slots.layer(i)[kind];
        expect(t.dims).toEqual([2, H, cap, D]);
        const want = concat.layer(i)[kind].data;
        for (let r = 0; r < 2 * H; r++) {
          expect(Array.from(t.data.subarray(r * cap * D, (r * cap + p) * D))).toEqual(
            Array.from(want.subarray(r * p * D, (r + 1) * p * D)),
          );
          expect(t.data.subarray((r * cap + p) * D, (r + 1) * cap * D).every((v) => v === 0)).toBe(true); // free slots
        }
      }
    // The same buffers every step: nothing is reallocated.
    const before = slots.layer(1).value.data;
    slots.update(
      Object.fromEntries(
        Array.from({ length: L }, (_, i) =>
          (['key', 'value'] as const).map((k) => [`present.${i}.${k}`, float32(new Float32Array(2 * H * D), [2, H, 1, D])]),
        ).flat(),
      ),
    );
    expect(slots.layer(1).value.data).toBe(before);

    // Full: 6 of 7 slots used, a run of 2 is refused and changes nothing.
    const two = Object.fromEntries(
      Array.from({ length: L }, (_, i) =>
        (['key', 'value'] as const).map((k) => [`present.${i}.${k}`, float32(new Float32Array(2 * H * 2 * D), [2, H, 2, D])]),
      ).flat(),
    );
    try {
      slots.update(two);
      expect.unreachable();
    } catch (e) {
      expect((e as RuntimeError).code).toBe('KV_CACHE_FULL');
      expect((e as Error).message).toMatch(/6 positions are cached and the run adds 2, past the capacity of 7 slots/);
    }
    expect(slots.length).toBe(6);

    // reserve grows the slots, the cached rows copied once; the run of 2 then fits.
    const cached = Array.from(slots.layer(0).key.data.subarray(0, 6 * D));
    slots.reserve(9);
    expect(slots.capacity).toBe(9);
    expect(slots.layer(0).key.dims).toEqual([2, H, 9, D]);
    expect(Array.from(slots.layer(0).key.data.subarray(0, 6 * D))).toEqual(cached);
    expect(Array.from(slots.layer(0).key.data.subarray(6 * D, 9 * D)).every((v) => v === 0)).toBe(true);
    slots.update(two);
    expect(slots.length).toBe(8);
    expect(() => slots.reserve(7)).toThrow(/capacity 7 is below the 8 positions cached/);

    // select keeps whole rows of slots.
    slots.select([1]);
    expect(slots.layer(0).key.dims).toEqual([1, H, 9, D]);
    expect(Array.from(slots.layer(0).key.data.subarray(0, 5 * D))).toEqual(expectedCache(0, 'key', [1], 5).slice(0, 5 * D));
    slots.reset();
    expect(slots.layer(0).key.dims).toEqual([1, H, 0, D]);
  });

  it('validates its options', () => {
    expect(() => new KvCache({ numLayers: 1, numKvHeads: 1, headDim: 1, names: NAMES }).reserve(4)).toThrow(/not pre-allocated/);
    try {
      new KvCache({ numLayers: 2, numKvHeads: 8, headDim: 128, names: NAMES, capacity: 2 ** 40 });
      expect.unreachable();
    } catch (e) {
      expect((e as RuntimeError).code).toBe('KV_CACHE_FULL');
      expect((e as Error).message).toMatch(/cannot allocate 1099511627776 slots per row \(\d+ MiB for 2 layers/);
    }
    expect(() => new KvCache({ numLayers: 1, numKvHeads: 1, headDim: 1, names: NAMES, capacity: 0 })).toThrow(
      /capacity must be a positive integer, got 0/,
    );
    expect(() => new KvCache({ numLayers: 0, numKvHeads: 1, headDim: 1, names: NAMES })).toThrow(
      /numLayers must be a positive integer, got 0/,
    );
  });
});
