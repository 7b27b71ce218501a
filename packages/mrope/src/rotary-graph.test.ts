import { Graph } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { ERNIE_45_VL_TOKENS, ernieRopeIndex } from './ernie-rope-index.js';
import { applyErnieTextRotary, applyQwenTextRotary, applyVisionRotary } from './rotary-graph.js';
import { applyRotaryReference } from './rotate.js';
import { maxAbsDiff } from './test-utils/fixtures.js';
import { noise, runF32 } from './test-utils/ort.js';
import { ernieTextRotaryCosSin, qwen3VlMropeCosSin } from './text-rotary.js';
import { visionRotaryCosSin, visionRotaryPositionIds } from './vision-rotary.js';

// The built subgraphs run in onnxruntime-node (CPU EP) against the pure-TS
// reference rotation (applyRotaryReference), itself checked against HF's
// formulas in rotary.test.ts. Tolerance 1e-5 (float32, angles up to ~20 rad).
const TOL = 1e-5;
const P = ERNIE_45_VL_TOKENS.imageTokenId;
// Batch of 2, left padded; an image so that t, h, w differ.
const pos = ernieRopeIndex(
  {
    inputIds: [
      [0, 0, 5, 101304, P, P, P, P, 101305, 6],
      [7, 8, 5, 101304, P, P, P, P, 101305, 6],
    ],
    attentionMask: [[0, 0, 1, 1, 1, 1, 1, 1, 1, 1], Array(10).fill(1)],
    imageGridThw: [
      [1, 4, 4],
      [1, 2, 8],
    ],
  },
  ERNIE_45_VL_TOKENS,
);
const [B, S, H, hd] = [2, 10, 3, 16];

describe('rotary subgraphs vs the TS reference', () => {
  for (const layout of ['BSHD', 'BHSD'] as const) {
    for (const impl of ['primitive', 'RotaryEmbedding'] as const) {
      it(`applyErnieTextRotary (GPT-J pairs), ${layout}, ${impl}`, async () => {
        const tab = ernieTextRotaryCosSin(pos, { headDim: hd, ropeTheta: 500000, freqAllocation: 2 });
        const xShape = (layout === 'BSHD' ? [B, S, H, hd] : [B, H, S, hd]) as [number, number, number, number];
        const x = noise(B * S * H * hd, 3);
        const g = new Graph();
        const xi = g.input('x', 'float32', layout === 'BSHD' ? ['batch', 'seq', H, hd] : ['batch', H, 'seq', hd]);
        const ci = g.input('cos', 'float32', ['batch', 'seq', hd / 2]);
        const si = g.input('sin', 'float32', ['batch', 'seq', hd / 2]);
        g.output(applyErnieTextRotary(g, xi, ci, si, { layout, impl }), 'y');
        const half = [B, S, hd / 2];
        const out = await runF32(g, {
          x: { dims: xShape, data: x },
          cos: { dims: half, data: tab.cos },
          sin: { dims: half, data: tab.sin },
        });
        const want = applyRotaryReference(x, xShape, tab, 'interleaved', layout);
        expect(maxAbsDiff(out.y!, want)).toBeLessThan(TOL);
        // Not a no-op: the rotation moved the values.
        expect(maxAbsDiff(want, x)).toBeGreaterThan(0.1);
      });
    }
  }

  it('applyQwenTextRotary (neox halves) with Qwen3-VL interleaved tables', async () => {
    const tab = qwen3VlMropeCosSin(pos, { headDim: hd, ropeTheta: 5e6, mropeSection: [4, 2, 2] });
    const x = noise(B * S * H * hd, 4);
    const g = new Graph();
    const xi = g.input('x', 'float32', ['batch', 'seq', H, hd]);
    const ci = g.input('cos', 'float32', ['batch', 'seq', hd / 2]);
    const si = g.input('sin', 'float32', ['batch', 'seq', hd / 2]);
    g.output(applyQwenTextRotary(g, xi, ci, si), 'y');
    const half = [B, S, hd / 2];
    const out = await runF32(g, {
      x: { dims: [B, S, H, hd], data: x },
      cos: { dims: half, data: tab.cos },
      sin: { dims: half, data: tab.sin },
    });
    expect(maxAbsDiff(out.y!, applyRotaryReference(x, [B, S, H, hd], tab, 'halves'))).toBeLessThan(TOL);
  });

  it('applyVisionRotary (neox halves, float32) on [N, H, hd] with a float16 round trip', async () => {
    const ids = visionRotaryPositionIds(
      [
        [1, 4, 8],
        [2, 2, 2],
      ],
      2,
    );
    const vhd = 80;
    const tab = visionRotaryCosSin(ids, { headDim: vhd });
    const N = ids.shape[0];
    const x = noise(N * 2 * vhd, 5);
    const g = new Graph();
    const xi = g.input('x', 'float32', ['patches', 2, vhd]);
    const ci = g.input('cos', 'float32', ['patches', vhd / 2]);
    const si = g.input('sin', 'float32', ['patches', vhd / 2]);
    g.output(applyVisionRotary(g, xi, ci, si), 'y');
    // The same rotation on float16 activations: computed in float32, cast back.
    g.output(g.cast(applyVisionRotary(g, g.cast(xi, 'float16'), ci, si), 'float32'), 'y16');
    const out = await runF32(g, {
      x: { dims: [N, 2, vhd], data: x },
      cos: { dims: [N, vhd / 2], data: tab.cos },
      sin: { dims: [N, vhd / 2], data: tab.sin },
    });
    // The reference treats the patches as one "batch" row: [1, N, H, hd] with a [1, N, half] table.
    const want = applyRotaryReference(x, [1, N, 2, vhd], { cos: tab.cos, sin: tab.sin, shape: [1, N, vhd / 2] }, 'halves');
    expect(maxAbsDiff(out.y!, want)).toBeLessThan(TOL);
    expect(maxAbsDiff(out.y16!, want)).toBeLessThan(2e-3);
  });
});
