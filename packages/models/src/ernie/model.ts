import {
  DECODER_OUTPUTS,
  ERNIE_DECODER_INPUTS,
  type ErnieDecoderFeeds,
  ernieDecodePositions,
  ernieRotaryTables,
} from '@vlmkit/moe-decoder';
import { contract, type FeedValues } from '@vlmkit/onnx-graph';
import { float32, type HostTensor, int64, type KvCache } from '@vlmkit/runtime';
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
import type { LoadOptions, ModelTimings } from '../model-load.js';
import type { CheckpointSource } from '../model-source.js';
import { FamilyModel, type NamedTensors } from '../pretrained-model.js';
import { ERNIE_CHECKPOINT } from './checkpoint.js';
import type { Ernie45VLConfig } from './config.js';
import { analyzeErniePrompt, type ErniePrompt } from './prompt.js';
import { ERNIE_VISION_ENCODER_OUTPUTS, ernieVisionEncoderFeeds } from './vision-encoder.js';

/**
 * The inputs ERNIE-4.5-VL reads (HF Ernie4_5_VLMoeForConditionalGeneration.forward's tensors), by their HF
 * names: the per-token ones have the shape of input_ids; pixel values and grids are checked by their rules.
 */
export const ERNIE_INPUTS = contract({
  input_ids: INPUT_IDS,
  attention_mask: PER_TOKEN,
  ...GRID_VISION_INPUTS,
  /** 0 text, 1 image placeholder, 2 video placeholder (the processor's). */
  mm_token_type_ids: PER_TOKEN,
  moe_mm_token_type_ids: PER_TOKEN,
});

/** HF forward kwargs, by their HF names (a `NamedTensors` as it is). */
export type ErnieInputs = FeedValues<typeof ERNIE_INPUTS.schema, HostTensor>;

/** The names ERNIE-4.5-VL reads. */
export const ERNIE_INPUT_NAMES = Object.keys(ERNIE_INPUTS.schema) as readonly (keyof ErnieInputs)[];

/** Names of ERNIE-4.5-VL's `forwardNamed` outputs (what `vlmkit forward` writes). */
export const ERNIE_FORWARD_OUTPUTS = {
  logits: DECODER_OUTPUTS.names.logits,
  positionIds: 'position_ids',
  imageEmbeds: 'image_embeds',
  videoEmbeds: 'video_embeds',
} as const;

export interface ErnieForwardOutputs {
  /** [B, S, V] float32. */
  logits: HostTensor<'float32'>;
  /** Resampler outputs, all images (videos) concatenated in order: [Nt, D]. */
  imageEmbeds: HostTensor<'float32'> | undefined;
  videoEmbeds: HostTensor<'float32'> | undefined;
  /** [3, B, S] int64. */
  positionIds: HostTensor<'int64'>;
}

/** The load options (model-load.ts `LoadOptions`) but Granite's `adapter`. */
export type ErnieLoadOptions = Omit<LoadOptions, 'adapter'>;

export type ErnieTimings = ModelTimings;

/** The vision encoder's outputs for a prompt: the resampler embeddings of its images and of its videos. */
interface ErnieVision {
  image: HostTensor<'float32'> | undefined;
  video: HostTensor<'float32'> | undefined;
}

/** Baidu ERNIE-4.5-VL (MoE): vision encoder (ViT + resampler) and MoE decoder sessions. */
export class Ernie45VL extends FamilyModel<Ernie45VLConfig, ErnieInputs, ErniePrompt, ErnieVision> {
  static async fromPretrained(dir: CheckpointSource, options: ErnieLoadOptions = {}): Promise<Ernie45VL> {
    const { config, loaded, origin } = await loadFamily(ERNIE_CHECKPOINT, dir, options);
    return new Ernie45VL(config, loaded, origin);
  }

  /** Full forward without a cache: logits for every position, the vision embeddings, the 3D position ids. */
  async forward(inputs: ErnieInputs): Promise<ErnieForwardOutputs> {
    const { prompt, vision, logits } = await this.prefillAll(inputs);
    return {
      logits,
      imageEmbeds: vision.image,
      videoEmbeds: vision.video,
      positionIds: int64(prompt.positionIds, [3, prompt.batch, prompt.seq]),
    };
  }

  protected async namedForward(inputs: ErnieInputs): Promise<NamedTensors> {
    const out = await this.forward(inputs);
    const names = ERNIE_FORWARD_OUTPUTS;
    const named: NamedTensors = { [names.logits]: out.logits, [names.positionIds]: out.positionIds };
    if (out.imageEmbeds) named[names.imageEmbeds] = out.imageEmbeds;
    if (out.videoEmbeds) named[names.videoEmbeds] = out.videoEmbeds;
    return named;
  }

