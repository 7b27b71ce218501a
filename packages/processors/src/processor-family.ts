// What differs between the model families' processors (HF has one processor class per model): the names that
// choose a family for a folder, and the rules that turn its images and videos into pixel tensors and
// placeholder counts. The Processor class (processor.ts) is the same for every family.
import { ProcessorError } from './errors.js';
import type { RgbImage } from './image/decode.js';
import type { ModelFiles } from './model-files.js';
import { type Settings, settingsField } from './processor-files.js';
import type { PlaceholderExpansion } from './text/placeholders.js';
import type { Tokenizer } from './text/tokenizer.js';
import type { VideoFrames, VideoSampling } from './video/ernie.js';

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
  /** ERNIE: [patches, 3 * 14 * 14]; Qwen3-VL: [patches, 3 * 2 * 16 * 16]; Granite: [images, tiles, 3, H, W]. */
  pixel_values?: Float32Tensor;
  /** ERNIE, Qwen3-VL: [images, 3] (t, h, w) in patches. */
  image_grid_thw?: Int64Tensor;
  /** Granite: [images, 2] original (height, width). */
  image_sizes?: Int64Tensor;
  /** ERNIE: [patches, 3 * 2 * 14 * 14]; Qwen3-VL: [patches, 3 * 2 * 16 * 16]. */
  pixel_values_videos?: Float32Tensor;
  /** ERNIE: [videos, 3] (frames, h, w); Qwen3-VL: [videos, 3] (temporal patches, h, w). */
  video_grid_thw?: Int64Tensor;
  /** ERNIE, Qwen3-VL: [1, S] 0 text, 1 image placeholder, 2 video placeholder. */
  mm_token_type_ids?: Int64Tensor;
  /** ERNIE: [1, S] as mm_token_type_ids, vision start/end tokens included. */
  moe_mm_token_type_ids?: Int64Tensor;
}

/** A video: a file path (decoded with the optional dependency node-av) or decoded frames and their fps. */
export type VideoInput = string | VideoFrames;

/** A model family's processor: how HF picks it for a folder, and how it reads the folder's settings. */
export interface ProcessorFamily {
  /** config.json `model_type` HF's AutoProcessor maps to this processor; the processor's `kind`. */
  readonly modelType: string;
  /** The model's name in messages ('Granite 4 Vision'). */
  readonly name: string;
  /** HF's processor class (`processor_class` of processor_config.json or preprocessor_config.json). */
  readonly processorClass: string;
  /** The image_processor_type values HF 5.17 resolves to this family's image processor (any backend). */
  readonly imageProcessorTypes: RegExp;
  /**
   * An image_processor_type prefix that names this family alone (a class no other family's processor uses);
   * undefined when its image processor is shared (Granite's LlavaNextImageProcessor).
   */
  readonly imageProcessorPrefix: string | undefined;
  /** Whether the processor takes videos. */
  readonly video: boolean;
  /** Reads the family's settings from the folder (checked now, as HF does when loading). */
  open(folder: ProcessorFolder): Promise<ProcessorRules>;
}

/** What every family's processor reads of a model folder. */
export interface ProcessorFolder {
  /** The folder as the user named it (ModelFiles.root), for messages. */
  readonly dir: string;
  /** Its files. */
  readonly files: ModelFiles;
  readonly tokenizer: Tokenizer;
  readonly processorConfig: Record<string, unknown>;
  readonly preprocessor: Record<string, unknown> | undefined;
  /** config.json, compared with the processor settings. */
  readonly modelConfig: Record<string, unknown> | undefined;
  /** The image processor settings HF loads. */
  readonly image: Settings;
  /** Another JSON file of the folder (undefined when absent or not a regular file). */
  read(file: string): Promise<Record<string, unknown> | undefined>;
}

/** The media of one call as the model takes them: pixel tensors, and each placeholder's token count. */
export interface MediaInputs {
  tensors: Partial<ProcessorOutputs>;
  expansions: PlaceholderExpansion[];
}

/** One folder's processing rules. */
export interface ProcessorRules {
  /** The images and videos processed (videos only reach families with `video`). */
  media(images: readonly RgbImage[], videos: readonly VideoInput[], sampling: VideoSampling | undefined): Promise<MediaInputs>;
  /** Tensors computed from the final token ids (ERNIE's mm_token_type_ids); empty for other families. */
  tokenTensors(ids: readonly number[]): Partial<ProcessorOutputs>;
}

