export { type ComponentParameters, type ComponentWithConfig, withSources } from './components.js';
export {
  type Ernie45VlComponent,
  type Ernie45VlComponents,
  type ErnieTextMapperConfig,
  ernie45VlMapping,
  mapErnie45VL,
} from './ernie45-vl.js';
export { MAPPING_ERROR_CODES, MappingError, type MappingErrorCode } from './errors.js';
export {
  type Granite4VisionComponent,
  type Granite4VisionComponents,
  type GraniteTextMapperConfig,
  granite4VisionMapping,
  mapGranite4Vision,
} from './granite4-vision.js';
export { type LoraAdapter, loraOverlay, readLoraAdapter } from './lora.js';
export type { TensorOverlay } from './mapping.js';
export {
  type ComponentTable,
  FLOAT_PARAMETER_DTYPES,
  type MapOptions,
  type Mapped,
  type MappingTable,
  mapCheckpoint,
  type ParamSpec,
} from './mapping.js';
export * from './qwen3-vl.js';
export { formatReport, type MappingReport, type Mismatch, type MissingParameter, type ParameterRecord } from './report.js';
export { applyRename, canonicalName, matches, type NameMatcher, prefix, type RenameRule, regex, substring } from './rules.js';
export { concat, firstOf, pack, range, row, type Source, slice, sourceNames, stack, stackExperts, tensor, transpose } from './source.js';
