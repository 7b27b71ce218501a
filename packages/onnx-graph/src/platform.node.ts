// Node's side of what differs between Node and the browser (package.json "imports": #platform); the
// browser's is platform.browser.ts, typed against this file.
import { createHash } from 'node:crypto';
import type { Sha256 } from './sha256.js';

export { observeFileReads, reportFileRead } from './read-observer.node.js';
export { loadModelProto, readFileRange, saveModel } from './save-model.node.js';

/**
 * `serializeModel` puts every initializer inline while the weights stay below this (protobuf's limit is 2 GiB),
 * else those of 1 MiB and more in external buffers: onnxruntime-node takes either as cheaply.
 */
export const SERIALIZE_INLINE_BELOW: number = 1.5 * 2 ** 30;

/** An incremental SHA-256 (node:crypto's; the browser's is plain JavaScript with the same output). */
export function createSha256(): Sha256 {
  const hash = createHash('sha256');
  const sha: Sha256 = {
    update(data) {
      hash.update(data);
      return sha;
    },
    hex: () => hash.digest('hex'),
  };
  return sha;
}