  protected prompt(inputs: ErnieInputs): ErniePrompt {
    const ids = tokenIds(inputs.input_ids, this.dims.vocabSize);
    checkNamedInputs(ERNIE_INPUTS, inputs, 'ERNIE-4.5-VL');
    const [B, S] = [ids.batch, ids.seq];
    const [imageGrids, videoGrids] = [gridRows(inputs.image_grid_thw, 'image_grid_thw'), gridRows(inputs.video_grid_thw, 'video_grid_thw')];
    pixelsNeed(inputs.pixel_values, 'pixel_values', 'image_grid_thw', imageGrids.length > 0);
    pixelsNeed(inputs.pixel_values_videos, 'pixel_values_videos', 'video_grid_thw', videoGrids.length > 0);
    return analyzeErniePrompt(
      {
        inputIds: ids.data,
        shape: [B, S],
        attentionMask: attentionMask(inputs.attention_mask, B, S),
        imageGrids,
        videoGrids,
        mmTokenType: tokenTypes(inputs.mm_token_type_ids, 'mm_token_type_ids', S, [0, 1, 2]),
        moeTokenType: tokenTypes(inputs.moe_mm_token_type_ids, 'moe_mm_token_type_ids', S, [0, 1, 2]),
      },
      this.config,
    );
  }

  protected async encodeVision(inputs: ErnieInputs): Promise<ErnieVision> {
    const run = async (pixelValues: HostTensor | undefined, g: HostTensor | undefined, name: string, gridName: string) => {
      const gs = gridRows(g, gridName);
      pixelsNeed(pixelValues, name, gridName, gs.length > 0);
      if (gs.length === 0) return undefined;
      const pixels = gridPixels(pixelValues, name, gridName, gs, this.config.vision.inChannels * this.config.vision.patchSize ** 2);
      const embeds = ERNIE_VISION_ENCODER_OUTPUTS.names.embeds;
      const out = await this.vision.run(ernieVisionEncoderFeeds(pixels.data, gs, this.config), { outputs: [embeds] });
      return out[embeds] as HostTensor<'float32'>;
    };
    return {
      image: await run(inputs.pixel_values, inputs.image_grid_thw, 'pixel_values', 'image_grid_thw'),
      video: await run(inputs.pixel_values_videos, inputs.video_grid_thw, 'pixel_values_videos', 'video_grid_thw'),
    };
  }

  protected prefillFeeds(p: ErniePrompt, { image, video }: ErnieVision, cache: KvCache): ErnieDecoderFeeds<HostTensor> {
    const D = this.config.text.hiddenSize;
    const parts = [image, video].filter((x): x is HostTensor<'float32'> => x !== undefined);
    const n = parts.reduce((a, x) => a + x.dims[0]!, 0);
    const embeds = new Float32Array(n * D);
    let o = 0;
    for (const x of parts) {
      embeds.set(x.data as Float32Array, o);
      o += (x.data as Float32Array).length;
    }
    const rope = ernieRotaryTables(p.positionIds, [3, p.batch, p.seq], this.config.text);
    return ERNIE_DECODER_INPUTS.feeds<HostTensor>({
      input_ids: int64(p.inputIds, [p.batch, p.seq]),
      vision_embeds: float32(embeds, [n, D]),
      vision_positions: int64([...p.imagePositions, ...p.videoPositions], [n]),
      moe_token_type: int64(p.moeTokenType, [p.batch, p.seq]),
      attention_mask: int64(p.attentionMask, [p.batch, p.seq]),
      rope_cos: float32(rope.cos, rope.shape),
      rope_sin: float32(rope.sin, rope.shape),
      past_key_values: cache.layers(),
    });
  }

  /** The first generated token's position per row: (real tokens) + rope delta (`ernieDecodePositions`, axis t). */
  protected loopPositions(p: ErniePrompt): number[] {
    const pos = ernieDecodePositions(p.ropeDeltas, p.realTokens).positionIds;
    return Array.from({ length: p.batch }, (_, b) => Number(pos[b]!));
  }

  /** Generated tokens are text: text experts, and positions continue at (real tokens so far) + delta on all three axes (`positions`). */
  protected stepFeeds({ tokens, attentionMask, positions, past }: DecodeStep): ErnieDecoderFeeds<HostTensor> {
    const B = tokens.length;
    const D = this.config.text.hiddenSize;
    // Each row's position, the same on all three axes (its rope delta is in it).
    const pos = ernieDecodePositions(new Array<number>(B).fill(0), positions);
    const rope = ernieRotaryTables(pos.positionIds, pos.shape, this.config.text);
    return ERNIE_DECODER_INPUTS.feeds<HostTensor>({
      input_ids: int64(tokens, [B, 1]),
      vision_embeds: float32(new Float32Array(0), [0, D]),
      vision_positions: int64([], [0]),
      moe_token_type: int64(new Array<number>(B).fill(0), [B, 1]),
      attention_mask: attentionMask,
      rope_cos: float32(rope.cos, rope.shape),
      rope_sin: float32(rope.sin, rope.shape),
      past_key_values: past,
    });
  }
}