/**
 * Which processor HF's AutoProcessor would build: processor_config.json's processor_class, else the
 * image processor type in preprocessor_config.json, else config.json's model_type.
 */
export function chooseProcessorFamily(
  dir: string,
  families: readonly ProcessorFamily[],
  processorConfig: Record<string, unknown>,
  preprocessor: Record<string, unknown>,
  imageSettings: Record<string, unknown>,
  modelConfig: Record<string, unknown>,
): ProcessorFamily {
  const cls = processorConfig.processor_class ?? preprocessor.processor_class;
  const imageType = imageSettings.image_processor_type;
  // Processors shared by model types (Qwen3-VL's, dense and MoE): the folder's model type decides which.
  const family =
    families.find((f) => f.processorClass === cls && f.modelType === modelConfig.model_type) ??
    families.find((f) => f.processorClass === cls) ??
    families.find(
      (f) => f.imageProcessorPrefix !== undefined && typeof imageType === 'string' && imageType.startsWith(f.imageProcessorPrefix),
    ) ??
    families.find((f) => f.modelType === modelConfig.model_type);
  if (family !== undefined) return family;
  throw new ProcessorError(
    'INVALID_PROCESSOR_CONFIG',
    `${dir}: cannot tell which processor to use (processor_class ${JSON.stringify(cls)}, image_processor_type ` +
      `${JSON.stringify(imageType)}, model_type ${JSON.stringify(modelConfig.model_type)}); supported: ` +
      families.map((f) => `${f.processorClass} (${f.modelType})`).join(', '),
  );
}

/**
 * AutoImageProcessor builds the class `image_processor_type` names, else the one config.json's
 * model_type maps to, else refuses. Another family's class would process the images its own way.
 */
export function checkImageProcessorType(
  dir: string,
  family: ProcessorFamily,
  image: Settings,
  modelConfig: Record<string, unknown> | undefined,
): void {
  const type = image.json.image_processor_type;
  const field = settingsField(image.source, 'image_processor_type');
  const kind = family.modelType;
  if (type === undefined || type === null) {
    if (modelConfig?.model_type === kind) return;
    throw new ProcessorError(
      'INVALID_PROCESSOR_CONFIG',
      `${dir}: ${field} is missing and there is no config.json model_type to choose the image processor by; ` +
        "HF's AutoImageProcessor refuses such a folder. Add the image_processor_type of the model's repository.",
    );
  }
  if (typeof type !== 'string' || !family.imageProcessorTypes.test(type)) {
    throw new ProcessorError(
      'INVALID_PROCESSOR_CONFIG',
      `${dir}: ${field} is ${JSON.stringify(type)}, not the ${kind} image processor (${family.imageProcessorTypes.source}); ` +
        'HF would build that class instead, which vlmkit does not reproduce.',
    );
  }
}

export function int64(values: readonly number[], dims: number[]): Int64Tensor {
  return { dtype: 'int64', dims, data: BigInt64Array.from(values, (v) => BigInt(v)) };
}

/** `image_grid_thw` / `video_grid_thw`: one (t, h, w) row per image or video, int64 [N, 3]. */
export function gridThw(grids: readonly (readonly number[])[]): Int64Tensor {
  return int64(grids.flat(), [grids.length, 3]);
}

/** A special token of tokenizer_config.json and its text and id; HF's processor reads tokenizer.<name>. */
export function requiredToken(tokenizer: Tokenizer, name: string, model: string): { text: string; id: number } {
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

export function objectField(json: Record<string, unknown> | undefined, key: string): Record<string, unknown> | undefined {
  const v = json?.[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/**
 * The processor settings that contradict what config.json states (fields it leaves out are not
 * compared): [processor field, its value, config.json field, its value]. Each one makes the
 * placeholder count or pixel rows disagree with what the model computes from its weights and
 * config, which the model would only report as bad inputs.
 */
export function conflicts(
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

export function refuseConflicts(list: readonly string[], what: string): void {
  if (list.length > 0) throw new ProcessorError('INVALID_PROCESSOR_CONFIG', `cannot process ${what}: ${list.join(' Also: ')}`);
}
