import { join } from 'node:path';
import { fields } from '@vlmkit/config';
import { ProcessorError } from './errors.js';
import { type AnyresImageProcessorConfig, anyresImageProcessorConfig, processAnyresImages, selectBestResolution } from './image/anyres.js';
import { decodeImage, type RgbImage } from './image/decode.js';
import { type ErnieImageProcessorConfig, ernieImageProcessorConfig, processErnieImages } from './image/ernie.js';
import {
  chatTemplateSource,
  checkDrawOnFramesFont,
  checkImageProcessorType,
  nestedOrFile,
  processorKind,
  readSettings,
  type Settings,
  settingsField,
} from './processor-files.js';
import { type ApplyChatTemplateOptions, type ChatMessage, ChatTemplate } from './text/chat-template.js';
import {
  ernieImageTokenCount,
  ernieVideoTokenCount,
  expandPlaceholders,
  type GraniteTokenCountConfig,
  graniteImageTokenCount,
  mmTokenTypeIds,
  moeMmTokenTypeIds,
  type PlaceholderExpansion,
} from './text/placeholders.js';
import { readJsonObject, Tokenizer, type TokenizerDecodeOptions } from './text/tokenizer.js';
import { decodeVideo } from './video/decode.js';
import {
  type ErnieVideoInputs,
  type ErnieVideoProcessorConfig,
  ernieSampleFrameIndices,
  ernieVideoProcessorConfig,
  processErnieVideos,
  type VideoFrames,
  type VideoSampling,
} from './video/ernie.js';

/** A tensor in host memory, `{ dtype, dims, data }` as @vlmkit/runtime's HostTensor (int64 as BigInt64Array). */
export type ProcessorTensor =
  | { readonly dtype: 'int64'; readonly dims: readonly number[]; readonly data: BigInt64Array }
  | { readonly dtype: 'float32'; readonly dims: readonly number[]; readonly data: Float32Array };
type Int64Tensor = Extract<ProcessorTensor, { dtype: 'int64' }>;
type Float32Tensor = Extract<ProcessorTensor, { dtype: 'float32' }>;

/** What a processor call returns, under the names HF's processor (and the model's forward) uses. */
export interface ProcessorOutputs {
  /** [1, S] token ids, placeholders expanded. */
  input_ids: Int64Tensor;
  /** [1, S], all ones (one unpadded sequence). */
  attention_mask: Int64Tensor;
  /** ERNIE: [patches, 3 * 14 * 14]; Granite: [images, tiles, 3, H, W]. */
  pixel_values?: Float32Tensor;
  /** ERNIE: [images, 3] (t, h, w) in patches. */
  image_grid_thw?: Int64Tensor;
  /** Granite: [images, 2] original (height, width). */
  image_sizes?: Int64Tensor;
  /** ERNIE: [patches, 3 * 2 * 14 * 14]. */
  pixel_values_videos?: Float32Tensor;
  /** ERNIE: [videos, 3]. */
  video_grid_thw?: Int64Tensor;
  /** ERNIE: [1, S] 0 text, 1 image placeholder, 2 video placeholder. */
  mm_token_type_ids?: Int64Tensor;
  /** ERNIE: [1, S] as mm_token_type_ids, vision start/end tokens included. */
  moe_mm_token_type_ids?: Int64Tensor;
}

/** processChat's options: the chat template's, and HF's video sampling kwargs (`fps` or `numFrames`). */
export interface ProcessChatOptions extends ApplyChatTemplateOptions, VideoSampling {}

/** An image: a file path, the file's bytes, or an already decoded 8-bit RGB image. */
export type ImageInput = string | Uint8Array | RgbImage;

/** A video: a file path (decoded with the optional dependency node-av) or decoded frames and their fps. */
export type VideoInput = string | VideoFrames;

