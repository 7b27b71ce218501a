import { DECODER_OUTPUTS, QWEN3VL_DECODER_INPUTS, type Qwen3VlDecoderFeeds } from '@vlmkit/moe-decoder';
import { decodePositionIds } from '@vlmkit/mrope';
import { contract, type FeedValues } from '@vlmkit/onnx-graph';
import { float32, type HostTensor, int64, type KvCache } from '@vlmkit/runtime';
import { qwen3VlPatchDim } from '@vlmkit/vision-tower';
import { resolveDir } from '#platform';
import { readConfigFile } from '../config-file.js';
import type { DecodeStep } from '../decoder-model.js';
import { loadFamily } from '../family.js';
import {
  attentionMask,
  checkNamedInputs,
  GRID_VISION_INPUTS,
  gridPixels,
  gridRows,
  INPUT_IDS,
  PER_TOKEN,
  pixelsNeed,
  tokenIds,
  tokenTypes,
} from '../inputs-check.js';
import type { LoadOptions } from '../model-load.js';
import type { CheckpointSource } from '../model-source.js';
import { FamilyModel, type NamedTensors } from '../pretrained-model.js';
import { qwen3VlCheckpoint } from './checkpoint.js';
import { QWEN3VL_MODEL_TYPES, type Qwen3VLConfig } from './config.js';
import { analyzeQwen3VlPrompt, type Qwen3VlPrompt } from './prompt.js';
import { QWEN3VL_VISION_ENCODER_OUTPUTS, qwen3VlVisionEncoderFeeds } from './vision-encoder.js';

/** The inputs Qwen3-VL reads (HF Qwen3VLForConditionalGeneration.forward's tensors), by their HF names. */
export const QWEN3VL_INPUTS = contract({
  input_ids: INPUT_IDS,
  attention_mask: PER_TOKEN,
  ...GRID_VISION_INPUTS,
  /** 0 text, 1 image pad, 2 video pad (the processor's; HF 5.17 requires it with grids). */
  mm_token_type_ids: PER_TOKEN,
});

/** HF forward kwargs, by their HF names. */
export type Qwen3VlInputs = FeedValues<typeof QWEN3VL_INPUTS.schema, HostTensor>;

/** The names Qwen3-VL reads. */
export const QWEN3VL_INPUT_NAMES = Object.keys(QWEN3VL_INPUTS.schema) as readonly (keyof Qwen3VlInputs)[];

/** Names of Qwen3-VL's `forwardNamed` outputs (what `vlmkit forward` writes). */
export const QWEN3VL_FORWARD_OUTPUTS = {
  logits: DECODER_OUTPUTS.names.logits,
  positionIds: 'position_ids',
  imageEmbeds: 'image_embeds',
  videoEmbeds: 'video_embeds',
  deepstack: (k: number) => `deepstack_${k}`,
} as const;

/** One modality's vision encoder outputs: the merger's tokens [N, D] and each deepstack level's [N, D]. */
interface Qwen3VlModality {
  embeds: HostTensor<'float32'>;
  deepstack: HostTensor<'float32'>[];
}

interface Qwen3VlVision {
  image: Qwen3VlModality | undefined;
  video: Qwen3VlModality | undefined;
}

export interface Qwen3VlForwardOutputs {
  /** [B, S, V] float32. */
  logits: HostTensor<'float32'>;
  /** The mergers' outputs, all images (videos) concatenated in order: [N, D]. */
  imageEmbeds: HostTensor<'float32'> | undefined;
  videoEmbeds: HostTensor<'float32'> | undefined;
  /** Per level, the features the decoder adds, in prompt order (HF's deepstack_visual_embeds): [Ni + Nv, D]. */
  deepstack: HostTensor<'float32'>[];
  /** [3, B, S] int64. */
  positionIds: HostTensor<'int64'>;
}

/** The load options but ERNIE's `reference` and Granite's `adapter`. */
export type Qwen3VlLoadOptions = Omit<LoadOptions, 'reference' | 'adapter'>;

