// Qwen3-VL's processor rules (qwen3_vl, qwen3_vl_moe): Qwen2-VL's image processor, Qwen3-VL's video processor.
export { QWEN3_VL_MOE_PROCESSOR, QWEN3_VL_PROCESSOR } from './family.js';
export { processQwen2VLImages, type Qwen2VLImageProcessorConfig, qwen2vlImageProcessorConfig } from './image.js';
export {
  processQwen3VLVideos,
  pythonFixed1,
  type Qwen3VLVideoInputs,
  type Qwen3VLVideoProcessorConfig,
  qwen3vlSampleFrameIndices,
  qwen3vlTimestamps,
  qwen3vlVideoProcessorConfig,
  qwen3vlVideoSmartResize,
} from './video.js';