export interface ProcessorCallInputs {
  /** The prompt, with one placeholder per image (video) where it goes: usually `applyChatTemplate`'s output. */
  text: string;
  images?: readonly ImageInput[];
  /** ERNIE: video files (decoded as HF's PyAV backend does, see decodeVideo) or decoded frames and their fps. */
  videos?: readonly VideoInput[];
  /** ERNIE: how many frames to sample (HF `fps` / `num_frames`); default from video_preprocessor_config.json. */
  videoSampling?: VideoSampling;
  /** Add the tokenizer's special tokens (BOS, ...) as HF's `tokenizer(text)` does. Default true. */
  addSpecialTokens?: boolean;
}

/** The model families this processor knows, as config.json `model_type`. */
export type ProcessorKind = 'ernie4_5_vl_moe' | 'granite4_vision';

/** How HF's processor class for this model expands placeholders (Ernie4_5_VLMoeProcessor / Granite4VisionProcessor). */
type Family =
  | {
      kind: 'ernie4_5_vl_moe';
      dir: string;
      image: ErnieImageProcessorConfig;
      tokens: {
        image: string;
        imageId: number;
        imageStart?: number;
        imageEnd?: number;
        video?: number;
        videoStart?: number;
        videoEnd?: number;
      };
      /** The video processor settings HF loads; read in full (draw_on_frames refused) when videos are given. */
      video: Settings;
      videoToken: string | undefined;
      /** Where the processor settings contradict config.json (refused when images / videos are processed). */
      conflicts: { image: string[]; video: string[] };
    }
  | {
      kind: 'granite4_vision';
      dir: string;
      tokens: { image: string; imageId: number };
      /** processor_config.json's; HF fails on images without patch_size. */
      count: Omit<GraniteTokenCountConfig, 'patchSize'> & { patchSize: number | undefined };
      image: AnyresImageProcessorConfig;
      conflicts: { image: string[] };
    };

/**
 * A model's processor, from its directory as on the hub: tokenizer.json + tokenizer_config.json,
 * the chat template (chat_template.jinja, else tokenizer_config.json's), preprocessor_config.json
 * and, for Granite, processor_config.json. `process()` returns what HF transformers 5.17's
 * `AutoProcessor.from_pretrained(dir)(text=..., images=...)` returns (PIL backend), as plain typed
 * arrays: same token ids, grids and sizes, pixel values within float32 rounding.
 *
 * ```ts
 * const processor = await Processor.fromPretrained(dir);
 * const prompt = processor.applyChatTemplate(
 *   [{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'What is this?' }] }],
 *   { addGenerationPrompt: true },
 * );
 * const inputs = await processor.process({ text: prompt, images: ['cat.jpg'] });
 * inputs.input_ids.dims; // [1, S]
 * ```
 */
export class Processor {
  private constructor(
    readonly kind: ProcessorKind,
    readonly tokenizer: Tokenizer,
    readonly chatTemplate: ChatTemplate | undefined,
    private readonly family: Family,
  ) {}

  static async fromPretrained(dir: string): Promise<Processor> {
    const tokenizer = await Tokenizer.fromPretrained(dir);
    const read = (file: string) => readJsonObject(join(dir, file), 'INVALID_PROCESSOR_CONFIG');
    const processorConfig = (await read('processor_config.json')) ?? {};
    const preprocessor = await read('preprocessor_config.json');
    const modelConfig = await read('config.json');
    const image = nestedOrFile(processorConfig, 'image_processor', [['preprocessor_config.json', preprocessor]]);
    if (image === undefined) {
      throw new ProcessorError(
        'INVALID_PROCESSOR_CONFIG',
        `${dir}: no image processor settings: processor_config.json has no "image_processor" object and ` +
          "preprocessor_config.json is missing (or not a regular file); HF's AutoImageProcessor refuses such a folder. " +
          "Copy preprocessor_config.json from the model's repository.",
      );
    }
    const kind = processorKind(dir, processorConfig, preprocessor ?? {}, image.json, modelConfig ?? {});
    checkImageProcessorType(dir, kind, image, modelConfig);
    const source = await chatTemplateSource(dir, processorConfig);
    const template = source === undefined ? undefined : new ChatTemplate(source, tokenizer.specialTokens);
    let family: Family;
    if (kind === 'ernie4_5_vl_moe') {
      const videoFile = await read('video_preprocessor_config.json');
      const video = nestedOrFile(processorConfig, 'video_processor', [
        ['video_preprocessor_config.json', videoFile],
        ['preprocessor_config.json', preprocessor],
      ]);
      if (video !== undefined) await checkDrawOnFramesFont(dir, video);
      family = ernieFamily(dir, tokenizer, image, video, modelConfig);
    } else {
      family = graniteFamily(dir, tokenizer, image, processorConfig, modelConfig);
    }
    return new Processor(kind, tokenizer, template, family);
  }

