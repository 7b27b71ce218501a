// kvCache 'append' against 'concat' on the same weights and steps: prefill then decode steps of a left-padded
// batch, the append graph fed slot buffers (free slots hold junk, masked) and its new rows written into them.

import { APPEND_ATTENTION_PASSES, type Graph } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { graniteStep } from './test-utils/granite-runner.js';
import { maxAbs, maxAbsDiff, randn, sessionFor } from './test-utils/ort.js';
import { randomGraniteWeights, randomWeights, tinyConfig, tinyGraniteConfig } from './test-utils/random-model.js';
import { argmax, step } from './test-utils/runner.js';

const B = 2;
const STEPS = 4;
// 6 positions: the prompt takes the op; 150: it runs in causal blocks of query rows (nn.causalChunkedAttention).
const PROMPTS = [6, 150];

interface Slots {
  key: Float32Array;
  value: Float32Array;
}

/** One run's inputs that differ between the modes: past and mask. */
interface CacheFeed {
  mask: number[];
  past: { key: ort.Tensor; value: ort.Tensor }[] | undefined;
}

/** Drives both caches: concat keeps the present outputs; append writes new rows into slot buffers of CAP slots. */
class Caches {
  concat: { key: ort.Tensor; value: ort.Tensor }[] | undefined;
  readonly slots: Slots[];
  filled = 0;
  mask: number[];
  readonly cap: number;

  constructor(
    layers: number,
    private readonly hkv: number,
    private readonly hd: number,
    prompt: number,
  ) {
    this.cap = prompt + STEPS;
    // Row 1 left padded by 2.
    this.mask = Array.from({ length: B * prompt }, (_, n) => (n >= prompt && n < prompt + 2 ? 0 : 1));
    // Junk in every slot: the mask must keep free ones out.
    this.slots = Array.from({ length: layers }, (_, l) => ({
      key: randn(B * hkv * this.cap * hd, 900 + l, 30),
      value: randn(B * hkv * this.cap * hd, 950 + l, 30),
    }));
  }

  feeds(S: number): { concat: CacheFeed; append: CacheFeed } {
    const [hkv, hd] = [this.hkv, this.hd];
    const T = this.mask.length / B;
    const slotMask: number[] = [];
    for (let b = 0; b < B; b++) {
      const row = this.filled === 0 ? [] : Array.from({ length: this.cap }, (_, j) => (j < this.filled ? this.mask[b * T + j]! : 0));
      slotMask.push(...row, ...this.mask.slice(b * T + this.filled, (b + 1) * T));
    }
    const past =
      this.filled === 0
        ? undefined
        : this.slots.map((s) => ({
            key: new ort.Tensor('float32', s.key, [B, hkv, this.cap, hd]),
            value: new ort.Tensor('float32', s.value, [B, hkv, this.cap, hd]),
          }));
    expect(T - this.filled).toBe(S);
    return { concat: { mask: this.mask, past: this.concat }, append: { mask: slotMask, past } };
  }

  update(
    concatPresent: { key: ort.Tensor; value: ort.Tensor }[],
    appendPresent: { key: ort.Tensor; value: ort.Tensor }[],
    S: number,
  ): void {
    const [hkv, hd] = [this.hkv, this.hd];
    this.concat = concatPresent;
    appendPresent.forEach((p, l) => {
      expect(p.key.dims).toEqual([B, hkv, S, hd]);
      for (const kind of ['key', 'value'] as const) {
        const src = p[kind].data as Float32Array;
        for (let r = 0; r < B * hkv; r++)
          this.slots[l]![kind].set(src.subarray(r * S * hd, (r + 1) * S * hd), (r * this.cap + this.filled) * hd);
      }
    });
    this.filled += S;
    // The next token: one real column per row.
    const T = this.mask.length / B;
    const next: number[] = [];
    for (let b = 0; b < B; b++) next.push(...this.mask.slice(b * T, (b + 1) * T), 1);
    this.mask = next;
  }
}

