export { ProcessorError, type ProcessorErrorCode } from './errors.js';