  /** Renders messages to the prompt text, as HF `processor.apply_chat_template(messages, tokenize=False)`. */
  applyChatTemplate(messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
    if (this.chatTemplate === undefined) {
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        'this model directory has no chat template for the processor: no processor_config.json chat_template, chat_template.json ' +
          "or chat_template.jinja (HF's processor never uses tokenizer_config.json's chat_template); add chat_template.jinja.",
      );
    }
    return this.chatTemplate.apply(messages, options);
  }

  /**
   * The model inputs for a prompt and its images, as HF `processor(text=text, images=images)`: the
   * images preprocessed, each placeholder expanded to the image's token count, then tokenized.
   */
  async process(inputs: ProcessorCallInputs): Promise<ProcessorOutputs> {
    const images = await Promise.all((inputs.images ?? []).map(toRgb));
    const f = this.family;
    const out: Partial<ProcessorOutputs> = {};
    const expansions: PlaceholderExpansion[] = [];
    if (f.kind === 'ernie4_5_vl_moe') {
      if (images.length > 0) {
        refuseConflicts(f.conflicts.image, 'images');
        const px = processErnieImages(images, f.image);
        out.pixel_values = { dtype: 'float32', dims: [...px.pixelValuesShape], data: px.pixelValues };
        out.image_grid_thw = int64(
          px.imageGridThw.flatMap((g) => [...g]),
          [images.length, 3],
        );
        expansions.push({
          modality: 'image',
          token: f.tokens.image,
          counts: px.imageGridThw.map((g) => ernieImageTokenCount(g, f.image.mergeSize)),
        });
      }
      const videos = inputs.videos ?? [];
      if (videos.length > 0) {
        if (f.videoToken === undefined || f.tokens.video === undefined) {
          throw new ProcessorError('INVALID_PROCESSOR_CONFIG', 'videos need a video_token in tokenizer_config.json (in the vocabulary)');
        }
        refuseConflicts(f.conflicts.video, 'videos');
        const { json, source } = f.video;
        const cfg = readSettings(f.dir, () => ernieVideoProcessorConfig(json, source));
        const vx = await processErnieVideoInputs(videos, cfg, inputs.videoSampling);
        out.pixel_values_videos = { dtype: 'float32', dims: [...vx.pixelValuesVideosShape], data: vx.pixelValuesVideos };
        out.video_grid_thw = int64(
          vx.videoGridThw.flatMap((g) => [...g]),
          [videos.length, 3],
        );
        const counts = vx.videoGridThw.map((g) => ernieVideoTokenCount(g, cfg.mergeSize, cfg.temporalPatchSize));
        expansions.push({ modality: 'video', token: f.videoToken, counts });
      }
    } else if ((inputs.videos ?? []).length > 0) {
      throw new ProcessorError('INVALID_INPUT', 'Granite 4 Vision takes images only, not videos');
    } else if (images.length > 0) {
      refuseConflicts(f.conflicts.image, 'images');
      const { patchSize } = f.count;
      if (patchSize === undefined) {
        throw new ProcessorError(
          'INVALID_PROCESSOR_CONFIG',
          `${f.dir}: processor_config.json has no patch_size, which HF's Granite4VisionProcessor needs to count image tokens ` +
            "(it fails with a TypeError); add the vision tower's patch_size (config.json vision_config.patch_size).",
        );
      }
      refuseTilesLargerThanPinpoint(f.dir, images, f.image);
      const px = processAnyresImages(images, f.image);
      out.pixel_values = { dtype: 'float32', dims: [...px.pixelValuesShape], data: px.pixelValues };
      out.image_sizes = int64(
        px.imageSizes.flatMap((s) => [...s]),
        [images.length, 2],
      );
      // Granite4VisionProcessor.replace_image_token: the tile size is pixel_values' last two dims.
      const tile = [px.pixelValuesShape[3], px.pixelValuesShape[4]] as const;
      const counts = px.imageSizes.map((size) =>
        graniteImageTokenCount(size, selectBestResolution(size, f.image.imageGridPinpoints), tile, { ...f.count, patchSize }),
      );
      expansions.push({ modality: 'image', token: f.tokens.image, counts });
    }
    const text = expandPlaceholders(inputs.text, expansions);
    const ids = await this.tokenizer.encode(text, { addSpecialTokens: inputs.addSpecialTokens ?? true });
    const S = ids.length;
    const result: ProcessorOutputs = {
      input_ids: int64(ids, [1, S]),
      attention_mask: { dtype: 'int64', dims: [1, S], data: new BigInt64Array(S).fill(1n) },
      ...out,
    };
    if (f.kind === 'ernie4_5_vl_moe') {
      const t = f.tokens;
      // Ernie4_5_VLMoeProcessorKwargs: return_mm_token_type_ids=True; __call__ adds the MoE ones.
      result.mm_token_type_ids = { dtype: 'int64', dims: [1, S], data: mmTokenTypeIds(ids, { image: t.imageId, video: t.video }) };
      result.moe_mm_token_type_ids = {
        dtype: 'int64',
        dims: [1, S],
        data: moeMmTokenTypeIds(ids, {
          image: t.imageId,
          imageStart: t.imageStart,
          imageEnd: t.imageEnd,
          video: t.video,
          videoStart: t.videoStart,
          videoEnd: t.videoEnd,
        }),
      };
    }
    return result;
  }

  /**
   * Templates the conversation and processes it with the images its `{ type: 'image' }` parts name
   * (`image`, `url` or `path`: a file path, bytes or a decoded image), as HF
   * `processor.apply_chat_template(messages, tokenize=True, return_dict=True)`: special tokens are
   * not added again when the prompt already starts with the BOS token.
   */
  async processChat(messages: readonly ChatMessage[], options: ProcessChatOptions = {}): Promise<ProcessorOutputs> {
    // HF's processor.apply_chat_template reads the first message (IndexError on none) and loads audio parts,
    // which these models cannot take: both refused by name rather than rendered without them.
    if (Array.isArray(messages) && messages.length === 0)
      throw new ProcessorError('INVALID_INPUT', 'processChat needs at least one message; got none');
    messages.forEach((m, i) => {
      if (!Array.isArray(m?.content)) return;
      m.content.forEach((part, j) => {
        if (part?.type === 'audio') {
          throw new ProcessorError(
            'INVALID_INPUT',
            `message ${i}, content part ${j}: an audio part; ${this.kind} takes text, images${this.kind === 'ernie4_5_vl_moe' ? ' and videos' : ''} only`,
          );
        }
      });
    });
    const text = this.applyChatTemplate(messages, options);
    const images: ImageInput[] = [];
    const videos: VideoInput[] = [];
    for (const m of messages) {
      if (typeof m.content === 'string') continue;
      for (const part of m.content) {
        if (part.type === 'image') {
          const src = part.image ?? part.url ?? part.path;
          if (src === undefined) throw new ProcessorError('INVALID_INPUT', "an { type: 'image' } part needs `image`, `url` or `path`");
          images.push(src as ImageInput);
        } else if (part.type === 'video') {
          const v = part.video ?? part.path ?? part.url;
          if (typeof v !== 'string' && (v === null || typeof v !== 'object' || !Array.isArray((v as VideoFrames).frames))) {
            throw new ProcessorError(
              'INVALID_INPUT',
              "a { type: 'video' } part needs `video`, `path` or `url`: a file path or `{ frames, fps }` (decoded RGB frames)",
            );
          }
          videos.push(v as VideoInput);
        }
      }
    }
    const bos = this.tokenizer.specialTokens.bos_token;
    const videoSampling: VideoSampling = {};
    if (options.fps !== undefined) videoSampling.fps = options.fps;
    if (options.numFrames !== undefined) videoSampling.numFrames = options.numFrames;
    return this.process({ text, images, videos, videoSampling, addSpecialTokens: !(bos !== undefined && text.startsWith(bos)) });
  }

  /** Ids to text (HF `processor.decode`, i.e. the tokenizer's). */
  decode(ids: readonly number[] | ArrayLike<number | bigint>, options: TokenizerDecodeOptions = {}): Promise<string> {
    return this.tokenizer.decode(ids, options);
  }
}

