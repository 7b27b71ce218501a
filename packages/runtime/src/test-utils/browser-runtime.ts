// '@vlmkit/runtime' as a page gets it, for Node tests: the package with createSession on the browser's
// platform (onnxruntime-web, WASM in Node).
import { sessionBackend } from '../platform.browser.js';
import { createSessionOn, type ModelSource, type SessionOptions, type VlmSession } from '../session.js';

export * from '../index.js';

export function createSession(model: ModelSource, opts: SessionOptions = {}): Promise<VlmSession> {
  return createSessionOn(sessionBackend, model, opts);
}
