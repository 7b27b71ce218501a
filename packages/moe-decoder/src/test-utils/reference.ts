import type { ErnieTextConfig } from '../ernie/config.js';

/**
 * A plain-TypeScript ERNIE text decoder, written from the reference
 * formulas (vLLM Ernie4_5_VLMoe*, HF Ernie4_5_VLMoe*) loop by loop, to check
 * the graph on random weights independently of ONNX: GQA attention with
 * GPT-J rotary, causal + padding mask and a KV cache; MoE routing that
 * computes only the chosen experts. Weights are float32 under the decoder's
 * parameter names.
 */
export interface RefInputs {
  B: number;
  S: number;
  P: number;
  ids: number[];
  visionEmbeds: Float32Array;
  visionPositions: number[];
  moeType: number[];
  /** [B, P + S] */
  mask: number[];
  /** [B, S, hd/2] */
  cos: Float32Array;
  sin: Float32Array;
  /** per layer [B, Hkv, P, hd] */
  pastK: Float32Array[];
  pastV: Float32Array[];
}

export interface RefOutputs {
  logits: Float32Array;
  layerOutputs: Float32Array[];
  presentK: Float32Array[];
  presentV: Float32Array[];
  /** Per MoE layer: chosen experts [N, k] and their weights, for routing checks. */
  routes: Map<number, { experts: number[][]; weights: number[][] }>;
}

type W = Map<string, Float32Array>;

function get(w: W, name: string): Float32Array {
  const t = w.get(name);
  if (t === undefined) throw new Error(`reference: missing ${name}`);
  return t;
}

/** y [n, out] = x [n, in] W^T, W [out, in] at `offset` in `wt`. */
function linear(x: Float32Array, wt: Float32Array, dims: { n: number; inDim: number; outDim: number; offset?: number }): Float32Array {
  const { n, inDim, outDim, offset = 0 } = dims;
  const y = new Float32Array(n * outDim);
  for (let r = 0; r < n; r++)
    for (let o = 0; o < outDim; o++) {
      let s = 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i]! * wt[offset + o * inDim + i]!;
      y[r * outDim + o] = s;
    }
  return y;
}

function rmsNorm(x: Float32Array, n: number, d: number, weight: Float32Array, eps: number): Float32Array {
  const y = new Float32Array(n * d);
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let i = 0; i < d; i++) ss += x[r * d + i]! ** 2;
    const inv = 1 / Math.sqrt(ss / d + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = x[r * d + i]! * inv * weight[i]!;
  }
  return y;
}

const silu = (v: number) => v / (1 + Math.exp(-v));

/** down(silu(gate) * up) for one token [D], with gate_up [2I, D] and down [D, I] at the given offsets in their arrays. */
function gatedMlp(
  x: Float32Array,
  mlp: { gateUp: Float32Array; down: Float32Array; D: number; I: number; gateUpOffset?: number; downOffset?: number },
): Float32Array {
  const { D, I } = mlp;
  const h = linear(x, mlp.gateUp, { n: 1, inDim: D, outDim: 2 * I, offset: mlp.gateUpOffset ?? 0 });
  const a = new Float32Array(I);
  for (let i = 0; i < I; i++) a[i] = silu(h[i]!) * h[I + i]!;
  return linear(a, mlp.down, { n: 1, inDim: I, outDim: D, offset: mlp.downOffset ?? 0 });
}