/**
 * Granite4VisionProcessor._get_number_of_features divides by `(best pinpoint height // tile
 * height) * patches`: a pinpoint lower than the tile (crop_size) makes HF raise ZeroDivisionError
 * for every image that selects it. Checked before any pixel is processed.
 */
function refuseTilesLargerThanPinpoint(dir: string, images: readonly RgbImage[], config: AnyresImageProcessorConfig): void {
  const tile = config.cropSize[0];
  for (const image of images) {
    const best = selectBestResolution([image.height, image.width], config.imageGridPinpoints);
    if (best[0] < tile) {
      throw new ProcessorError(
        'INVALID_PROCESSOR_CONFIG',
        `${dir}: a ${image.width}x${image.height} image is tiled into the image_grid_pinpoints entry [${best[0]}, ${best[1]}], ` +
          `lower than the crop_size tile (${tile}); HF's Granite4VisionProcessor fails on it (ZeroDivisionError). ` +
          'Make every pinpoint a multiple of crop_size.',
      );
    }
  }
}

function int64(values: readonly number[], dims: number[]): Int64Tensor {
  return { dtype: 'int64', dims, data: BigInt64Array.from(values, (v) => BigInt(v)) };
}

/**
 * Videos as HF's video processor takes them: decoded frames are sampled by processErnieVideos; a
 * file is decoded as fetch_videos does it, the sampled indices computed from the container's frame
 * count and rate first (sample_indices_fn) and only those frames decoded, then not sampled again.
 */
