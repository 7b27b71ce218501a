import { describe, expect, it } from 'vitest';
import { ropeInverseFrequencies } from './inv-freq.js';
import { applyRotaryReference } from './rotate.js';
import { loadFixture, maxAbsDiff } from './test-utils/fixtures.js';
import {
  ernieFrequencyAxes,
  ernieTextRotaryCosSin,
  expandRotaryTable,
  interleavedFrequencyAxes,
  qwen2VlMropeCosSin,
  qwen3VlMropeCosSin,
  sectionedFrequencyAxes,
} from './text-rotary.js';
import { visionRotaryCosSin, visionRotaryPositionIds } from './vision-rotary.js';

// Expected values: HF transformers 5.17 rotary modules (tools/mrope/make_cases.py). Tolerance 1e-6.
interface Table {
  head_dim: number;
  rope_theta: number;
  position_ids: number[][][];
  cos: number[];
  sin: number[];
  shape: number[];
  inv_freq?: number[];
  inv_freq_hf_permuted?: number[];
  freq_allocation?: number;
  mrope_section?: number[];
}
interface VisionTable {
  head_dim: number;
  theta: number;
  spatial_merge_size: number;
  grid_thw: [number, number, number][];
  position_ids: number[][];
  inv_freq: number[];
  cos: number[];
  sin: number[];
}
const fx = loadFixture<{ ernie_text: Table; qwen2_text: Table; qwen3_text: Table; vision: VisionTable }>('rotary_tables.json');
const TOL = 1e-6;

function pos(t: Table) {
  const [b, s] = [t.position_ids[0]!.length, t.position_ids[0]![0]!.length];
  return { positionIds: t.position_ids.flat(2), shape: [3, b, s] as const };
}

describe('ERNIE text rotary', () => {
  const t = fx.ernie_text;
  it('frequency i: h for even i < 44, w for odd i < 44, t for the last 20', () => {
    const axes = ernieFrequencyAxes(128, 20);
    expect(Array.from(axes.slice(0, 4))).toEqual([1, 2, 1, 2]);
    expect(axes[43]).toBe(2);
    expect(Array.from(axes.slice(44)).every((a) => a === 0)).toBe(true);
  });
  it("our unpermuted inv_freq, permuted the HF way, equals HF's pre-permuted buffer exactly", () => {
    const inv = ropeInverseFrequencies(128, 500000);
    const hw = Array.from(inv.slice(0, 44));
    const permuted = [...hw.filter((_, i) => i % 2 === 0), ...hw.filter((_, i) => i % 2 === 1), ...inv.slice(44)];
    expect(permuted).toEqual(t.inv_freq_hf_permuted);
  });
  it('cos/sin equal HF Ernie4_5_VLMoeTextRotaryEmbedding (pairs repeated) within 1e-6', () => {
    const r = ernieTextRotaryCosSin(pos(t), { headDim: 128, ropeTheta: 500000, freqAllocation: 20 });
    expect(r.shape).toEqual([1, 12, 64]);
    expect(maxAbsDiff(expandRotaryTable(r.cos, 64, 'interleaved'), t.cos)).toBeLessThan(TOL);
    expect(maxAbsDiff(expandRotaryTable(r.sin, 64, 'interleaved'), t.sin)).toBeLessThan(TOL);
  });
  it('with t = h = w it is ordinary 1D RoPE', () => {
    const p = { positionIds: [5, 9, 5, 9, 5, 9], shape: [3, 2] as const };
    const r = ernieTextRotaryCosSin(p, { headDim: 8, ropeTheta: 100, freqAllocation: 2 });
    const inv = ropeInverseFrequencies(8, 100);
    expect(Array.from(r.cos)).toEqual([5, 5, 5, 5, 9, 9, 9, 9].map((x, i) => Math.fround(Math.cos(Math.fround(x * inv[i % 4]!)))));
  });
});

