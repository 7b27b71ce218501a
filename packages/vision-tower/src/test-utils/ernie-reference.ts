/**
 * A plain-TypeScript ERNIE-4.5-VL vision tower in float64, written from the
 * reference's forward (vLLM: Ernie4_5_VisionTransformer; HF:
 * Ernie4_5_VLMoeVisionTransformerPretrainedModel) without ONNX, mrope or any
 * computation from src/ (only its config type): attention runs per cu_seqlens segment, not through a mask.
 * Slow (O(N^2 D)), for tiny configs only.
 */
import type { ErnieVisionConfig } from '../ernie/config.js';

export interface ReferenceConfig {
  depth: number;
  hidden: number;
  heads: number;
  intermediate: number;
  merge: number;
  theta: number;
  blockEps: number;
  finalEps: number;
  act: 'quick_gelu' | 'gelu' | 'gelu_pytorch_tanh';
}

/** The reference's settings for a tower config. */
export function referenceConfigOf(c: ErnieVisionConfig): ReferenceConfig {
  if (c.hiddenAct === 'silu') throw new Error('reference: silu not implemented');
  return {
    depth: c.depth,
    hidden: c.hiddenSize,
    heads: c.numHeads,
    intermediate: c.intermediateSize,
    merge: c.spatialMergeSize,
    theta: c.ropeTheta,
    blockEps: c.blockNormEps,
    finalEps: c.finalNormEps,
    act: c.hiddenAct,
  };
}

type Params = ReadonlyMap<string, Float32Array>;

function param(p: Params, name: string): Float32Array {
  const t = p.get(name);
  if (t === undefined) throw new Error(`reference: missing ${name}`);
  return t;
}

/** y[n, o] = sum_i x[n, i] * w[o, i] + b[o] (PyTorch layout). */
function linear(x: Float64Array, n: number, inDim: number, w: Float32Array, b: Float32Array | undefined): Float64Array {
  const outDim = w.length / inDim;
  const y = new Float64Array(n * outDim);
  for (let r = 0; r < n; r++)
    for (let o = 0; o < outDim; o++) {
      let s = b ? b[o]! : 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i]! * w[o * inDim + i]!;
      y[r * outDim + o] = s;
    }
  return y;
}