async function processErnieVideoInputs(
  videos: readonly VideoInput[],
  config: ErnieVideoProcessorConfig,
  sampling: VideoSampling | undefined,
): Promise<ErnieVideoInputs> {
  if (videos.every((v) => typeof v !== 'string')) return processErnieVideos(videos as VideoFrames[], config, sampling);
  const parts: ErnieVideoInputs[] = [];
  for (const v of videos) {
    if (typeof v !== 'string') {
      parts.push(processErnieVideos([v], config, sampling));
      continue;
    }
    const decoded = await decodeVideo(
      v,
      config.doSampleFrames ? { frames: (info) => ernieSampleFrameIndices(info.totalFrames, info.fps, config, sampling) } : {},
    );
    parts.push(processErnieVideos([decoded], { ...config, doSampleFrames: false }, sampling));
  }
  const pixelValuesVideos = new Float32Array(parts.reduce((n, p) => n + p.pixelValuesVideos.length, 0));
  let offset = 0;
  for (const p of parts) {
    pixelValuesVideos.set(p.pixelValuesVideos, offset);
    offset += p.pixelValuesVideos.length;
  }
  return {
    pixelValuesVideos,
    pixelValuesVideosShape: [parts.reduce((n, p) => n + p.pixelValuesVideosShape[0], 0), parts[0]!.pixelValuesVideosShape[1]],
    videoGridThw: parts.flatMap((p) => p.videoGridThw),
  };
}

async function toRgb(image: ImageInput): Promise<RgbImage> {
  if (typeof image === 'string' || image instanceof Uint8Array) return decodeImage(image);
  return image;
}

/** A special token of tokenizer_config.json and its id; required ones throw naming the field. */
function tokenId(tokenizer: Tokenizer, name: string): number | undefined {
  return tokenizer.specialTokenId(name);
}

