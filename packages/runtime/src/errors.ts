/**
 * Typed errors for @vlmkit/runtime. Every error carries a `code` a caller can
 * switch on and a message that says what to do; ORT failures keep ORT's own
 * message as `cause` and add the session (model) name and, where ORT names a
 * node, that node's name so it can be found in the graph builder's scopes.
 */

export type RuntimeErrorCode =
  | 'CUDA_UNAVAILABLE'
  | 'ORT_LOAD_FAILED'
  | 'ORT_RUN_FAILED'
  | 'INVALID_OPTIONS'
  | 'INVALID_FEEDS'
  | 'INVALID_TENSOR'
  | 'UNSUPPORTED_DTYPE'
  | 'SESSION_RELEASED'
  | 'KV_CACHE_MISMATCH'
  | 'KV_CACHE_FULL';

export interface RuntimeErrorDetails {
  /** The session's name (`opts.name`, or the model file's base name). */
  session?: string;
  /** The graph node ORT's message names, when it names one. */
  node?: string;
  cause?: unknown;
}

export class RuntimeError extends Error {
  override readonly name = 'RuntimeError';
  readonly code: RuntimeErrorCode;
  readonly session: string | undefined;
  readonly node: string | undefined;

  constructor(code: RuntimeErrorCode, message: string, details: RuntimeErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.session = details.session;
    this.node = details.node;
  }
}

// The shapes ORT 1.29 uses to name a node in its messages (measured):
//   run:   "... while running Reshape node. Name:'blocks.0/reshape' Status Message: ..."
//   load:  "... bound to different types (...) in node (blocks.1/add)."
//   load:  "This is an invalid model. In Node, ("blocks.2/foo", NoSuchOp, "", -1) : ..."
//   other: "Node (blocks.3/mm) Op (MatMul) [ShapeInferenceError] ..."
const NODE_PATTERNS: readonly RegExp[] = [/Name:'([^']+)'/, /in node \(([^)]+)\)/, /In Node, \("([^"]*)"/, /Node \(([^)]+)\) Op/];

/** The node name an ORT error message mentions, if any. */
export function nodeNameFromOrtMessage(message: string): string | undefined {
  for (const re of NODE_PATTERNS) {
    const m = re.exec(message);
    if (m?.[1]) return m[1];
  }
  return undefined;
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Wrap an error thrown by onnxruntime-node into a RuntimeError. */
export function wrapOrtError(code: 'ORT_LOAD_FAILED' | 'ORT_RUN_FAILED', session: string, e: unknown, hint?: string): RuntimeError {
  const ortMessage = errorMessage(e).trim();
  const node = nodeNameFromOrtMessage(ortMessage);
  const what = code === 'ORT_LOAD_FAILED' ? 'could not be loaded' : 'failed to run';
  const where = node === undefined ? '' : ` at node '${node}'`;
  const tail = hint === undefined ? '' : ` ${hint}`;
  return new RuntimeError(
    code,
    `Session '${session}' ${what}${where}: ${ortMessage}${tail}`,
    node === undefined ? { session, cause: e } : { session, node, cause: e },
  );
}