function layerNorm(x: Float64Array, n: number, d: number, w: Float32Array, b: Float32Array, eps: number): Float64Array {
  const y = new Float64Array(n * d);
  for (let r = 0; r < n; r++) {
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[r * d + i]!;
    mean /= d;
    let v = 0;
    for (let i = 0; i < d; i++) v += (x[r * d + i]! - mean) ** 2;
    const inv = 1 / Math.sqrt(v / d + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = (x[r * d + i]! - mean) * inv * w[i]! + b[i]!;
  }
  return y;
}

function act(x: number, kind: ReferenceConfig['act']): number {
  if (kind === 'quick_gelu') return x / (1 + Math.exp(-1.702 * x));
  if (kind === 'gelu_pytorch_tanh') return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  return 0.5 * x * (1 + erf(x / Math.SQRT2));
}

/** erf by its Taylor series below 3 and the asymptotic expansion above (error < 1e-7 there). */
function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 3) {
    let sum = ax;
    let term = ax;
    for (let k = 1; k < 200; k++) {
      term *= (-ax * ax) / k;
      const add = term / (2 * k + 1);
      sum += add;
      if (Math.abs(add) < 1e-17) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  return (
    Math.sign(x) * (1 - (Math.exp(-ax * ax) / (ax * Math.sqrt(Math.PI))) * (1 - 1 / (2 * ax ** 2) + 3 / (4 * ax ** 4) - 15 / (8 * ax ** 6)))
  );
}

/** vLLM rot_pos_emb: (h, w) ids reshaped [h/m, m, w/m, m], permuted (0, 2, 1, 3), flattened, repeated t times. */
export function referencePositionIds(grids: readonly (readonly [number, number, number])[], m: number): [number, number][] {
  const out: [number, number][] = [];
  for (const [t, h, w] of grids) {
    const frame: [number, number][] = new Array(h * w);
    for (let r = 0; r < h; r++)
      for (let c = 0; c < w; c++) {
        const [a, b, cc, d] = [Math.floor(r / m), r % m, Math.floor(c / m), c % m];
        frame[((a * (w / m) + cc) * m + b) * m + d] = [r, c];
      }
    for (let f = 0; f < t; f++) out.push(...frame);
  }
  return out;
}

/** The tower's output [N, hidden] for flattened patches `pixels` [N, patchDim]. */
export function referenceErnieTower(
  p: Params,
  cfg: ReferenceConfig,
  pixels: Float32Array,
  grids: readonly (readonly [number, number, number])[],
): Float64Array {
  const { hidden: d, heads, intermediate } = cfg;
  const hd = d / heads;
  const pos = referencePositionIds(grids, cfg.merge);
  const n = pos.length;
  const patchDim = pixels.length / n;
  // Rotary: hd/4 frequencies 1/theta^(2i/(hd/2)) and angles pos * f, both rounded to float32 as torch does.
  const quarter = hd / 4;
  const inv = Array.from({ length: quarter }, (_, i) => Math.fround(1 / Math.fround(cfg.theta ** Math.fround((2 * i) / (hd / 2)))));
  const cos: number[][] = [];
  const sin: number[][] = [];
  for (const [ph, pw] of pos) {
    const ang = [...inv.map((f) => Math.fround(ph * f)), ...inv.map((f) => Math.fround(pw * f))];
    cos.push(ang.map((a) => Math.fround(Math.cos(a))));
    sin.push(ang.map((a) => Math.fround(Math.sin(a))));
  }
  const segs: [number, number][] = [];
  let start = 0;
  for (const [t, h, w] of grids) for (let f = 0; f < t; f++, start += h * w) segs.push([start, start + h * w]);

  let x = linear(Float64Array.from(pixels), n, patchDim, param(p, 'patch_embed.proj.weight'), undefined);
  for (let b = 0; b < cfg.depth; b++) {
    const m = (s: string) => param(p, `blocks.${b}.${s}`);
    const h1 = layerNorm(x, n, d, m('norm1.weight'), m('norm1.bias'), cfg.blockEps);
    const qkv = linear(h1, n, d, m('attn.qkv.weight'), m('attn.qkv.bias'));
    const get = (which: number, r: number, head: number, i: number) => qkv[r * 3 * d + which * d + head * hd + i]!;
    const rot = (which: number, r: number, head: number): number[] => {
      const half = hd / 2;
      return Array.from({ length: hd }, (_, i) => {
        const j = i % half;
        const other = i < half ? -get(which, r, head, i + half) : get(which, r, head, i - half);
        return get(which, r, head, i) * cos[r]![j]! + other * sin[r]![j]!;
      });
    };
    const ctx = new Float64Array(n * d);
    for (let head = 0; head < heads; head++) {
      const q = Array.from({ length: n }, (_, r) => rot(0, r, head));
      const k = Array.from({ length: n }, (_, r) => rot(1, r, head));
      for (const [s0, s1] of segs)
        for (let i = s0; i < s1; i++) {
          const scores: number[] = [];
          for (let j = s0; j < s1; j++) {
            let s = 0;
            for (let e = 0; e < hd; e++) s += q[i]![e]! * k[j]![e]!;
            scores.push(s / Math.sqrt(hd));
          }
          const mx = Math.max(...scores);
          const ex = scores.map((s) => Math.exp(s - mx));
          const z = ex.reduce((a, c) => a + c, 0);
          for (let e = 0; e < hd; e++) {
            let acc = 0;
            for (let j = s0; j < s1; j++) acc += (ex[j - s0]! / z) * get(2, j, head, e);
            ctx[i * d + head * hd + e] = acc;
          }
        }
    }
    const attn = linear(ctx, n, d, m('attn.proj.weight'), m('attn.proj.bias'));
    x = x.map((v, i) => v + attn[i]!);
    const h2 = layerNorm(x, n, d, m('norm2.weight'), m('norm2.bias'), cfg.blockEps);
    const f1 = linear(h2, n, d, m('mlp.fc1.weight'), m('mlp.fc1.bias')).map((v) => act(v, cfg.act));
    const f2 = linear(f1, n, intermediate, m('mlp.fc2.weight'), m('mlp.fc2.bias'));
    x = x.map((v, i) => v + f2[i]!);
  }
  return layerNorm(x, n, d, param(p, 'ln.weight'), param(p, 'ln.bias'), cfg.finalEps);
}
