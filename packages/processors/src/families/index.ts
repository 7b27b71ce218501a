// The processors this package knows; `Processor.fromPretrained(dir)` chooses among them by the folder's files.
import type { ProcessorFamily } from '../processor-family.js';
import { QWEN3_VL_PROCESSORS } from '../qwen3vl/family.js';
import { ERNIE_PROCESSOR } from './ernie.js';
import { GRANITE_PROCESSOR } from './granite.js';

export const PROCESSOR_FAMILIES: readonly ProcessorFamily[] = [ERNIE_PROCESSOR, GRANITE_PROCESSOR, ...QWEN3_VL_PROCESSORS];

export { ERNIE_PROCESSOR, GRANITE_PROCESSOR };
