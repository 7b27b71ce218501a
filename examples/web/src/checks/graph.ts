import { applyErnieTextRotary, ERNIE_45_VL_TOKENS, ernieRopeIndex, ernieTextRotaryCosSin } from '@vlmkit/mrope';
import { Graph, nn, type SerializedModel, serializeModel, tensorFromArray, Weights } from '@vlmkit/onnx-graph';

export interface F32Feed {
  dims: number[];
  data: Float32Array;
}

/** A graph built by @vlmkit/onnx-graph, serialized in memory, with the feeds it runs on. */
export interface GraphCase {
  name: string;
  model: SerializedModel;
  feeds: Record<string, F32Feed>;
}

/** Deterministic values in [-1, 1) (an LCG: the page and Node must draw the same numbers). */
export function noise(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

/** ERNIE's text rotary on a left-padded batch with an image, as a primitive subgraph or com.microsoft RotaryEmbedding. */
function rotaryCase(impl: 'primitive' | 'RotaryEmbedding'): Promise<GraphCase> {
  const P = ERNIE_45_VL_TOKENS.imageTokenId;
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
  const tab = ernieTextRotaryCosSin(pos, { headDim: hd, ropeTheta: 500000, freqAllocation: 2 });
  const g = new Graph();
  const x = g.input('x', 'float32', ['batch', 'seq', H, hd]);
  const cos = g.input('cos', 'float32', ['batch', 'seq', hd / 2]);
  const sin = g.input('sin', 'float32', ['batch', 'seq', hd / 2]);
  g.output(applyErnieTextRotary(g, x, cos, sin, { layout: 'BSHD', impl }), 'y');
  return finish(`ernie-text-rotary (${impl})`, g, {
    x: { dims: [B, S, H, hd], data: noise(B * S * H * hd, 3) },
    cos: { dims: [B, S, hd / 2], data: tab.cos },
    sin: { dims: [B, S, hd / 2], data: tab.sin },
  });
}

/** RMSNorm, gated MLP and a linear head on initializers: the weights travel inside the serialized bytes. */
function mlpCase(): Promise<GraphCase> {
  const [S, D, I, V] = [7, 32, 48, 40];
  const w = Weights.from({
    'norm.weight': tensorFromArray('float32', [D], noise(D, 11)),
    'mlp.gate_up_proj.weight': tensorFromArray('float32', [2 * I, D], noise(2 * I * D, 12)),
    'mlp.down_proj.weight': tensorFromArray('float32', [D, I], noise(D * I, 13)),
    'lm_head.weight': tensorFromArray('float32', [V, D], noise(V * D, 14)),
    'lm_head.bias': tensorFromArray('float32', [V], noise(V, 15)),
  });
  const g = new Graph();
  const x = g.input('hidden', 'float32', ['seq', D]);
  const h = nn.rmsNorm(g, x, w, 'norm', 1e-6);
  const m = g.add(x, nn.gatedMlp(g, h, w, { gateUp: 'mlp.gate_up_proj', down: 'mlp.down_proj' }, I));
  g.output(nn.linear(g, m, w, 'lm_head', { out: V }), 'logits');
  return finish('rmsnorm + gated mlp + linear (initializers)', g, { hidden: { dims: [S, D], data: noise(S * D, 16) } });
}

async function finish(name: string, g: Graph, feeds: Record<string, F32Feed>): Promise<GraphCase> {
  return { name, model: await serializeModel(g), feeds };
}

/** Every graph case, built afresh (the page and Node each build their own and compare bytes and outputs). */
export function graphCases(): Promise<GraphCase[]> {
  return Promise.all([rotaryCase('primitive'), rotaryCase('RotaryEmbedding'), mlpCase()]);
}

/** SHA-256 of bytes in hex (WebCrypto: the same call in the page and in Node 20). */
export async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}
