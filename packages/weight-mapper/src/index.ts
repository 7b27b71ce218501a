export { MAPPING_ERROR_CODES, MappingError, type MappingErrorCode } from './errors.js';
export { type NameMatcher, type RenameRule, applyRename, canonicalName, matches, prefix, regex, substring } from './rules.js';
export { type Source, concat, firstOf, pack, range, row, slice, sourceNames, stack, stackExperts, tensor, transpose } from './source.js';
export { type MapOptions, type Mapped, type MappingTable, type ParamSpec, mapCheckpoint } from './mapping.js';
export { type MappingReport, type MissingParameter, type Mismatch, type ParameterRecord, formatReport } from './report.js';
export { type Ernie45VlMapperConfig, type ErnieMlpKind, ernie45VlConfigFromHf } from './ernie45-vl-config.js';
export { type Ernie45VlComponent, ernie45VlMapping, mapErnie45VL } from './ernie45-vl.js';
export { type Granite4VisionMapperConfig, granite4VisionConfigFromHf } from './granite4-vision-config.js';
export { type Granite4VisionComponent, granite4VisionMapping, mapGranite4Vision } from './granite4-vision.js';