function requiredToken(tokenizer: Tokenizer, name: string, model: string): { text: string; id: number } {
  const text = tokenizer.specialTokens[name];
  const id = tokenizer.specialTokenId(name);
  if (text === undefined || id === undefined) {
    throw new ProcessorError(
      'TOKENIZER_ERROR',
      `${model}: tokenizer_config.json has no ${name} (or it is not in the vocabulary); HF's processor reads tokenizer.${name}`,
    );
  }
  return { text, id };
}

function ernieFamily(
  dir: string,
  tokenizer: Tokenizer,
  imageSettings: Settings,
  video: Settings | undefined,
  modelConfig: Record<string, unknown> | undefined,
): Family {
  const image = requiredToken(tokenizer, 'image_token', 'ERNIE-4.5-VL');
  const config = readSettings(dir, () => ernieImageProcessorConfig(imageSettings.json, imageSettings.source));
  if (video === undefined) {
    throw new ProcessorError(
      'INVALID_PROCESSOR_CONFIG',
      `${dir}: no video processor settings: processor_config.json has no "video_processor" object and neither ` +
        "video_preprocessor_config.json nor preprocessor_config.json exists; HF's Ernie4_5_VLMoeProcessor refuses such a folder.",
    );
  }
  // HF builds the video processor when loading, so its settings are checked now; draw_on_frames,
  // which only vlmkit refuses, is left to the first video.
  const videoConfig = readSettings(dir, () => ernieVideoProcessorConfig({ ...video.json, draw_on_frames: false }, video.source));
  const tokens = {
    image: image.text,
    imageId: image.id,
    imageStart: tokenId(tokenizer, 'image_start_token'),
    imageEnd: tokenId(tokenizer, 'image_end_token'),
    video: tokenId(tokenizer, 'video_token'),
    videoStart: tokenId(tokenizer, 'video_start_token'),
    videoEnd: tokenId(tokenizer, 'video_end_token'),
  };
  const vision = objectField(modelConfig, 'vision_config');
  const imageAt = (field: string) => settingsField(imageSettings.source, field);
  const videoAt = (field: string) => settingsField(video.source, field);
  return {
    kind: 'ernie4_5_vl_moe',
    dir,
    image: config,
    tokens,
    video,
    videoToken: tokenizer.specialTokens.video_token,
    conflicts: {
      image: conflicts(dir, modelConfig, [
        [imageAt('patch_size'), config.patchSize, 'vision_config.patch_size', vision?.patch_size],
        [imageAt('merge_size'), config.mergeSize, 'vision_config.spatial_merge_size', vision?.spatial_merge_size],
        // A row of pixel_values holds 3 * temporal_patch_size * patch^2 values; the patch embedding takes in_channels * patch^2.
        [`3 * ${imageAt('temporal_patch_size')}`, 3 * config.temporalPatchSize, 'vision_config.in_channels', vision?.in_channels],
        ['the image_token id (tokenizer_config.json)', image.id, 'image_token_id', modelConfig?.image_token_id],
      ]),
      video: conflicts(dir, modelConfig, [
        [videoAt('patch_size'), videoConfig.patchSize, 'vision_config.patch_size', vision?.patch_size],
        [videoAt('merge_size'), videoConfig.mergeSize, 'vision_config.spatial_merge_size', vision?.spatial_merge_size],
        ['the video_token id (tokenizer_config.json)', tokens.video, 'video_token_id', modelConfig?.video_token_id],
      ]),
    },
  };
}

/**
 * Granite4VisionProcessor's settings come from processor_config.json alone (patch_size,
 * vision_feature_select_strategy, downsample_rate, num_additional_image_tokens, image_token), as
 * HF reads them; config.json is only compared with them.
 */
