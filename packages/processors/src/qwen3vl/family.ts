// Qwen3-VL's processor (HF Qwen3VLProcessor, for qwen3_vl and qwen3_vl_moe): images by Qwen2-VL's image
// processor, videos by Qwen3VLVideoProcessor; an image placeholder becomes one <|image_pad|> per merged patch, a
// video placeholder one "<t seconds><|vision_start|>...<|vision_end|>" block per temporal patch.
import { ProcessorError } from '../errors.js';
import type { RgbImage } from '../image/decode.js';
import {
  conflicts,
  gridThw,
  type MediaInputs,
  objectField,
  type ProcessorFamily,
  type ProcessorFolder,
  type ProcessorRules,
  refuseConflicts,
  type VideoInput,
} from '../processor-family.js';
import { nestedOrFile, readSettings, type Settings, settingsField } from '../processor-files.js';
import { ernieImageTokenCount, mmTokenTypeIds, type PlaceholderExpansion } from '../text/placeholders.js';
import type { Tokenizer } from '../text/tokenizer.js';
import type { VideoSampling } from '../video/ernie.js';
import { processQwen2VLImages, qwen2vlImageProcessorConfig } from './image.js';
import { processQwen3VLVideoInputs, pythonFixed1, qwen3vlVideoProcessorConfig } from './video.js';

const NAME = 'Qwen3-VL';

const QWEN3_VL: Omit<ProcessorFamily, 'modelType'> = {
  name: NAME,
  processorClass: 'Qwen3VLProcessor',
  imageProcessorTypes: /^Qwen2VLImageProcessor(Pil|Fast)?$/,
  // Qwen2VLImageProcessor is Qwen2-VL's and Qwen2.5-VL's too: the image processor type alone does not name Qwen3-VL.
  imageProcessorPrefix: undefined,
  video: true,
  open: async (folder) => {
    const videoFile = await folder.read('video_preprocessor_config.json');
    const video = nestedOrFile(folder.processorConfig, 'video_processor', [
      ['video_preprocessor_config.json', videoFile],
      ['preprocessor_config.json', folder.preprocessor],
    ]);
    return qwen3vlRules(folder, video);
  },
};

/** Qwen3-VL (dense). */
export const QWEN3_VL_PROCESSOR: ProcessorFamily = { ...QWEN3_VL, modelType: 'qwen3_vl' };
/** Qwen3-VL-MoE: the same processor; a folder's config.json model_type picks this one. */
export const QWEN3_VL_MOE_PROCESSOR: ProcessorFamily = { ...QWEN3_VL, modelType: 'qwen3_vl_moe' };
/** Both, as the package's family list registers them. */
export const QWEN3_VL_PROCESSORS: readonly ProcessorFamily[] = [QWEN3_VL_PROCESSOR, QWEN3_VL_MOE_PROCESSOR];

/** HF Qwen3VLProcessor.__init__: the tokenizer's named token when it has one, else Qwen's default text; its id. */
function token(tokenizer: Tokenizer, name: string, fallback: string): { text: string; id: number } {
  const text = tokenizer.specialTokens[name] ?? fallback;
  const id = tokenizer.specialTokenId(name) ?? tokenizer.tokenToId(text);
  if (id === undefined) {
    throw new ProcessorError(
      'TOKENIZER_ERROR',
      `${NAME}: the tokenizer has no ${JSON.stringify(text)} (HF's processor reads tokenizer.${name}, default ${fallback}); use the model's tokenizer files`,
    );
  }
  return { text, id };
}

