import { processorDirFiles } from '#platform';
import { ProcessorError } from './errors.js';
import { PROCESSOR_FAMILIES } from './families/index.js';
import { decodeImage, type ImageSource, type RgbImage } from './image/decode.js';
import { type ModelFiles, readJsonObject } from './model-files.js';
import {
  checkImageProcessorType,
  chooseProcessorFamily,
  int64,
  type ProcessorFamily,
  type ProcessorOutputs,
  type ProcessorRules,
  type VideoInput,
} from './processor-family.js';
import { chatTemplateSource, nestedOrFile } from './processor-files.js';
import { type ApplyChatTemplateOptions, type ChatMessage, ChatTemplate } from './text/chat-template.js';
import { expandPlaceholders } from './text/placeholders.js';
import { Tokenizer, type TokenizerDecodeOptions, type TokenizerOptions } from './text/tokenizer.js';
import type { VideoFrames, VideoSampling } from './video/ernie.js';

export type { ProcessorOutputs, ProcessorTensor, VideoInput } from './processor-family.js';

/** processChat's options: the chat template's, and HF's video sampling kwargs (`fps` or `numFrames`). */
export interface ProcessChatOptions extends ApplyChatTemplateOptions, VideoSampling {}

/**
 * An image: a file path (Node), the file's bytes or a Blob/File, an ImageData or ImageBitmap (browser), or
 * an already decoded 8-bit RGB image (see decodeImage).
 */
export type ImageInput = ImageSource | RgbImage;

export interface ProcessorCallInputs {
  /** The prompt, with one placeholder per image (video) where it goes: usually `applyChatTemplate`'s output. */
  text: string;
  images?: readonly ImageInput[];
  /** Video files (decoded as HF's PyAV backend does, see decodeVideo) or decoded frames and their fps; families with `video` only. */
  videos?: readonly VideoInput[];
  /** How many frames to sample (HF `fps` / `num_frames`); default from video_preprocessor_config.json. */
  videoSampling?: VideoSampling;
  /** Add the tokenizer's special tokens (BOS, ...) as HF's `tokenizer(text)` does. Default true. */
  addSpecialTokens?: boolean;
}

/**
 * A model's processor, from its directory as on the hub: tokenizer.json + tokenizer_config.json,
 * the chat template (chat_template.jinja, else tokenizer_config.json's), preprocessor_config.json
 * and processor_config.json. `process()` returns what HF transformers 5.17's
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
  /** The processor's config.json `model_type` (its family's `modelType`). */
  readonly kind: string;

  private constructor(
    readonly family: ProcessorFamily,
    readonly tokenizer: Tokenizer,
    readonly chatTemplate: ChatTemplate | undefined,
    private readonly rules: ProcessorRules,
  ) {
    this.kind = family.modelType;
  }

  /**
   * The folder's processor: a directory path (Node), or ModelFiles (`urlFiles`, `blobFiles` from
   * @vlmkit/safetensors: a URL or a picked folder, in the browser and Node alike). `families`: the processors to choose among by the folder's files, as HF's
   * AutoProcessor chooses (processor_class, else image_processor_type, else config.json model_type); default
   * every family this package knows (`PROCESSOR_FAMILIES`). A model passes its own family. `options.backend`:
   * the tokenizer library (Tokenizer.fromPretrained).
   */
  static async fromPretrained(
    folder: string | ModelFiles,
    families: ProcessorFamily | readonly ProcessorFamily[] = PROCESSOR_FAMILIES,
    options: TokenizerOptions = {},
  ): Promise<Processor> {
    const files = typeof folder === 'string' ? processorDirFiles(folder) : folder;
    const dir = files.root;
    const tokenizer = await Tokenizer.fromPretrained(files, options);
    const read = (file: string) => readJsonObject(files, file, 'INVALID_PROCESSOR_CONFIG');
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
    const candidates = 'open' in families ? [families] : families;
    const family = chooseProcessorFamily(dir, candidates, processorConfig, preprocessor ?? {}, image.json, modelConfig ?? {});
    checkImageProcessorType(dir, family, image, modelConfig);
    const source = await chatTemplateSource(files, processorConfig);
    const template = source === undefined ? undefined : new ChatTemplate(source, tokenizer.specialTokens);
    const rules = await family.open({ dir, files, tokenizer, processorConfig, preprocessor, modelConfig, image, read });
    return new Processor(family, tokenizer, template, rules);
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
    const videos = inputs.videos ?? [];
    if (videos.length > 0 && !this.family.video) {
      throw new ProcessorError('INVALID_INPUT', `${this.family.name} takes images only, not videos`);
    }
    const media = await this.rules.media(images, videos, inputs.videoSampling);
    const text = expandPlaceholders(inputs.text, media.expansions);
    const ids = await this.tokenizer.encode(text, { addSpecialTokens: inputs.addSpecialTokens ?? true });
    const S = ids.length;
    return {
      input_ids: int64(ids, [1, S]),
      attention_mask: { dtype: 'int64', dims: [1, S], data: new BigInt64Array(S).fill(1n) },
      ...media.tensors,
      ...this.rules.tokenTensors(ids),
    };
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
            `message ${i}, content part ${j}: an audio part; ${this.kind} takes text, images${this.family.video ? ' and videos' : ''} only`,
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

async function toRgb(image: ImageInput): Promise<RgbImage> {
  // An RgbImage's data is a Uint8Array; an ImageData's a Uint8ClampedArray (RGBA), decoded like the rest.
  const data = (image as { data?: unknown }).data;
  if (typeof image === 'object' && !(image instanceof Uint8Array) && data instanceof Uint8Array) return image as RgbImage;
  return decodeImage(image as ImageSource);
}
