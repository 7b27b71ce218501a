import { f32ToBf16 } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import * as nn from './nn.js';
import { quantizeLinearPass } from './passes/quantize-linear.js';
import { applyPasses } from './passes/rewrite.js';
import { type QuantizeOptions, quantizeBlockwise, quantizeOptions } from './quant.js';
import { floatValues, quantizedRefs } from './quant-ref.js';
import { tensorFromArray } from './tensor-ref.js';
import { randn, runGraph } from './test-utils/ort.js';
import { Weights } from './weights.js';

/**
 * An independent reading of the MatMulNBits layout (ORT's contrib op spec): code i of row n is
 * bits [i*bits, (i+1)*bits) of the row's blocks, low bits first; zero points per row, padded to a byte.
 */
function dequantize(
  q: { packed: Uint8Array; scales: Float32Array; zeroPoints: Uint8Array | undefined },
  n: number,
  k: number,
  bits: number,
  blockSize: number,
): Float32Array {
  const kBlocks = Math.ceil(k / blockSize);
  const rowBytes = (kBlocks * blockSize * bits) / 8;
  const zpRowBytes = Math.ceil((kBlocks * bits) / 8);
  const nibble = (bytes: Uint8Array, base: number, i: number) =>
    bits === 8 ? bytes[base + i]! : (bytes[base + (i >> 1)]! >> ((i % 2) * 4)) & 15;
  const out = new Float32Array(n * k);
  for (let r = 0; r < n; r++) {
    for (let i = 0; i < k; i++) {
      const b = Math.floor(i / blockSize);
      const zp = q.zeroPoints === undefined ? 2 ** (bits - 1) : nibble(q.zeroPoints, r * zpRowBytes, b);
      out[r * k + i] = (nibble(q.packed, r * rowBytes, i) - zp) * q.scales[r * kBlocks + b]!;
    }
  }
  return out;
}

/** x [M, K] times w [N, K] transposed, in float64. */
function matmulT(x: Float32Array, w: Float32Array, m: number, k: number, n: number): Float64Array {
  const y = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) for (let t = 0; t < k; t++) y[i * n + j]! += x[i * k + t]! * w[j * k + t]!;
  return y;
}

function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num = Math.max(num, Math.abs(a[i]! - b[i]!));
    den = Math.max(den, Math.abs(b[i]!));
  }
  return num / den;
}

const modes: { name: string; o: Pick<QuantizeOptions, 'bits' | 'blockSize' | 'symmetric'> }[] = [
  { name: 'int4 asymmetric', o: { bits: 4, blockSize: 32, symmetric: false } },
  { name: 'int4 symmetric', o: { bits: 4, blockSize: 32, symmetric: true } },
  { name: 'int8 asymmetric', o: { bits: 8, blockSize: 32, symmetric: false } },
  { name: 'int8 symmetric', o: { bits: 8, blockSize: 32, symmetric: true } },
  { name: 'int4 asymmetric, block 16', o: { bits: 4, blockSize: 16, symmetric: false } },
];

