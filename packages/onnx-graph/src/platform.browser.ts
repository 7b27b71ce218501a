// The browser's side of what differs between Node and the browser (package.json "imports": #platform),
// typed against platform.node.ts so the two cannot drift. What needs a file system is refused by name.
import { GraphError } from './errors.js';
import type * as NodePlatform from './platform.node.js';
import { ReadScopes } from './read-scope.js';
import { jsSha256 } from './sha256.js';

const scopes = new ReadScopes();

export const observeFileReads: typeof NodePlatform.observeFileReads = (listener, fn) => scopes.observe(listener, fn);

export const reportFileRead: typeof NodePlatform.reportFileRead = (read) => scopes.report(read);

export const createSha256: typeof NodePlatform.createSha256 = jsSha256;

/**
 * Always external buffers for initializers of 1 MiB and more: onnxruntime-web copies inline weights into its
 * WASM heap with the model and again into tensors, external ones once. Measured in headless Chromium 150 (768 MiB
 * of float32 weights, WASM session): renderer peak RSS 1834-1851 MiB external against 2793-2824 MiB inline.
 */
export const SERIALIZE_INLINE_BELOW: typeof NodePlatform.SERIALIZE_INLINE_BELOW = 0;

export const saveModel: typeof NodePlatform.saveModel = async (_g, path) => {
  throw new GraphError(
    'UNSUPPORTED_PLATFORM',
    `saveModel('${path}') writes files, which a page cannot: use serializeModel(g) for the model's bytes and external data in memory, and hand them to createSession (@vlmkit/runtime).`,
  );
};

export const loadModelProto: typeof NodePlatform.loadModelProto = async (path) => {
  throw new GraphError(
    'UNSUPPORTED_PLATFORM',
    `loadModelProto('${path}') reads a file, which a page cannot: decode bytes you hold with onnx.ModelProto.decode(bytes).`,
  );
};

export const readFileRange: typeof NodePlatform.readFileRange = async (path, byteOffset, byteLength) => {
  throw new GraphError(
    'UNSUPPORTED_PLATFORM',
    `a tensor is bytes ${byteOffset}-${byteOffset + byteLength} of the file '${path}', and a page cannot open paths: ` +
      "give the weights as source tensors (tensorFromSource, or tensorFromSafetensors with the file's `source`), read through a Blob or URL ByteSource.",
  );
};
