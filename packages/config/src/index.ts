export { ERNIE_DEFAULT_SOURCES, ErnieConfigFields, type ErnieLayout } from './ernie.js';
export { ConfigError, type ConfigErrorCode, describeValue } from './errors.js';
export { type AppliedDefault, ConfigObject, type Default, fields, type IntOptions, type NumOptions, type OneOfOptions } from './fields.js';
export { GraniteConfigFields, readVisionSizes, VISION_SIZE_DEFAULTS, type VisionModelType, type VisionSizes } from './granite.js';
export { Grid, GridError, type GridMerge, type GridThw } from './grid.js';
