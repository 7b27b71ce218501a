import type { Graph } from '../graph.js';
import type { Dim } from '../shape.js';

/** Reference SDPA on [B, H, S, hd] q and [B, Hkv, T, hd] k/v with a bool mask [B, 1, S, T]. */
export function sdpaRef(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  B: number,
  H: number,
  Hkv: number,
  S: number,
  T: number,
  hd: number,
  mask: (b: number, i: number, j: number) => boolean,
): Float32Array {
  const out = new Float32Array(B * H * S * hd);
  const rep = H / Hkv;
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      const kh = Math.floor(h / rep);
      for (let i = 0; i < S; i++) {
        const scores: number[] = [];
        for (let j = 0; j < T; j++) {
          let s = 0;
          for (let d = 0; d < hd; d++) s += q[((b * H + h) * S + i) * hd + d]! * k[((b * Hkv + kh) * T + j) * hd + d]!;
          scores.push(mask(b, i, j) ? s / Math.sqrt(hd) : -Infinity);
        }
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, c) => a + c);
        for (let d = 0; d < hd; d++) {
          let acc = 0;
          for (let j = 0; j < T; j++) acc += (e[j]! / z) * v[((b * Hkv + kh) * T + j) * hd + d]!;
          out[((b * H + h) * S + i) * hd + d] = acc;
        }
      }
    }
  return out;
}

/**
 * The graph inputs of an attention test: q [B, seq, H*hd], k/v [B, seq, Hkv*hd], past key/value
 * [B, Hkv, past, hd] (names pk, pv) and a bool mask [B, 1, seq, T].
 */
export function attentionInputs(g: Graph, sizes: { H: number; Hkv: number; hd: number }, dims: { seq: Dim; past: Dim }) {
  const { H, Hkv, hd } = sizes;
  const { seq, past } = dims;
  return {
    q: g.input('q', 'float32', ['B', seq, H * hd]),
    k: g.input('k', 'float32', ['B', seq, Hkv * hd]),
    v: g.input('v', 'float32', ['B', seq, Hkv * hd]),
    pk: g.input('pk', 'float32', ['B', Hkv, past, hd]),
    pv: g.input('pv', 'float32', ['B', Hkv, past, hd]),
    mask: g.input('mask', 'bool', ['B', 1, seq, 'T']),
  };
}
