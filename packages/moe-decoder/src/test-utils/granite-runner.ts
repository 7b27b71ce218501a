import type ort from 'onnxruntime-node';
import type { GraniteTextConfig } from '../granite/config.js';
import { GRANITE_DECODER_INPUTS } from '../granite/standalone.js';
import { DECODER_OUTPUTS, presentOutputs } from '../kv-io.js';
import { type Feed, f32, i64, run } from './ort.js';
import { pastOrEmpty } from './runner.js';

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
  /** Feeds `logits_to_keep` (a graph built with the `logitsToKeep` option). */
  logitsToKeep?: number;
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
  const inputs = GRANITE_DECODER_INPUTS.feeds<Feed>({
    input_ids: i64([B, S], x.ids),
    attention_mask: i64([B, x.mask.length / B], x.mask),
    position_ids: i64([B, S], x.positionIds),
    past_key_values: pastOrEmpty(x.past, cfg.numHiddenLayers, [B, hkv, 0, hd]),
    image_positions: numLevels > 0 ? i64([n], x.image?.positions ?? []) : undefined,
    deepstack: Array.from({ length: numLevels }, (_, k) => f32([n, D], x.image?.levels[k] ?? new Float32Array(0))),
    ...(x.logitsToKeep !== undefined ? { logits_to_keep: i64([], [x.logitsToKeep]) } : {}),
  });
  const t0 = performance.now();
  const out = await run(session, inputs);
  const ms = performance.now() - t0;
  const present = presentOutputs(out, cfg.numHiddenLayers);
  return { logits: out[DECODER_OUTPUTS.names.logits]!.data as Float32Array, present, raw: out, ms };
}
