export { Checkpoint, type CheckpointFiles, checkpointFiles, type TensorRead } from './checkpoint.js';
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
export { describeFileKind, MAX_JSON_FILE_BYTES, openRegularFile, readRegularTextFile } from './regular-file.js';
export { serializeSafetensors, writeSafetensors } from './writer.js';
