/**
 * Typed errors for @vlmkit/runtime. Every error carries a `code` a caller can
 * switch on and a message that says what to do; ORT failures keep ORT's own
 * message as `cause` and add the session (model) name and, where ORT names a
 * node, that node's name so it can be found in the graph builder's scopes.
 */

export type RuntimeErrorCode =
  | 'CUDA_UNAVAILABLE'
  | 'WEBGPU_UNAVAILABLE'
  | 'UNSUPPORTED_PLATFORM'
  | 'ORT_LOAD_FAILED'
  | 'ORT_RUN_FAILED'
  | 'INVALID_OPTIONS'
  | 'INVALID_FEEDS'
  | 'INVALID_TENSOR'
  | 'UNSUPPORTED_DTYPE'
  | 'SESSION_RELEASED'
  | 'KV_CACHE_MISMATCH'
  | 'KV_CACHE_FULL'
  | 'NO_KERNEL';

export interface RuntimeErrorDetails {
  /** The session's name (`opts.name`, or the model file's base name). */
  session?: string;
  /** The graph node ORT's message names, when it names one. */
  node?: string;
  /** NO_KERNEL: the op type (and opset version) the EP has no kernel for, e.g. 'MatMul(13)'. */
  op?: string;
  /** NO_KERNEL: the graph's compute dtype, when the session was told it. */
  dtype?: string;
  cause?: unknown;
}

export class RuntimeError extends Error {
  override readonly name = 'RuntimeError';
  readonly code: RuntimeErrorCode;
  readonly session: string | undefined;
  readonly node: string | undefined;
  readonly op: string | undefined;
  readonly dtype: string | undefined;

  constructor(code: RuntimeErrorCode, message: string, details: RuntimeErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.session = details.session;
    this.node = details.node;
    this.op = details.op;
    this.dtype = details.dtype;
  }
}

// ORT 1.29 at session creation, when no registered kernel of any EP in the session takes a node's input types
// (e.g. every compute op in bfloat16 on the CPU EP): "Could not find an implementation for MatMul(13) node
// with name 'decoder.layers.0.mlp.MatMul'" (name '' for nodes of a function body ORT expanded, e.g. Gelu's Sqrt).
const NO_KERNEL = /Could not find an implementation for ([A-Za-z0-9_]+)\((\d+)\) node with name '([^']*)'/;

/**
 * The NO_KERNEL error for an ORT load failure that says no kernel takes a node (undefined for other failures):
 * names the op, its node and, when known, the compute dtype, and says what runs instead.
 */
export function noKernelError(session: string, e: unknown, dtype: string | undefined): RuntimeError | undefined {
  const m = NO_KERNEL.exec(errorMessage(e));
  if (!m) return undefined;
  const [, opType, version, node] = m as unknown as [string, string, string, string];
  const op = `${opType}(${version})`;
  const where = node === '' ? ' (a node ORT expanded from a function op)' : ` at node '${node}'`;
  const inDtype = dtype === undefined ? '' : ` in ${dtype}`;
  const hint =
    dtype === 'bfloat16'
      ? " ORT's CPU EP has bfloat16 kernels for data movement and Cast only: run bfloat16 graphs on CUDA (device 'cuda'), or use computeDtype 'float16' or 'float32' on CPU (see @vlmkit/onnx-graph's README, 'Compute dtype')."
      : dtype !== undefined && dtype !== 'float32'
        ? ` Use computeDtype 'float32' on this device (see @vlmkit/onnx-graph's README, 'Compute dtype').`
        : '';
  return new RuntimeError('NO_KERNEL', `Session '${session}': the execution provider has no kernel for ${op}${inDtype}${where}.${hint}`, {
    session,
    ...(node !== '' ? { node } : {}),
    op,
    ...(dtype !== undefined ? { dtype } : {}),
    cause: e,
  });
}

// The shapes ORT 1.29 uses to name a node in its messages:
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