describe('Qwen text M-RoPE', () => {
  it('Qwen2-VL sectioned [16, 24, 24] equals HF Qwen2VLRotaryEmbedding within 1e-6', () => {
    const t = fx.qwen2_text;
    const r = qwen2VlMropeCosSin(pos(t), { headDim: 128, ropeTheta: t.rope_theta, mropeSection: t.mrope_section! });
    expect(maxAbsDiff(expandRotaryTable(r.cos, 64, 'halves'), t.cos)).toBeLessThan(TOL);
    expect(maxAbsDiff(expandRotaryTable(r.sin, 64, 'halves'), t.sin)).toBeLessThan(TOL);
    expect(Array.from(sectionedFrequencyAxes(128, [16, 24, 24]).slice(14, 18))).toEqual([0, 0, 1, 1]);
  });
  it('Qwen3-VL interleaved [24, 20, 20] equals HF Qwen3VLTextRotaryEmbedding within 1e-6', () => {
    const t = fx.qwen3_text;
    const r = qwen3VlMropeCosSin(pos(t), { headDim: 128, ropeTheta: t.rope_theta, mropeSection: t.mrope_section! });
    expect(maxAbsDiff(expandRotaryTable(r.cos, 64, 'halves'), t.cos)).toBeLessThan(TOL);
    expect(maxAbsDiff(expandRotaryTable(r.sin, 64, 'halves'), t.sin)).toBeLessThan(TOL);
    expect(Array.from(interleavedFrequencyAxes(128, [24, 20, 20]).slice(0, 6))).toEqual([0, 1, 2, 0, 1, 2]);
    expect(Array.from(interleavedFrequencyAxes(128, [24, 20, 20]).slice(60))).toEqual([0, 0, 0, 0]);
  });
  it("inv_freq is within 1 ulp of torch's float32 table (torch powf is not correctly rounded)", () => {
    for (const t of [fx.qwen2_text, fx.qwen3_text]) {
      const ours = ropeInverseFrequencies(128, t.rope_theta);
      ours.forEach((v, i) => {
        expect(Math.abs(v - t.inv_freq![i]!)).toBeLessThanOrEqual(v * 2 ** -23);
      });
    }
  });
});

describe('vision 2D rotary', () => {
  const v = fx.vision;
  it('position ids equal HF get_vision_position_ids (= vLLM rot_pos_emb ids)', () => {
    const ids = visionRotaryPositionIds(v.grid_thw, v.spatial_merge_size);
    expect(ids.shape).toEqual([v.position_ids.length, 2]);
    expect(Array.from(ids.positionIds)).toEqual(v.position_ids.flat());
    // First 2x2 window of a 4-wide grid: (0,0) (0,1) (1,0) (1,1), then the next window starts at w = 2.
    expect(Array.from(ids.positionIds.slice(0, 10))).toEqual([0, 0, 0, 1, 1, 0, 1, 1, 0, 2]);
  });
  it("cos/sin equal HF Ernie4_5_VLMoeVisionRotaryEmbedding (and Qwen2-VL's) within 1e-6", () => {
    const ids = visionRotaryPositionIds(v.grid_thw, 2);
    const r = visionRotaryCosSin(ids, { headDim: v.head_dim, theta: v.theta });
    expect(Array.from(ropeInverseFrequencies(v.head_dim / 2, v.theta))).toEqual(v.inv_freq);
    expect(maxAbsDiff(expandRotaryTable(r.cos, 40, 'halves'), v.cos)).toBeLessThan(TOL);
    expect(maxAbsDiff(expandRotaryTable(r.sin, 40, 'halves'), v.sin)).toBeLessThan(TOL);
  });
});

describe('applyRotaryReference', () => {
  it('interleaved equals HF rotate_half_text and halves equals rotate_half on the expanded tables', () => {
    const half = 4;
    const p = { positionIds: [0, 3, 7, 0, 2, 5, 0, 1, 9], shape: [3, 3] as const };
    const tab = ernieTextRotaryCosSin(p, { headDim: 8, ropeTheta: 100, freqAllocation: 2 });
    const x = Float32Array.from({ length: 3 * 2 * 8 }, (_, i) => Math.sin(i * 1.3));
    for (const style of ['interleaved', 'halves'] as const) {
      const got = applyRotaryReference(x, [1, 3, 2, 8], tab, style, 'BSHD');
      const cos = expandRotaryTable(tab.cos, half, style);
      const sin = expandRotaryTable(tab.sin, half, style);
      const want = new Float32Array(x.length);
      for (let s = 0; s < 3; s++) {
        for (let h = 0; h < 2; h++) {
          const o = (s * 2 + h) * 8;
          for (let d = 0; d < 8; d++) {
            // HF: rotate_half_text: stack(-x[1::2], x[0::2]); rotate_half: cat(-x2, x1)
            const rot =
              style === 'interleaved' ? (d % 2 === 0 ? -x[o + d + 1]! : x[o + d - 1]!) : d < half ? -x[o + d + half]! : x[o + d - half]!;
            want[o + d] = x[o + d]! * cos[s * 8 + d]! + rot * sin[s * 8 + d]!;
          }
        }
      }
      expect(maxAbsDiff(got, want)).toBeLessThan(1e-6);
      // BHSD layout: same numbers, transposed.
      const xt = new Float32Array(x.length);
      for (let s = 0; s < 3; s++) for (let h = 0; h < 2; h++) xt.set(x.subarray((s * 2 + h) * 8, (s * 2 + h + 1) * 8), (h * 3 + s) * 8);
      const gotT = applyRotaryReference(xt, [1, 2, 3, 8], tab, style, 'BHSD');
      expect(gotT[(1 * 3 + 2) * 8 + 5]).toBe(got[(2 * 2 + 1) * 8 + 5]);
    }
  });
});
