import { DECODER_OUTPUTS, GRANITE_DECODER_INPUTS, type GraniteDecoderFeeds, graniteDecodePositions } from '@vlmkit/moe-decoder';
import { contract, type FeedValues } from '@vlmkit/onnx-graph';
import { float32, type HostTensor, int64, type KvCache } from '@vlmkit/runtime';
import type { DecodeStep } from '../decoder-model.js';
import { ModelError } from '../errors.js';
import { loadFamily } from '../family.js';
import {
  attentionMask,
  checkNamedInputs,
  INPUT_IDS,
  intRows,
  PER_TOKEN,
  perToken,
  pixelsFor,
  pixelsNeed,
  tokenIds,
} from '../inputs-check.js';
import type { LoadOptions } from '../model-load.js';
import type { CheckpointSource } from '../model-source.js';
import { FamilyModel, type NamedTensors } from '../pretrained-model.js';
import type { Size } from './anyres.js';
import { GRANITE_CHECKPOINT } from './checkpoint.js';
import type { Granite4VisionConfig } from './config.js';
import { analyzeGranitePrompt, type GranitePrompt } from './prompt.js';
import { GRANITE_VISION_ENCODER_OUTPUTS, graniteVisionEncoderFeeds } from './vision-encoder.js';

/**
 * The inputs Granite 4 Vision reads (HF Granite4VisionForConditionalGeneration.forward's tensors), by their HF
 * names: the per-token ones have the shape of input_ids; pixel values and sizes are checked by their rules.
 */
export const GRANITE_INPUTS = contract({
  input_ids: INPUT_IDS,
  attention_mask: PER_TOKEN,
  /** [images, tiles, C, S, S] (zero-padded tiles, as HF's processor) or [tiles, C, S, S]. */
  pixel_values: ['float32', ['images', 'tiles', 'channels', 'image_size', 'image_size'], { optional: true, checkedBy: 'pixelsFor' }],
  /** (height, width) of the original images. */
  image_sizes: ['int64', ['images', 2], { optional: true, checkedBy: 'intRows' }],
  /** Default: cumsum(attention_mask) - 1, padding at 1 (what HF generate uses). */
  position_ids: PER_TOKEN,
});

/** HF forward kwargs, by their HF names (a `NamedTensors` as it is). */
export type GraniteInputs = FeedValues<typeof GRANITE_INPUTS.schema, HostTensor>;

/** The names Granite 4 Vision reads. */
export const GRANITE_INPUT_NAMES = Object.keys(GRANITE_INPUTS.schema) as readonly (keyof GraniteInputs)[];

/** Names of Granite 4 Vision's `forwardNamed` outputs: level k is named as the vision encoder's output. */
export const GRANITE_FORWARD_OUTPUTS = {
  logits: DECODER_OUTPUTS.names.logits,
  deepstack: GRANITE_VISION_ENCODER_OUTPUTS.names.deepstack,
} as const;

export interface GraniteForwardOutputs {
  logits: HostTensor<'float32'>;
  /** Per injected level k (layerwise in deepstack_layer_map order, then spatial): [num_image_tokens, D], as packed for injection. */
  deepstack: HostTensor<'float32'>[];
}

/** The load options (model-load.ts `LoadOptions`) but ERNIE's `reference`. */
export type GraniteLoadOptions = Omit<LoadOptions, 'reference'>;

/** IBM Granite 4 Vision: vision encoder (SigLIP + window Q-Former projectors + anyres packing) and deepstack decoder sessions. */
export class Granite4Vision extends FamilyModel<Granite4VisionConfig, GraniteInputs, GranitePrompt, HostTensor<'float32'>[]> {
  static async fromPretrained(dir: CheckpointSource, options: GraniteLoadOptions = {}): Promise<Granite4Vision> {
    const { config, loaded, origin } = await loadFamily(GRANITE_CHECKPOINT, dir, options);
    return new Granite4Vision(config, loaded, origin);
  }

  async forward(inputs: GraniteInputs): Promise<GraniteForwardOutputs> {
    const { vision: deepstack, logits } = await this.prefillAll(inputs);
    return { logits, deepstack };
  }

