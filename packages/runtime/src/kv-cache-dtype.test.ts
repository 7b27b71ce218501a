// The float16 KV cache (graphs computing in float16 feed and return their cache as float16: half the memory),
// and the NO_KERNEL error a session with an op its EP has no kernel for fails with.
import { describe, expect, it } from 'vitest';
import { noKernelError, RuntimeError } from './errors.js';
import { KvCache } from './kv-cache.js';
import { float32, type HostTensor, hostTensor } from './tensor.js';

const NAMES = { past: (i: number, k: string) => `past.${i}.${k}`, present: (i: number, k: string) => `present.${i}.${k}` };
const [L, H, D] = [2, 2, 3];

/** Present rows [B, H, S, D] of raw half bits: 1000*layer + 100*b + 10*h + position (distinct per slot). */
function present(B: number, S: number, p: number): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (let i = 0; i < L; i++)
    for (const kind of ['key', 'value'] as const) {
      const bits = new Uint16Array(B * H * S * D);
      let n = 0;
      for (let b = 0; b < B; b++)
        for (let h = 0; h < H; h++) for (let t = 0; t < S; t++) for (let d = 0; d < D; d++) bits[n++] = 1000 * i + 100 * b + 10 * h + p + t;
      out[NAMES.present(i, kind)] = hostTensor('float16', bits, [B, H, S, D]);
    }
  return out;
}

describe('KvCache dtype float16', () => {
  it('pre-allocates Uint16 slots (half the bytes of float32), appends, grows and reorders rows as float32 does', () => {
    const kv = new KvCache({ numLayers: L, numKvHeads: H, headDim: D, batchSize: 2, names: NAMES, capacity: 4, dtype: 'float16' });
    const f32 = new KvCache({ numLayers: L, numKvHeads: H, headDim: D, batchSize: 2, names: NAMES, capacity: 4 });
    expect(kv.byteLength * 2).toBe(f32.byteLength);
    expect(kv.feeds()['past.0.key']).toEqual({ dtype: 'float16', dims: [2, H, 0, D], data: new Uint16Array(0) });
    kv.update(present(2, 3, 0));
    kv.update(present(2, 1, 3));
    kv.reserve(6);
    kv.select([1, 0]);
    const key = kv.layer(1).key;
    expect(key.dtype).toBe('float16');
    expect(key.dims).toEqual([2, H, 6, D]);
    // Row 0 is the old row 1: slot t of head h holds 1000*1 + 100*1 + 10*h + t; slots 4, 5 are still free (0).
    const data = key.data as Uint16Array;
    for (let h = 0; h < H; h++)
      for (let t = 0; t < 6; t++) expect(data[(h * 6 + t) * D], `h ${h} t ${t}`).toBe(t < 4 ? 1100 + 10 * h + t : 0);
  });

  it('refuses a present output of another dtype, and a dtype it cannot hold', () => {
    const kv = new KvCache({ numLayers: 1, numKvHeads: 1, headDim: 1, names: NAMES, dtype: 'float16' });
    const outputs = { 'present.0.key': float32([1], [1, 1, 1, 1]), 'present.0.value': float32([1], [1, 1, 1, 1]) };
    expect(() => kv.update(outputs)).toThrow(/'present.0.key' is float32; the cache holds float16/);
    expect(() => new KvCache({ numLayers: 1, numKvHeads: 1, headDim: 1, names: NAMES, dtype: 'bfloat16' as never })).toThrow(RuntimeError);
  });
});

describe('noKernelError', () => {
  // ORT 1.29's message for a bfloat16 MatMul on the CPU EP (measured; see onnx-graph's compute-dtype.test).
  const ort = new Error("Could not find an implementation for MatMul(13) node with name 'decoder.layers.0.mlp.down_proj.MatMul'");

  it('names the op, the node and the dtype, and says where bfloat16 runs', () => {
    const e = noKernelError('ernie-decoder', ort, 'bfloat16')!;
    expect(e.code).toBe('NO_KERNEL');
    expect([e.op, e.node, e.dtype, e.session]).toEqual([
      'MatMul(13)',
      'decoder.layers.0.mlp.down_proj.MatMul',
      'bfloat16',
      'ernie-decoder',
    ]);
    expect(e.message).toContain("no kernel for MatMul(13) in bfloat16 at node 'decoder.layers.0.mlp.down_proj.MatMul'");
    expect(e.message).toContain("device 'cuda'");
  });

  it('a node ORT expanded from a function op has no name; other load errors are not NO_KERNEL', () => {
    const e = noKernelError('m', new Error("Could not find an implementation for Sqrt(13) node with name ''"), undefined)!;
    expect([e.op, e.node, e.dtype]).toEqual(['Sqrt(13)', undefined, undefined]);
    expect(noKernelError('m', new Error('Protobuf parsing failed.'), 'float16')).toBeUndefined();
  });
});
