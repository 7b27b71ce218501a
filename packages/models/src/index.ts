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
