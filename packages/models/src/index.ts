export { ModelError, type ModelErrorCode } from './errors.js';
export { type SamplingOptions, argmax, sampleToken, seededRandom } from './sampling.js';
export { type DecodeSteps, type GenerateOptions, type GenerateResult, generateTokens } from './generate.js';
export { type BuiltSession, type SessionCacheOptions, cachedSession, graphKey } from './session-cache.js';
export { type Ernie45VLConfig, type ErnieReference, ernie45VLConfig } from './ernie/config.js';
export { type ErnieTokens, ernieTokens, visionExpertMask } from './ernie/tokens.js';
export { type ErniePrompt, type PromptInputs, analyzePrompt, placeholderCount } from './ernie/prompt.js';
export { buildErnieVisionEncoder, visionEncoderFeeds } from './ernie/vision-encoder.js';
export {
  Ernie45VL,
  type ErnieForwardOutputs,
  type ErnieInputs,
  type ErnieLoadOptions,
  type ErnieTimings,
} from './ernie/model.js';
export { type LoadOptions, type PretrainedModel, loadPretrained, supportedModelTypes } from './registry.js';
export { FIXTURE_DIR } from './fixture-dir.js';
export { readNamedTensors, writeNamedTensors } from './inputs-file.js';
export { type Granite4VisionConfig, type GraniteLevel, granite4VisionConfig } from './granite/config.js';
export { type AnyresLayout, type PackPlan, type Size, anyresLayout, packPlan, selectBestResolution, unpaddedRange } from './granite/anyres.js';
export { buildGraniteVisionEncoder, graniteVisionFeeds } from './granite/vision-encoder.js';
export { Granite4Vision, type GraniteForwardOutputs, type GraniteInputs, type GraniteLoadOptions } from './granite/model.js';