describe('quantizeBlockwise', () => {
  // K = 72 is not a multiple of the block: the last block is padded. N = 5 rows, 3 blocks (odd: zero points pad a nibble).
  const [n, k] = [5, 72];
  const w = randn(n * k, 7);
  for (let i = 0; i < k; i++) w[2 * k + i] = Math.abs(w[2 * k + i]!); // an all-positive row: the range must still hold 0
  w.fill(0, 3 * k, 4 * k); // an all-zero row

  for (const { name, o } of modes) {
    // Symmetric codes reach -2^(bits-1) steps on the block's largest-magnitude side but only 2^(bits-1) - 1 on the
    // other: a value there past that is clipped, by at most one step.
    const tol = o.symmetric ? 1 : 0.5;
    it(`${name}: every weight within ${tol} step of its dequantized value, zeros exact`, () => {
      const q = quantizeBlockwise(w, n, k, o);
      const deq = dequantize(q, n, k, o.bits, o.blockSize);
      const kBlocks = Math.ceil(k / o.blockSize);
      for (let r = 0; r < n; r++) {
        for (let i = 0; i < k; i++) {
          const s = Math.abs(q.scales[r * kBlocks + Math.floor(i / o.blockSize)]!);
          expect(Math.abs(deq[r * k + i]! - w[r * k + i]!)).toBeLessThanOrEqual(s * tol + 1e-6 * s);
        }
      }
      for (let i = 3 * k; i < 4 * k; i++) expect(Math.abs(deq[i]!)).toBe(0);
      // The step is what the bits allow: asymmetric, the block's range (with 0) over 2^bits - 1 codes;
      // symmetric, its largest magnitude over 2^(bits-1).
      for (let r = 0; r < n; r++) {
        for (let b = 0; b < kBlocks; b++) {
          const blk = Array.from(w.subarray(r * k + b * o.blockSize, Math.min(r * k + (b + 1) * o.blockSize, (r + 1) * k)));
          const step = o.symmetric
            ? Math.max(...blk.map(Math.abs)) / 2 ** (o.bits - 1)
            : (Math.max(0, ...blk) - Math.min(0, ...blk)) / (2 ** o.bits - 1);
          expect(Math.abs(q.scales[r * kBlocks + b]!)).toBeCloseTo(step, 6);
        }
      }
    });

    for (const accuracyLevel of [0, 4] as const) {
      it(`${name}: ORT's MatMulNBits (accuracy_level ${accuracyLevel}) computes x dequant(W)^T`, async () => {
        const m = 3;
        const x = randn(m * k, 11);
        const g = new Graph();
        const xin = g.input('x', 'float32', [m, k]);
        const weights = Weights.from({ 'fc.weight': tensorFromArray('float32', [n, k], w) });
        g.output(nn.linear(g, xin, weights, 'fc', { bias: false, out: n }), 'y');
        applyPasses(g, [quantizeLinearPass({ ...o, accuracyLevel })]);
        expect(g.snapshot().nodes.map((nd) => nd.opType)).toEqual(['MatMulNBits', 'Identity']);
        const y = (await runGraph(g, { x: { dtype: 'float32', dims: [m, k], data: x } })).y!.data as Float32Array;
        const ref = matmulT(x, dequantize(quantizeBlockwise(w, n, k, o), n, k, o.bits, o.blockSize), m, k, n);
        // Float compute is exact up to float32 sums; int8 compute also quantizes x per block (8 bits: ~1%).
        expect(relErr(y, ref)).toBeLessThan(accuracyLevel === 0 ? 1e-5 : 2e-2);
        // And the quantized product is near the float one: int8 weights within 1% (3% with int8 compute), int4 ~10%.
        expect(relErr(y, matmulT(x, w, m, k, n))).toBeLessThan(o.bits === 4 ? 0.15 : accuracyLevel === 0 ? 1e-2 : 3e-2);
      });
    }
  }
});

describe('quantizedRefs', () => {
  it('reads a bf16 weight once, as float32, and hands out the three parts', async () => {
    const [n, k] = [4, 64];
    const w32 = randn(n * k, 3);
    let loads = 0;
    const bf = f32ToBf16(w32);
    const ref = {
      ...tensorFromArray('bfloat16', [n, k], bf),
      kind: 'lazy' as const,
      load: async () => {
        loads++;
        return bf;
      },
    };
    const o = quantizeOptions('int4');
    const refs = quantizedRefs(ref, o);
    expect(refs.b.shape).toEqual([n, 2, 16]);
    expect(refs.scales.shape).toEqual([n * 2]);
    expect(refs.zeroPoints?.shape).toEqual([n]);
    const parts = [refs.b, refs.scales, refs.zeroPoints!].map((r) => (r.kind === 'lazy' ? r.load() : undefined));
    const [b, scales, zp] = await Promise.all(parts);
    expect(loads).toBe(1);
    const direct = quantizeBlockwise(await floatValues(tensorFromArray('bfloat16', [n, k], bf)), n, k, o);
    expect(b).toEqual(direct.packed);
    expect(scales).toEqual(direct.scales);
    expect(zp).toEqual(direct.zeroPoints);
  });

  it('refuses unknown modes and bad options, naming them', () => {
    expect(() => quantizeOptions('int3' as 'int4')).toThrow(/int8, int4.*'int3'/);
    expect(() => quantizeOptions({ bits: 4, blockSize: 24 })).toThrow(/power of two.*24/);
  });
});
