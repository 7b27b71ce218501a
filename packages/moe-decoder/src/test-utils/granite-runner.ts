import type ort from 'onnxruntime-node';
import type { GraniteTextConfig } from '../granite/config.js';
import { GRANITE_DECODER_IO, graniteDecoderFeeds } from '../granite/standalone.js';
import { presentOutputs } from '../kv-io.js';
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
  const feeds = graniteDecoderFeeds<Feed>({
    inputIds: i64([B, S], x.ids),
    attentionMask: i64([B, x.mask.length / B], x.mask),
    positionIds: i64([B, S], x.positionIds),
    past: pastOrEmpty(x.past, cfg.numHiddenLayers, [B, hkv, 0, hd]),
    image:
      numLevels > 0
        ? {
            positions: i64([n], x.image?.positions ?? []),
            deepstack: Array.from({ length: numLevels }, (_, k) => f32([n, D], x.image?.levels[k] ?? new Float32Array(0))),
          }
        : undefined,
    ...(x.logitsToKeep !== undefined ? { logitsToKeep: i64([], [x.logitsToKeep]) } : {}),
  });
  const t0 = performance.now();
  const out = await run(session, feeds);
  const ms = performance.now() - t0;
  const present = presentOutputs(out, cfg.numHiddenLayers);
  return { logits: out[GRANITE_DECODER_IO.logits]!.data as Float32Array, present, raw: out, ms };
}