/** The append graph after `APPEND_ATTENTION_PASSES`: each layer's attention an If that reads the slots in place. */
function appendAttention(g: Graph, layers: number): Graph {
  expect(g.nodes.filter((n) => n.opType === 'If' && n.name?.includes('.self_attn.'))).toHaveLength(layers);
  return g;
}

function expectClose(got: Float32Array, want: Float32Array, what: string): void {
  // float32 sums over a longer (masked) row in another order: 1e-5 of the largest |logit|.
  expect(maxAbsDiff(got, want), what).toBeLessThanOrEqual(1e-5 * maxAbs(want));
}

describe.each(PROMPTS)("kvCache 'append' equals 'concat' (a %i-position prompt)", (PROMPT) => {
  it('ERNIE: prefill and decode steps of a left-padded batch', async () => {
    const cfg = tinyConfig;
    const { weights } = randomWeights(cfg);
    const concat = await sessionFor(buildErnieTextDecoderModel(weights, cfg));
    const append = await sessionFor(
      appendAttention(
        buildErnieTextDecoderModel(weights, cfg, { kvCache: 'append', passes: APPEND_ATTENTION_PASSES }),
        cfg.numHiddenLayers,
      ),
    );
    const caches = new Caches(cfg.numHiddenLayers, cfg.numKeyValueHeads, cfg.headDim, PROMPT);
    let ids = Array.from({ length: B * PROMPT }, (_, i) => (i * 5 + 1) % cfg.vocabSize);
    let S = PROMPT;
    for (let n = 0; n <= STEPS; n++) {
      const pos = new BigInt64Array(3 * B * S);
      for (let i = 0; i < 3 * B * S; i++) pos[i] = BigInt(caches.filled + (i % S));
      const x = { B, S, ids, moeType: ids.map((_, i) => (i % 3 === 1 && n === 0 ? 1 : 0)), positionIds: pos };
      const f = caches.feeds(S);
      const a = await step(concat, cfg, { ...x, mask: f.concat.mask, ...(f.concat.past ? { past: f.concat.past } : {}) });
      const b = await step(append, cfg, { ...x, mask: f.append.mask, ...(f.append.past ? { past: f.append.past } : {}) });
      expectClose(b.logits, a.logits, `run ${n}`);
      caches.update(a.present, b.present, S);
      ids = Array.from({ length: B }, (_, r) => argmax(a.logits, r * S + S - 1, cfg.vocabSize));
      S = 1;
    }
    expect(caches.filled).toBe(caches.cap);
  });

  it('Granite: the same', async () => {
    const config = tinyGraniteConfig;
    const weights = randomGraniteWeights(config, 70);
    const concat = await sessionFor(buildGraniteTextDecoderModel(weights, config, { levels: [] }));
    const append = await sessionFor(
      appendAttention(
        buildGraniteTextDecoderModel(weights, config, { levels: [], kvCache: 'append', passes: APPEND_ATTENTION_PASSES }),
        config.numHiddenLayers,
      ),
    );
    const caches = new Caches(config.numHiddenLayers, config.numKeyValueHeads, config.headDim, PROMPT);
    let ids = Array.from({ length: B * PROMPT }, (_, i) => (i * 3 + 2) % config.vocabSize);
    let S = PROMPT;
    for (let n = 0; n <= STEPS; n++) {
      const positionIds = BigInt64Array.from({ length: B * S }, (_, i) => BigInt(caches.filled + (i % S)));
      const f = caches.feeds(S);
      const a = await graniteStep(concat, config, 0, {
        B,
        S,
        ids,
        positionIds,
        mask: f.concat.mask,
        ...(f.concat.past ? { past: f.concat.past } : {}),
      });
      const b = await graniteStep(append, config, 0, {
        B,
        S,
        ids,
        positionIds,
        mask: f.append.mask,
        ...(f.append.past ? { past: f.append.past } : {}),
      });
      expectClose(b.logits, a.logits, `run ${n}`);
      caches.update(a.present, b.present, S);
      ids = Array.from({ length: B }, (_, r) => argmax(a.logits, r * S + S - 1, config.vocabSize));
      S = 1;
    }
  });
});
