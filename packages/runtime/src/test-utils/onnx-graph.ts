// The graph builder for tests that run a built model on both onnxruntimes. @vlmkit/runtime does not depend on
// @vlmkit/onnx-graph (the arrows point the other way, and a devDependency would change the lockfile), so its
// tests reach the builder's source by path.
export * from '../../../onnx-graph/src/index.js';