/** Qwen3-VL and Qwen3-VL-MoE: vision encoder (ViT + merger + deepstack mergers) and decoder sessions. */
export class Qwen3VL extends FamilyModel<Qwen3VLConfig, Qwen3VlInputs, Qwen3VlPrompt, Qwen3VlVision> {
  /** Loads a Qwen3-VL or Qwen3-VL-MoE checkpoint directory: its config.json's model_type picks the spec. */
  static async fromPretrained(dir: CheckpointSource, options: Qwen3VlLoadOptions = {}): Promise<Qwen3VL> {
    const { json } = await readConfigFile(typeof dir === 'string' ? resolveDir(dir) : dir);
    const type = QWEN3VL_MODEL_TYPES.find((t) => t === json.model_type) ?? QWEN3VL_MODEL_TYPES[0];
    const { config, loaded, origin } = await loadFamily(qwen3VlCheckpoint(type), dir, options);
    return new Qwen3VL(config, loaded, origin);
  }

  /** Full forward without a cache: logits for every position, the vision outputs, the 3D position ids. */
  async forward(inputs: Qwen3VlInputs): Promise<Qwen3VlForwardOutputs> {
    const { prompt, vision, logits } = await this.prefillAll(inputs);
    return {
      logits,
      imageEmbeds: vision.image?.embeds,
      videoEmbeds: vision.video?.embeds,
      deepstack: this.promptOrder(prompt, vision),
      positionIds: int64(prompt.positionIds, [3, prompt.batch, prompt.seq]),
    };
  }

  protected async namedForward(inputs: Qwen3VlInputs): Promise<NamedTensors> {
    const out = await this.forward(inputs);
    const names = QWEN3VL_FORWARD_OUTPUTS;
    const named: NamedTensors = { [names.logits]: out.logits, [names.positionIds]: out.positionIds };
    if (out.imageEmbeds) named[names.imageEmbeds] = out.imageEmbeds;
    if (out.videoEmbeds) named[names.videoEmbeds] = out.videoEmbeds;
    if (out.imageEmbeds || out.videoEmbeds) {
      out.deepstack.forEach((t, k) => {
        named[names.deepstack(k)] = t;
      });
    }
    return named;
  }

  protected prompt(inputs: Qwen3VlInputs): Qwen3VlPrompt {
    const ids = tokenIds(inputs.input_ids, this.dims.vocabSize);
    checkNamedInputs(QWEN3VL_INPUTS, inputs, 'Qwen3-VL');
    const [B, S] = [ids.batch, ids.seq];
    const [imageGrids, videoGrids] = [gridRows(inputs.image_grid_thw, 'image_grid_thw'), gridRows(inputs.video_grid_thw, 'video_grid_thw')];
    pixelsNeed(inputs.pixel_values, 'pixel_values', 'image_grid_thw', imageGrids.length > 0);
    pixelsNeed(inputs.pixel_values_videos, 'pixel_values_videos', 'video_grid_thw', videoGrids.length > 0);
    return analyzeQwen3VlPrompt(
      {
        inputIds: ids.data,
        shape: [B, S],
        attentionMask: attentionMask(inputs.attention_mask, B, S),
        imageGrids,
        videoGrids,
        mmTokenType: tokenTypes(inputs.mm_token_type_ids, 'mm_token_type_ids', S, [0, 1, 2]),
      },
      this.config,
    );
  }

  protected async encodeVision(inputs: Qwen3VlInputs): Promise<Qwen3VlVision> {
    const run = async (pixelValues: HostTensor | undefined, g: HostTensor | undefined, name: string, gridName: string) => {
      const gs = gridRows(g, gridName);
      if (gs.length === 0) return undefined;
      const pixels = gridPixels(pixelValues, name, gridName, gs, qwen3VlPatchDim(this.config.vision));
      const O = QWEN3VL_VISION_ENCODER_OUTPUTS.names;
      const out = await this.vision.run(qwen3VlVisionEncoderFeeds(pixels.data as Float32Array, gs, this.config));
      const levels = this.config.vision.deepstackVisualIndexes.map((_, k) => out[O.deepstack(k)] as HostTensor<'float32'>);
      return { embeds: out[O.vision_embeds] as HostTensor<'float32'>, deepstack: levels };
    };
    return {
      image: await run(inputs.pixel_values, inputs.image_grid_thw, 'pixel_values', 'image_grid_thw'),
      video: await run(inputs.pixel_values_videos, inputs.video_grid_thw, 'pixel_values_videos', 'video_grid_thw'),
    };
  }