export function referenceForward(cfg: ErnieTextConfig, w: W, inp: RefInputs): RefOutputs {
  const { hiddenSize: D, numAttentionHeads: hq, numKeyValueHeads: hkv, headDim: hd, vocabSize: V } = cfg;
  const { B, S, P } = inp;
  const N = B * S;
  const T = P + S;
  const half = hd / 2;
  const emb = get(w, 'embed_tokens.weight');
  let x = new Float32Array(N * D);
  for (let n = 0; n < N; n++) x.set(emb.subarray(inp.ids[n]! * D, (inp.ids[n]! + 1) * D), n * D);
  inp.visionPositions.forEach((pos, r) => {
    x.set(inp.visionEmbeds.subarray(r * D, (r + 1) * D), pos * D);
  });

  const out: RefOutputs = { logits: new Float32Array(N * V), layerOutputs: [], presentK: [], presentV: [], routes: new Map() };
  for (let l = 0; l < cfg.numHiddenLayers; l++) {
    const p = `layers.${l}`;
    // --- attention
    const xn = rmsNorm(x, N, D, get(w, `${p}.input_layernorm.weight`), cfg.rmsNormEps);
    const qkvDim = (hq + 2 * hkv) * hd;
    const qkv = linear(xn, get(w, `${p}.self_attn.qkv_proj.weight`), { n: N, inDim: D, outDim: qkvDim });
    const rot = (n: number, base: number) => {
      for (let i = 0; i < half; i++) {
        const [c, s] = [inp.cos[n * half + i]!, inp.sin[n * half + i]!];
        const [a, b] = [qkv[n * qkvDim + base + 2 * i]!, qkv[n * qkvDim + base + 2 * i + 1]!];
        qkv[n * qkvDim + base + 2 * i] = a * c - b * s;
        qkv[n * qkvDim + base + 2 * i + 1] = b * c + a * s;
      }
    };
    for (let n = 0; n < N; n++) for (let h = 0; h < hq + hkv; h++) rot(n, h * hd);
    const K = new Float32Array(B * hkv * T * hd);
    const Vv = new Float32Array(B * hkv * T * hd);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < hkv; h++) {
        K.set(inp.pastK[l]!.subarray((b * hkv + h) * P * hd, (b * hkv + h + 1) * P * hd), (b * hkv + h) * T * hd);
        Vv.set(inp.pastV[l]!.subarray((b * hkv + h) * P * hd, (b * hkv + h + 1) * P * hd), (b * hkv + h) * T * hd);
        for (let s = 0; s < S; s++) {
          const n = b * S + s;
          K.set(qkv.subarray(n * qkvDim + (hq + h) * hd, n * qkvDim + (hq + h + 1) * hd), ((b * hkv + h) * T + P + s) * hd);
          Vv.set(qkv.subarray(n * qkvDim + (hq + hkv + h) * hd, n * qkvDim + (hq + hkv + h + 1) * hd), ((b * hkv + h) * T + P + s) * hd);
        }
      }
    out.presentK.push(K);
    out.presentV.push(Vv);
    const ctx = new Float32Array(N * hq * hd);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < hq; h++) {
        const kh = Math.floor(h / (hq / hkv));
        for (let s = 0; s < S; s++) {
          const n = b * S + s;
          const scores: number[] = [];
          for (let j = 0; j < T; j++) {
            const ok = (j <= P + s && inp.mask[b * T + j] !== 0) || j === P + s;
            let dot = 0;
            for (let d = 0; d < hd; d++) dot += qkv[n * qkvDim + h * hd + d]! * K[((b * hkv + kh) * T + j) * hd + d]!;
            scores.push(ok ? dot / Math.sqrt(hd) : -Infinity);
          }
          const m = Math.max(...scores);
          const e = scores.map((v) => Math.exp(v - m));
          const z = e.reduce((a, c) => a + c, 0);
          for (let d = 0; d < hd; d++) {
            let acc = 0;
            for (let j = 0; j < T; j++) acc += (e[j]! / z) * Vv[((b * hkv + kh) * T + j) * hd + d]!;
            ctx[n * hq * hd + h * hd + d] = acc;
          }
        }
      }
    const attn = linear(ctx, get(w, `${p}.self_attn.o_proj.weight`), { n: N, inDim: hq * hd, outDim: D });
    const h1 = x.map((v, i) => v + attn[i]!);
    // --- mlp
    const hn = rmsNorm(h1, N, D, get(w, `${p}.post_attention_layernorm.weight`), cfg.rmsNormEps);
    const mlp = new Float32Array(N * D);
    if (cfg.mlpLayerTypes[l] === 'dense') {
      for (let n = 0; n < N; n++)
        mlp.set(
          gatedMlp(hn.subarray(n * D, (n + 1) * D), {
            gateUp: get(w, `${p}.mlp.gate_up_proj.weight`),
            down: get(w, `${p}.mlp.down_proj.weight`),
            D,
            I: cfg.intermediateSize,
          }),
          n * D,
        );
    } else {
      const routes = { experts: [] as number[][], weights: [] as number[][] };
      for (let n = 0; n < N; n++) {
        const xt = hn.subarray(n * D, (n + 1) * D);
        const k = inp.moeType[n] !== 0 ? 1 : 0;
        const m = k === 1 ? 'vision' : 'text';
        const [E, I] = [cfg.moe.numExperts[k]!, cfg.moe.intermediateSize[k]!];
        const logits = linear(xt, get(w, `${p}.mlp.${m}_experts_gate.weight`), { n: 1, inDim: D, outDim: E });
        const mx = Math.max(...logits);
        const ex = Array.from(logits, (v) => Math.exp(v - mx));
        const z = ex.reduce((a, c) => a + c, 0);
        const probs = ex.map((v) => v / z);
        const bias = get(w, `${p}.mlp.${m}_experts.e_score_correction_bias`);
        const order = probs.map((_, e) => e).sort((a, b) => probs[b]! + bias[b]! - (probs[a]! + bias[a]!));
        const chosen = order.slice(0, cfg.moe.topK);
        const sum = chosen.reduce((a, e) => a + probs[e]!, 0);
        const weights = chosen.map((e) => probs[e]! / Math.max(sum, cfg.moe.normMin));
        routes.experts.push(chosen);
        routes.weights.push(weights);
        const w13 = get(w, `${p}.mlp.${m}_experts.w13_weight`);
        const w2 = get(w, `${p}.mlp.${m}_experts.w2_weight`);
        chosen.forEach((e, c) => {
          const y = gatedMlp(xt, { gateUp: w13, down: w2, D, I, gateUpOffset: e * 2 * I * D, downOffset: e * D * I });
          for (let i = 0; i < D; i++) mlp[n * D + i] = mlp[n * D + i]! + weights[c]! * y[i]!;
        });
        if (cfg.moe.numSharedExperts > 0) {
          const y = gatedMlp(xt, {
            gateUp: get(w, `${p}.mlp.shared_experts.gate_up_proj.weight`),
            down: get(w, `${p}.mlp.shared_experts.down_proj.weight`),
            D,
            I: cfg.moe.intermediateSize[0] * cfg.moe.numSharedExperts,
          });
          for (let i = 0; i < D; i++) mlp[n * D + i] = mlp[n * D + i]! + y[i]!;
        }
      }
      out.routes.set(l, routes);
    }
    x = h1.map((v, i) => v + mlp[i]!);
    out.layerOutputs.push(x);
  }
  const final = rmsNorm(x, N, D, get(w, 'norm.weight'), cfg.rmsNormEps);
  out.logits = linear(final, w.get('lm_head.weight') ?? get(w, 'embed_tokens.weight'), { n: N, inDim: D, outDim: V });
  return out;
}
