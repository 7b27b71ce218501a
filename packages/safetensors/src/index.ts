export { Checkpoint } from './checkpoint.js';
export { DTYPE_SIZE, type DType, type Tensor, type TensorData, type TensorInfo } from './dtype.js';
export { SafetensorsError, type SafetensorsErrorCode } from './errors.js';
export { SafetensorsFile } from './file.js';
export { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, toFloat32 } from './half.js';
export { MAX_JSON_FILE_BYTES, openRegularFile, readRegularTextFile } from './regular-file.js';
export { serializeSafetensors, writeSafetensors } from './writer.js';
