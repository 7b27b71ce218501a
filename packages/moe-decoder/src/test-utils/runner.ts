import type ort from 'onnxruntime-node';
import type { ErnieTextConfig } from '../ernie/config.js';
import { ernieRotaryTables } from '../ernie/rotary.js';
import { ERNIE_DEBUG_OUTPUTS, ERNIE_DECODER_INPUTS } from '../ernie/standalone.js';
import { DECODER_OUTPUTS, presentOutputs } from '../kv-io.js';
import { type Feed, f32, i64, run } from './ort.js';

export interface StepInput {
  B: number;
  S: number;
  ids: number[];
  moeType: number[];
  /** [B, P + S] */
  mask: number[];
  /** [3, B, S] */
  positionIds: BigInt64Array;
  vision?: { positions: number[]; embeds: Float32Array };
  /** Per layer [B, Hkv, P, hd] from the previous step's present outputs. */
  past?: { key: ort.Tensor; value: ort.Tensor }[];
  /** Feeds `logits_to_keep` (a graph built with the `logitsToKeep` option). */
  logitsToKeep?: number;
}

export interface StepOutput {
  logits: Float32Array;
  present: { key: ort.Tensor; value: ort.Tensor }[];
  hidden: Float32Array[];
  /** Every output by name. */
  raw: Record<string, ort.Tensor>;
  ms: number;
}

/** One run of the standalone decoder model: builds the feeds (rotary tables on the host), returns logits and the cache. */
export async function step(session: ort.InferenceSession, cfg: ErnieTextConfig, x: StepInput): Promise<StepOutput> {
  const { B, S } = x;
  const [D, hkv, hd] = [cfg.hiddenSize, cfg.numKeyValueHeads, cfg.headDim];
  const { cos, sin } = ernieRotaryTables(x.positionIds, [3, B, S], cfg);
  const n = x.vision?.positions.length ?? 0;
  const inputs = ERNIE_DECODER_INPUTS.feeds<Feed>({
    input_ids: i64([B, S], x.ids),
    vision_embeds: f32([n, D], x.vision?.embeds ?? new Float32Array(0)),
    vision_positions: i64([n], x.vision?.positions ?? []),
    moe_token_type: i64([B, S], x.moeType),
    attention_mask: i64([B, x.mask.length / B], x.mask),
    rope_cos: f32([B, S, hd / 2], cos),
    rope_sin: f32([B, S, hd / 2], sin),
    past_key_values: pastOrEmpty(x.past, cfg.numHiddenLayers, [B, hkv, 0, hd]),
    ...(x.logitsToKeep !== undefined ? { logits_to_keep: i64([], [x.logitsToKeep]) } : {}),
  });
  const t0 = performance.now();
  const out = await run(session, inputs);
  const ms = performance.now() - t0;
  const present = presentOutputs(out, cfg.numHiddenLayers);
  const hidden: Float32Array[] = [];
  for (let l = 0; out[ERNIE_DEBUG_OUTPUTS.hiddenStates(l)] !== undefined; l++)
    hidden.push(out[ERNIE_DEBUG_OUTPUTS.hiddenStates(l)]!.data as Float32Array);
  return { logits: out[DECODER_OUTPUTS.names.logits]!.data as Float32Array, present, hidden, raw: out, ms };
}

/** Each layer's past as host feeds: the previous step's present outputs, or empty [B, Hkv, 0, hd] on the first step. */
export function pastOrEmpty(past: StepInput['past'], numLayers: number, emptyDims: number[]): { key: Feed; value: Feed }[] {
  const feed = (t: ort.Tensor | undefined) => (t ? f32(t.dims as number[], t.data as Float32Array) : f32(emptyDims, new Float32Array(0)));
  return Array.from({ length: numLayers }, (_, l) => ({ key: feed(past?.[l]?.key), value: feed(past?.[l]?.value) }));
}

/** argmax over the last axis of row r of a [rows, V] block. */
export function argmax(a: Float32Array, r: number, V: number): number {
  let best = 0;
  for (let v = 1; v < V; v++) if (a[r * V + v]! > a[r * V + best]!) best = v;
  return best;
}
