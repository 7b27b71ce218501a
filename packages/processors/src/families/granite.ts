// Granite 4 Vision's processor (HF Granite4VisionProcessor): LLaVA-NeXT anyres tiles, placeholders expanded
// by the count Granite's window Q-Former projectors give. Its settings come from processor_config.json alone,
// as HF reads them; config.json is only compared with them.
import { fields } from '@vlmkit/config';
import { ProcessorError } from '../errors.js';
import { type AnyresImageProcessorConfig, anyresImageProcessorConfig, processAnyresImages, selectBestResolution } from '../image/anyres.js';
import type { RgbImage } from '../image/decode.js';
import {
  conflicts,
  int64,
  objectField,
  type ProcessorFamily,
  type ProcessorFolder,
  type ProcessorRules,
  refuseConflicts,
} from '../processor-family.js';
import { readSettings, settingsField } from '../processor-files.js';
import { graniteImageTokenCount } from '../text/placeholders.js';

export const GRANITE_PROCESSOR: ProcessorFamily = {
  modelType: 'granite4_vision',
  name: 'Granite 4 Vision',
  processorClass: 'Granite4VisionProcessor',
  imageProcessorTypes: /^LlavaNextImageProcessor(Pil|Fast)?$/,
  // LlavaNextImageProcessor is LLaVA-NeXT's too: the image processor type alone does not name Granite.
  imageProcessorPrefix: undefined,
  video: false,
  open: async (folder) => graniteRules(folder),
};

function graniteRules({ dir, tokenizer, image: imageSettings, processorConfig, modelConfig }: ProcessorFolder): ProcessorRules {
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
  // Granite4VisionProcessorKwargs._defaults pass do_pad=True to the image processor on every call.
  const image = { ...readSettings(dir, () => anyresImageProcessorConfig(imageSettings.json, imageSettings.source)), doPad: true };
  const vision = objectField(modelConfig, 'vision_config');
  const strategy = modelConfig?.vision_feature_select_strategy;
  const imageConflicts = conflicts(dir, modelConfig, [
    ['processor_config.json patch_size', count.patchSize, 'vision_config.patch_size', vision?.patch_size],
    [
      'processor_config.json vision_feature_select_strategy',
      featureSelection(count.visionFeatureSelectStrategy),
      'vision_feature_select_strategy',
      strategy === undefined ? undefined : featureSelection(strategy),
    ],
    ['processor_config.json downsample_rate', fraction(count.downsampleRate), 'downsample_rate', fraction(modelConfig?.downsample_rate)],
    [
      settingsField(imageSettings.source, 'image_grid_pinpoints'),
      JSON.stringify(image.imageGridPinpoints),
      'image_grid_pinpoints',
      modelConfig?.image_grid_pinpoints === undefined ? undefined : JSON.stringify(modelConfig.image_grid_pinpoints),
    ],
    ['the image token id', imageId, 'image_token_index', modelConfig?.image_token_index],
  ]);

  return {
    media: async (images) => {
      if (images.length === 0) return { tensors: {}, expansions: [] };
      refuseConflicts(imageConflicts, 'images');
      const { patchSize } = count;
      if (patchSize === undefined) {
        throw new ProcessorError(
          'INVALID_PROCESSOR_CONFIG',
          `${dir}: processor_config.json has no patch_size, which HF's Granite4VisionProcessor needs to count image tokens ` +
            "(it fails with a TypeError); add the vision tower's patch_size (config.json vision_config.patch_size).",
        );
      }
      refuseTilesLargerThanPinpoint(dir, images, image);
      const px = processAnyresImages(images, image);
      // Granite4VisionProcessor.replace_image_token: the tile size is pixel_values' last two dims.
      const tile = [px.pixelValuesShape[3], px.pixelValuesShape[4]] as const;
      const counts = px.imageSizes.map((size) =>
        graniteImageTokenCount(size, selectBestResolution(size, image.imageGridPinpoints), tile, { ...count, patchSize }),
      );
      return {
        tensors: {
          pixel_values: { dtype: 'float32', dims: [...px.pixelValuesShape], data: px.pixelValues },
          image_sizes: int64(
            px.imageSizes.flatMap((s) => [...s]),
            [images.length, 2],
          ),
        },
        expansions: [{ modality: 'image', token: imageText, counts }],
      };
    },
    tokenTensors: () => ({}),
  };
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
