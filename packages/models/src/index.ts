// What needs Node (paths, the file system) comes from `#platform`: ./platform.node.ts in Node, refusals naming
// what to use instead in a browser (./platform.browser.ts).
export {
  cachedSession,
  defaultCacheDir,
  exportModel,
  FIXTURE_DIR,
  GraphCache,
  graphKey,
  inspectCheckpoint,
  outputDir,
  outputFile,
  readNamedTensors,
  sha256File,
  writeNamedTensors,
} from '#platform';
export { type ChatModel, type ChatOptions, type ChatStream, type ChatSummary, chat } from './chat.js';
export { type ChatEngine, createEngine, type EngineOptions, type EngineStats } from './engine.js';
export { ERNIE_CHECKPOINT, type ErnieWeights } from './ernie/checkpoint.js';
export { type Ernie45VLConfig, type ErnieReference, ernie45VLConfig } from './ernie/config.js';
export { ernie45VL } from './ernie/family.js';
export {
  ERNIE_FORWARD_OUTPUTS,
  Ernie45VL,
  type ErnieForwardOutputs,
  type ErnieInputs,
  type ErnieLoadOptions,
  type ErnieTimings,
} from './ernie/model.js';
export { analyzeErniePrompt, type ErniePrompt, type ErniePromptInputs, placeholderCount } from './ernie/prompt.js';
export { type ErnieTokens, ernieTokens, visionExpertMask } from './ernie/tokens.js';
export {
  buildErnieVisionEncoder,
  ERNIE_VISION_ENCODER_INPUTS,
  ERNIE_VISION_ENCODER_OUTPUTS,
  type ErnieVisionEncoderFeeds,
  type ErnieVisionWeights,
  ernieVisionEncoderFeeds,
} from './ernie/vision-encoder.js';
export { ModelError, type ModelErrorCode } from './errors.js';
export {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportManifest,
  type ExportOptions,
  type ExportResult,
  type ManifestGraph,
  type ManifestTensor,
} from './export-manifest.js';
export { FAMILIES, familyAt, familyOf, supportedModelTypes } from './families.js';
export {
  type ConfigOptions,
  checkAdapter,
  type DecoderGraphBuild,
  type FamilyCheckpoint,
  type FamilyConfig,
  type FamilyLoad,
  type FamilyWeights,
  loadFamily,
  type ModelFamily,
  type ParameterDocs,
  type WeightOptions,
} from './family.js';
export { type DecodeSteps, type GenerateOptions, type GenerateResult, generateTokens } from './generate.js';
export { type GenerationTokens, generationTokens } from './generation-tokens.js';
export {
  type AnyresLayout,
  anyresLayout,
  type PackPlan,
  packPlan,
  type Size,
  selectBestResolution,
  unpaddedRange,
} from './granite/anyres.js';
export { GRANITE_CHECKPOINT, type GraniteWeights } from './granite/checkpoint.js';
export { type Granite4VisionConfig, type GraniteLevel, granite4VisionConfig } from './granite/config.js';
export { granite4Vision } from './granite/family.js';
export {
  GRANITE_FORWARD_OUTPUTS,
  Granite4Vision,
  type GraniteForwardOutputs,
  type GraniteInputs,
  type GraniteLoadOptions,
} from './granite/model.js';
export { analyzeGranitePrompt, type GranitePrompt, type GranitePromptInputs } from './granite/prompt.js';
export { type GraniteTokens, graniteTokens } from './granite/tokens.js';
export {
  buildGraniteVisionEncoder,
  GRANITE_VISION_ENCODER_INPUTS,
  GRANITE_VISION_ENCODER_OUTPUTS,
  type GraniteVisionEncoderFeeds,
  type GraniteVisionWeights,
  graniteVisionEncoderFeeds,
} from './granite/vision-encoder.js';
export type { CacheHit, GraphCacheOptions } from './graph-cache.node.js';
export {
  DECODE_LOOPS,
  DEFAULT_LOOP_CHUNK,
  type DecodeLoop,
  type GraphLoopRun,
  generateInGraph,
  type ModelGenerateOptions,
} from './graph-loop.js';
export {
  formatInspectReport,
  type InspectComponent,
  type InspectOptions,
  type InspectProblem,
  type InspectReport,
} from './inspect-report.js';
export { MemoryBudget } from './memory-check.js';
export { type DecoderBuild, LOAD_OPTIONS, type LoadOptions, type QuantizeChoice, resolveLoad } from './model-load.js';
export { type CheckpointSource, sourceName } from './model-source.js';
export type { OutputDir, OutputFile, ReadPaths } from './output-file.node.js';
export { FamilyModel, type ModelChatOptions, type ModelOrigin, type NamedTensors, type PretrainedModel } from './pretrained-model.js';
export {
  OPS_FIELDS,
  PROFILE_FIELDS,
  PROFILE_NAMES,
  PROFILES,
  type Profile,
  type ProfileName,
  type ProfileOverrides,
  resolveProfile,
} from './profiles.js';
export { type LoadProgress, type LoadStage, LoadSteps, type OnLoadProgress, type StepDetail } from './progress.js';
export * from './qwen3vl/index.js';
export { loadPretrained } from './registry.js';
export { argmax, MAX_SEED, type SamplingOptions, sampleToken, seededRandom, validateSampling } from './sampling.js';
export type { BuiltSession, SessionCacheOptions } from './session-cache.node.js';
export {
  VISION_SESSION_MODES,
  type VisionRunner,
  VisionSession,
  type VisionSessionMode,
} from './vision-session.js';
