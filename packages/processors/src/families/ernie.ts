// ERNIE-4.5-VL's processor (HF Ernie4_5_VLMoeProcessor): images and videos as patch rows with their grids,
// placeholders expanded per merged patch, and the token type ids its MoE decoder routes by.
import { ProcessorError } from '../errors.js';
import type { RgbImage } from '../image/decode.js';
import { ernieImageProcessorConfig, processErnieImages } from '../image/ernie.js';
import {
  conflicts,
  gridThw,
  type MediaInputs,
  objectField,
  type ProcessorFamily,
  type ProcessorFolder,
  type ProcessorRules,
  refuseConflicts,
  requiredToken,
  type VideoInput,
} from '../processor-family.js';
import { checkDrawOnFramesFont, nestedOrFile, readSettings, type Settings, settingsField } from '../processor-files.js';
import {
  ernieImageTokenCount,
  ernieVideoTokenCount,
  mmTokenTypeIds,
  moeMmTokenTypeIds,
  type PlaceholderExpansion,
} from '../text/placeholders.js';
import { ernieVideoProcessorConfig, processErnieVideoInputs, type VideoSampling } from '../video/ernie.js';

export const ERNIE_PROCESSOR: ProcessorFamily = {
  modelType: 'ernie4_5_vl_moe',
  name: 'ERNIE-4.5-VL',
  processorClass: 'Ernie4_5_VLMoeProcessor',
  imageProcessorTypes: /^Ernie4_5_VL_?MoeImageProcessor(Pil|Fast)?$/,
  imageProcessorPrefix: 'Ernie4_5_VLMoe',
  video: true,
  open: async (folder) => {
    const videoFile = await folder.read('video_preprocessor_config.json');
    const video = nestedOrFile(folder.processorConfig, 'video_processor', [
      ['video_preprocessor_config.json', videoFile],
      ['preprocessor_config.json', folder.preprocessor],
    ]);
    if (video !== undefined) await checkDrawOnFramesFont(folder.files, video);
    return ernieRules(folder, video);
  },
};

function ernieRules({ dir, tokenizer, image: imageSettings, modelConfig }: ProcessorFolder, video: Settings | undefined): ProcessorRules {
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
    imageId: image.id,
    imageStart: tokenizer.specialTokenId('image_start_token'),
    imageEnd: tokenizer.specialTokenId('image_end_token'),
    video: tokenizer.specialTokenId('video_token'),
    videoStart: tokenizer.specialTokenId('video_start_token'),
    videoEnd: tokenizer.specialTokenId('video_end_token'),
  };
  const videoToken = tokenizer.specialTokens.video_token;
  const vision = objectField(modelConfig, 'vision_config');
  const imageAt = (field: string) => settingsField(imageSettings.source, field);
  const videoAt = (field: string) => settingsField(video.source, field);
  const imageConflicts = conflicts(dir, modelConfig, [
    [imageAt('patch_size'), config.patchSize, 'vision_config.patch_size', vision?.patch_size],
    [imageAt('merge_size'), config.mergeSize, 'vision_config.spatial_merge_size', vision?.spatial_merge_size],
    // A row of pixel_values holds 3 * temporal_patch_size * patch^2 values; the patch embedding takes in_channels * patch^2.
    [`3 * ${imageAt('temporal_patch_size')}`, 3 * config.temporalPatchSize, 'vision_config.in_channels', vision?.in_channels],
    ['the image_token id (tokenizer_config.json)', image.id, 'image_token_id', modelConfig?.image_token_id],
  ]);
  const videoConflicts = conflicts(dir, modelConfig, [
    [videoAt('patch_size'), videoConfig.patchSize, 'vision_config.patch_size', vision?.patch_size],
    [videoAt('merge_size'), videoConfig.mergeSize, 'vision_config.spatial_merge_size', vision?.spatial_merge_size],
    ['the video_token id (tokenizer_config.json)', tokens.video, 'video_token_id', modelConfig?.video_token_id],
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
        const px = processErnieImages(images, config);
        tensors.pixel_values = { dtype: 'float32', dims: [...px.pixelValuesShape], data: px.pixelValues };
        tensors.image_grid_thw = gridThw(px.imageGridThw);
        expansions.push({
          modality: 'image',
          token: image.text,
          counts: px.imageGridThw.map((g) => ernieImageTokenCount(g, config.mergeSize)),
        });
      }
      if (videos.length > 0) {
        if (videoToken === undefined || tokens.video === undefined) {
          throw new ProcessorError('INVALID_PROCESSOR_CONFIG', 'videos need a video_token in tokenizer_config.json (in the vocabulary)');
        }
        refuseConflicts(videoConflicts, 'videos');
        const cfg = readSettings(dir, () => ernieVideoProcessorConfig(video.json, video.source));
        const vx = await processErnieVideoInputs(videos, cfg, sampling);
        tensors.pixel_values_videos = { dtype: 'float32', dims: [...vx.pixelValuesVideosShape], data: vx.pixelValuesVideos };
        tensors.video_grid_thw = gridThw(vx.videoGridThw);
        const counts = vx.videoGridThw.map((g) => ernieVideoTokenCount(g, cfg.mergeSize, cfg.temporalPatchSize));
        expansions.push({ modality: 'video', token: videoToken, counts });
      }
      return { tensors, expansions };
    },
    // Ernie4_5_VLMoeProcessorKwargs: return_mm_token_type_ids=True; __call__ adds the MoE ones.
    tokenTensors: (ids) => {
      const S = ids.length;
      const t = tokens;
      return {
        mm_token_type_ids: { dtype: 'int64', dims: [1, S], data: mmTokenTypeIds(ids, { image: t.imageId, video: t.video }) },
        moe_mm_token_type_ids: {
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
        },
      };
    },
  };
}
