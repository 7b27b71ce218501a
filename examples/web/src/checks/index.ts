// Checks written once, run by the harness page (bundled by Vite for the browser) and by the test runner in
// Node (compiled by tsc to dist-node/): each side computes the same thing on its own platform, the runner
// compares.
export { type F32Feed, type GraphCase, graphCases, noise, sha256 } from './graph.js';
export { FIXTURE_LOAD, MODEL_FIXTURES, type ModelCaseJson, type ModelCaseResult, modelCase, PLACEMENT_END, readTensors } from './models.js';
export { MROPE_FIXTURES, type MropeFixtureName, type MropeResult, mropePositions } from './mrope.js';
export {
  type CaseMedia,
  type DecodedFrames,
  PROCESSOR_FAMILIES,
  type ProcessorCaseJson,
  processorCase,
  readFrames,
} from './processors.js';
export { fromWire, type NumericArray, toWire, type WireDType, type WireTensor } from './wire.js';
