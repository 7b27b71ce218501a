export { checkpointFiles, dirFiles, fileSource, openRegularFile, readRegularTextFile, writeSafetensors } from '#platform';
export { blobFiles, blobSource } from './blob-source.js';
export { Checkpoint, type TensorRead } from './checkpoint.js';
export {
  allocateAs,
  DTYPE_OF,
  DTYPE_SIZE,
  type DType,
  ELEMENT_TYPE,
  type ElementType,
  type Tensor,
  type TensorData,
  type TensorInfo,
  viewAs,
} from './dtype.js';
export { SafetensorsError, type SafetensorsErrorCode } from './errors.js';
export { SafetensorsFile } from './file.js';
export { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, toFloat32 } from './half.js';
export { describeFileKind } from './regular-file.js';
export type { ByteSource, ModelFiles } from './source.js';
export { MAX_JSON_FILE_BYTES, readTextFile } from './text-file.js';
export { urlFiles, urlSource } from './url-source.js';
export type { CheckpointFiles } from './weight-files.js';
export { serializeSafetensors } from './writer.js';