function qwen3vlRules({ dir, tokenizer, image: imageSettings, modelConfig }: ProcessorFolder, video: Settings | undefined): ProcessorRules {
  if (video === undefined) {
    throw new ProcessorError(
      'INVALID_PROCESSOR_CONFIG',
      `${dir}: no video processor settings: processor_config.json has no "video_processor" object and neither ` +
        "video_preprocessor_config.json nor preprocessor_config.json exists; HF's Qwen3VLProcessor refuses such a folder.",
    );
  }
  const image = token(tokenizer, 'image_token', '<|image_pad|>');
  const videoToken = token(tokenizer, 'video_token', '<|video_pad|>');
  const start = token(tokenizer, 'vision_start_token', '<|vision_start|>');
  const end = token(tokenizer, 'vision_end_token', '<|vision_end|>');
  const config = readSettings(dir, () => qwen2vlImageProcessorConfig(imageSettings.json, imageSettings.source, NAME));
  const videoConfig = readSettings(dir, () => qwen3vlVideoProcessorConfig(video.json, video.source));
  const vision = objectField(modelConfig, 'vision_config');
  const imageAt = (field: string) => settingsField(imageSettings.source, field);
  const videoAt = (field: string) => settingsField(video.source, field);
  const imageConflicts = conflicts(dir, modelConfig, [
    [imageAt('patch_size'), config.patchSize, 'vision_config.patch_size', vision?.patch_size],
    [imageAt('merge_size'), config.mergeSize, 'vision_config.spatial_merge_size', vision?.spatial_merge_size],
    [imageAt('temporal_patch_size'), config.temporalPatchSize, 'vision_config.temporal_patch_size', vision?.temporal_patch_size],
    ['the image token id (tokenizer)', image.id, 'image_token_id', modelConfig?.image_token_id],
  ]);
  const videoConflicts = conflicts(dir, modelConfig, [
    [videoAt('patch_size'), videoConfig.patchSize, 'vision_config.patch_size', vision?.patch_size],
    [videoAt('merge_size'), videoConfig.mergeSize, 'vision_config.spatial_merge_size', vision?.spatial_merge_size],
    [videoAt('temporal_patch_size'), videoConfig.temporalPatchSize, 'vision_config.temporal_patch_size', vision?.temporal_patch_size],
    ['the video token id (tokenizer)', videoToken.id, 'video_token_id', modelConfig?.video_token_id],
    ['the vision start token id (tokenizer)', start.id, 'vision_start_token_id', modelConfig?.vision_start_token_id],
    ['the vision end token id (tokenizer)', end.id, 'vision_end_token_id', modelConfig?.vision_end_token_id],
  ]);

  return {
    media: async (
      images: readonly RgbImage[],
      videos: readonly VideoInput[],
      sampling: VideoSampling | undefined,
    ): Promise<MediaInputs> => {
      const tensors: MediaInputs['tensors'] = {};
      const expansions: PlaceholderExpansion[] = [];
      if (images.length > 0) {
        refuseConflicts(imageConflicts, 'images');
        const px = processQwen2VLImages(images, config);
        tensors.pixel_values = { dtype: 'float32', dims: [...px.pixelValuesShape], data: px.pixelValues };
        tensors.image_grid_thw = gridThw(px.imageGridThw);
        // Qwen3VLProcessor.replace_image_token: prod(grid) / merge^2 pads.
        expansions.push({
          modality: 'image',
          token: image.text,
          counts: px.imageGridThw.map((g) => ernieImageTokenCount(g, config.mergeSize)),
        });
      }
      if (videos.length > 0) {
        refuseConflicts(videoConflicts, 'videos');
        const vx = await processQwen3VLVideoInputs(videos, videoConfig, sampling);
        tensors.pixel_values_videos = { dtype: 'float32', dims: [...vx.pixelValuesVideosShape], data: vx.pixelValuesVideos };
        tensors.video_grid_thw = gridThw(vx.videoGridThw);
        // Qwen3VLProcessor.replace_video_token: per temporal patch "<t seconds>" (Python :.1f) and its frame's pads
        // between vision start and end; the template's own start/end around the placeholder stay.
        const perFrame = vx.videoGridThw.map(([, h, w]) => ernieImageTokenCount([1, h, w], videoConfig.mergeSize));
        const replacements = vx.videoGridThw.map(([t], i) =>
          Array.from(
            { length: t },
            (_, k) => `<${pythonFixed1(vx.timestamps[i]![k]!)} seconds>${start.text}${videoToken.text.repeat(perFrame[i]!)}${end.text}`,
          ).join(''),
        );
        expansions.push({
          modality: 'video',
          token: videoToken.text,
          counts: vx.videoGridThw.map(([t], i) => t * perFrame[i]!),
          replacements,
        });
      }
      return { tensors, expansions };
    },
    // Qwen3VLProcessorKwargs: return_mm_token_type_ids=True (1 image pad, 2 video pad).
    tokenTensors: (ids) => ({
      mm_token_type_ids: { dtype: 'int64', dims: [1, ids.length], data: mmTokenTypeIds(ids, { image: image.id, video: videoToken.id }) },
    }),
  };
}
