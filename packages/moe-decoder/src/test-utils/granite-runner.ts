import type ort from 'onnxruntime-node';
import type { GraniteTextConfig } from '../granite/config.js';
import { type Feed, f32, i64, run } from './ort.js';

export interface GraniteStepInput {
  B: number;
  S: number;
  ids: number[];
  /** [B, P + S] */
  mask: number[];
  /** [B, S] */
  positionIds: BigInt64Array;
  /** Flattened b*S+s image rows and one [N, D] block per level (absent: N = 0). */
  image?: { positions: number[]; levels: Float32Array[] };
  /** Per layer [B, Hkv, P, hd] from the previous step's present outputs. */
  past?: { key: ort.Tensor; value: ort.Tensor }[];
}

export interface GraniteStepOutput {
  logits: Float32Array;
  present: { key: ort.Tensor; value: ort.Tensor }[];
  raw: Record<string, ort.Tensor>;
  ms: number;
}

/** One run of the standalone Granite decoder model with `numLevels` deepstack inputs. */
export async function graniteStep(
  session: ort.InferenceSession,
  cfg: GraniteTextConfig,
  numLevels: number,
  x: GraniteStepInput,
): Promise<GraniteStepOutput> {
  const { B, S } = x;
  const [D, hkv, hd] = [cfg.hiddenSize, cfg.numKeyValueHeads, cfg.headDim];
  const n = x.image?.positions.length ?? 0;
  const feeds: Record<string, Feed> = {
    input_ids: i64([B, S], x.ids),
    attention_mask: i64([B, x.mask.length / B], x.mask),
    position_ids: i64([B, S], x.positionIds),
  };
  if (numLevels > 0) {
    feeds.image_positions = i64([n], x.image?.positions ?? []);
    for (let k = 0; k < numLevels; k++) feeds[`deepstack_${k}`] = f32([n, D], x.image?.levels[k] ?? new Float32Array(0));
  }
  for (let l = 0; l < cfg.numHiddenLayers; l++) {
    const p = x.past?.[l];
    feeds[`past_key_values.${l}.key`] = p
      ? f32(p.key.dims as number[], p.key.data as Float32Array)
      : f32([B, hkv, 0, hd], new Float32Array(0));
    feeds[`past_key_values.${l}.value`] = p
      ? f32(p.value.dims as number[], p.value.data as Float32Array)
      : f32([B, hkv, 0, hd], new Float32Array(0));
  }
  const t0 = performance.now();
  const out = await run(session, feeds);
  const ms = performance.now() - t0;
  const present = Array.from({ length: cfg.numHiddenLayers }, (_, l) => ({
    key: out[`present.${l}.key`]!,
    value: out[`present.${l}.value`]!,
  }));
  return { logits: out.logits!.data as Float32Array, present, raw: out, ms };
}