  protected prefillFeeds(p: Qwen3VlPrompt, { image, video }: Qwen3VlVision, cache: KvCache): Qwen3VlDecoderFeeds<HostTensor> {
    const levels = this.config.vision.deepstackVisualIndexes.length;
    const parts = [image, video].filter((x): x is Qwen3VlModality => x !== undefined);
    return QWEN3VL_DECODER_INPUTS.feeds<HostTensor>({
      input_ids: int64(p.inputIds, [p.batch, p.seq]),
      vision_embeds: this.rows(parts.map((x) => x.embeds)),
      vision_positions: int64([...p.imagePositions, ...p.videoPositions], [p.imagePositions.length + p.videoPositions.length]),
      deepstack: Array.from({ length: levels }, (_, k) => this.rows(parts.map((x) => x.deepstack[k]!))),
      attention_mask: int64(p.attentionMask, [p.batch, p.seq]),
      position_ids: int64(p.positionIds, [3, p.batch, p.seq]),
      past_key_values: cache.layers(),
    });
  }

  /** The first generated token's position per row: (real tokens) + rope delta. */
  protected loopPositions(p: Qwen3VlPrompt): number[] {
    const pos = decodePositionIds(p.ropeDeltas, p.realTokens, 1, 'int64').positionIds;
    return Array.from({ length: p.batch }, (_, b) => Number(pos[b]!));
  }

  /** Generated tokens are text: no vision rows, and the position (rope delta included) on all three axes. */
  protected stepFeeds({ tokens, attentionMask, positions, past }: DecodeStep): Qwen3VlDecoderFeeds<HostTensor> {
    const B = tokens.length;
    const pos = positions.map(BigInt);
    return QWEN3VL_DECODER_INPUTS.feeds<HostTensor>({
      input_ids: int64(tokens, [B, 1]),
      vision_embeds: this.rows([]),
      vision_positions: int64([], [0]),
      deepstack: this.config.vision.deepstackVisualIndexes.map(() => this.rows([])),
      attention_mask: attentionMask,
      position_ids: int64([...pos, ...pos, ...pos], [3, B, 1]),
      past_key_values: past,
    });
  }

  /** [sum N, D] rows of `parts` in order. */
  private rows(parts: readonly HostTensor<'float32'>[]): HostTensor<'float32'> {
    const D = this.config.text.hiddenSize;
    const n = parts.reduce((a, x) => a + x.dims[0]!, 0);
    const out = new Float32Array(n * D);
    let o = 0;
    for (const x of parts) {
      out.set(x.data as Float32Array, o);
      o += (x.data as Float32Array).length;
    }
    return float32(out, [n, D]);
  }

  /** Each level's rows ordered by prompt position, as HF joins image and video features (visual_pos_masks). */
  private promptOrder(p: Qwen3VlPrompt, { image, video }: Qwen3VlVision): HostTensor<'float32'>[] {
    const D = this.config.text.hiddenSize;
    const positions = [...p.imagePositions, ...p.videoPositions];
    const order = positions.map((_, i) => i).sort((a, b) => positions[a]! - positions[b]!);
    const parts = [image, video].filter((x): x is Qwen3VlModality => x !== undefined);
    return this.config.vision.deepstackVisualIndexes.map((_, k) => {
      const all = this.rows(parts.map((x) => x.deepstack[k]!)).data as Float32Array;
      const out = new Float32Array(all.length);
      order.forEach((from, to) => {
        out.set(all.subarray(from * D, (from + 1) * D), to * D);
      });
      return float32(out, [positions.length, D]);
    });
  }
}