  protected async namedForward(inputs: GraniteInputs): Promise<NamedTensors> {
    const out = await this.forward(inputs);
    const named: NamedTensors = { [GRANITE_FORWARD_OUTPUTS.logits]: out.logits };
    out.deepstack.forEach((t, k) => {
      named[GRANITE_FORWARD_OUTPUTS.deepstack(k)] = t;
    });
    return named;
  }

  protected prompt(inputs: GraniteInputs): GranitePrompt {
    const ids = tokenIds(inputs.input_ids, this.dims.vocabSize);
    checkNamedInputs(GRANITE_INPUTS, inputs, 'Granite 4 Vision');
    return analyzeGranitePrompt(
      {
        inputIds: ids.data,
        shape: [ids.batch, ids.seq],
        attentionMask: attentionMask(inputs.attention_mask, ids.batch, ids.seq),
        positionIds: perToken(inputs.position_ids),
      },
      this.config,
    );
  }

  protected async encodeVision(inputs: GraniteInputs, prompt: GranitePrompt): Promise<HostTensor<'float32'>[]> {
    const placeholders = prompt.imagePositions.length;
    const D = this.config.text.hiddenSize;
    const sizes = imageSizes(inputs.image_sizes);
    if (sizes.length === 0) {
      pixelsNeed(inputs.pixel_values, 'pixel_values', 'image_sizes', false);
      if (placeholders > 0)
        throw new ModelError(
          'PLACEHOLDER_MISMATCH',
          `the prompt has ${placeholders} image tokens (id ${this.config.tokens.image}) but no pixel_values / image_sizes were given`,
        );
      return this.config.levels.map(() => float32(new Float32Array(0), [0, D]));
    }
    const pixels = pixelsFor(inputs.pixel_values, 'pixel_values', 'image_sizes');
    const { feeds, plan } = graniteVisionEncoderFeeds(pixels, sizes, this.config);
    const features = plan.indices.length;
    if (features !== placeholders) {
      throw new ModelError(
        'PLACEHOLDER_MISMATCH',
        `Image features and image tokens do not match: the prompt has ${placeholders} image tokens (id ${this.config.tokens.image}) but image_sizes (${sizes.map((s) => s.join('x')).join(', ')}) pack into ${features} features (${plan.tokensPerImage.join(' + ')}). Build input_ids with the processor's token count per image.`,
      );
    }
    const out = await this.vision.run(feeds);
    return this.config.levels.map((l) => out[GRANITE_VISION_ENCODER_OUTPUTS.names.deepstack(l.k)] as HostTensor<'float32'>);
  }

  protected prefillFeeds(p: GranitePrompt, deepstack: readonly HostTensor[], cache: KvCache): GraniteDecoderFeeds<HostTensor> {
    return GRANITE_DECODER_INPUTS.feeds<HostTensor>({
      input_ids: int64(p.inputIds, [p.batch, p.seq]),
      attention_mask: int64(p.attentionMask, [p.batch, p.seq]),
      position_ids: int64(p.positionIds, [p.batch, p.seq]),
      past_key_values: cache.layers(),
      image_positions: int64(p.imagePositions, [p.imagePositions.length]),
      deepstack,
    });
  }

  /** The first generated token's position per row: its count of real tokens (`graniteDecodePositions`). */
  protected loopPositions(p: GranitePrompt): number[] {
    return Array.from(graniteDecodePositions(p.realTokens), Number);
  }

  /** Generated tokens are text: no image rows, and each row continues at its count of real tokens so far. */
  protected stepFeeds({ tokens, attentionMask, positions, past }: DecodeStep): GraniteDecoderFeeds<HostTensor> {
    const B = tokens.length;
    const D = this.config.text.hiddenSize;
    return GRANITE_DECODER_INPUTS.feeds<HostTensor>({
      input_ids: int64(tokens, [B, 1]),
      attention_mask: attentionMask,
      position_ids: int64(positions, [B, 1]),
      past_key_values: past,
      image_positions: int64([], [0]),
      deepstack: this.config.levels.map(() => float32(new Float32Array(0), [0, D])),
    });
  }
}

/** `image_sizes`: int64 [N, 2] rows (height, width). */
function imageSizes(t: HostTensor | undefined): Size[] {
  return intRows(t, 'image_sizes', ['height', 'width']).map(([h, w]) => [h!, w!] as const);
}