function graniteFamily(
  dir: string,
  tokenizer: Tokenizer,
  imageSettings: Settings,
  processorConfig: Record<string, unknown>,
  modelConfig: Record<string, unknown> | undefined,
): Family {
  const p = fields(processorConfig, 'processor_config.json');
  const count = readSettings(dir, () => ({
    patchSize: p.optionalInt('patch_size', { max: 4096 }),
    // HF: anything but 'default' (also none) keeps every feature.
    visionFeatureSelectStrategy: p.optionalStr('vision_feature_select_strategy') ?? 'full',
    downsampleRate: p.optionalStr('downsample_rate'),
    numAdditionalImageTokens: p.optionalInt('num_additional_image_tokens', { min: 0, max: 4096 }) ?? 0,
  }));
  // HF: tokenizer.image_token when the tokenizer has one, else the processor's (default "<image>").
  const imageText = tokenizer.specialTokens.image_token ?? readSettings(dir, () => p.optionalStr('image_token')) ?? '<image>';
  const imageId = tokenizer.tokenToId(imageText);
  if (imageId === undefined)
    throw new ProcessorError('TOKENIZER_ERROR', `Granite 4 Vision: the image token ${imageText} is not in the vocabulary`);
  const image = readSettings(dir, () => anyresImageProcessorConfig(imageSettings.json, imageSettings.source));
  const vision = objectField(modelConfig, 'vision_config');
  const strategy = modelConfig?.vision_feature_select_strategy;
  return {
    kind: 'granite4_vision',
    dir,
    tokens: { image: imageText, imageId },
    count,
    // Granite4VisionProcessorKwargs._defaults pass do_pad=True to the image processor on every call.
    image: { ...image, doPad: true },
    conflicts: {
      image: conflicts(dir, modelConfig, [
        ['processor_config.json patch_size', count.patchSize, 'vision_config.patch_size', vision?.patch_size],
        [
          'processor_config.json vision_feature_select_strategy',
          featureSelection(count.visionFeatureSelectStrategy),
          'vision_feature_select_strategy',
          strategy === undefined ? undefined : featureSelection(strategy),
        ],
        [
          'processor_config.json downsample_rate',
          fraction(count.downsampleRate),
          'downsample_rate',
          fraction(modelConfig?.downsample_rate),
        ],
        [
          settingsField(imageSettings.source, 'image_grid_pinpoints'),
          JSON.stringify(image.imageGridPinpoints),
          'image_grid_pinpoints',
          modelConfig?.image_grid_pinpoints === undefined ? undefined : JSON.stringify(modelConfig.image_grid_pinpoints),
        ],
        ['the image token id', imageId, 'image_token_index', modelConfig?.image_token_index],
      ]),
    },
  };
}

function objectField(json: Record<string, unknown> | undefined, key: string): Record<string, unknown> | undefined {
  const v = json?.[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** What a vision_feature_select_strategy does to the token count: only 'default' drops a feature (HF). */
function featureSelection(strategy: unknown): string {
  return strategy === 'default' ? "'default' (one feature dropped)" : "not 'default' (every feature kept)";
}

/** A fraction string ('2/4') as a number, for comparing; undefined when absent or unreadable. */
function fraction(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^\s*(\d+)\s*(?:\/\s*(\d+))?\s*$/.exec(v);
  return m === null || Number(m[2] ?? 1) === 0 ? undefined : Number(m[1]) / Number(m[2] ?? 1);
}

/**
 * The processor settings that contradict what config.json states (fields it leaves out are not
 * compared): [processor field, its value, config.json field, its value]. Each one makes the
 * placeholder count or pixel rows disagree with what the model computes from its weights and
 * config, which the model would only report as bad inputs.
 */
function conflicts(
  dir: string,
  modelConfig: Record<string, unknown> | undefined,
  pairs: readonly (readonly [string, unknown, string, unknown])[],
): string[] {
  if (modelConfig === undefined) return [];
  return pairs
    .filter(([, ours, , theirs]) => ours !== undefined && theirs !== undefined && ours !== theirs)
    .map(
      ([field, ours, key, theirs]) =>
        `${dir}: ${field} is ${JSON.stringify(ours)} but config.json ${key} is ${JSON.stringify(theirs)}; ` +
        "the processor's output would not fit the model. Make the processor settings agree with config.json.",
    );
}

function refuseConflicts(list: readonly string[], what: string): void {
  if (list.length > 0) throw new ProcessorError('INVALID_PROCESSOR_CONFIG', `cannot process ${what}: ${list.join(' Also: ')}`);
}
