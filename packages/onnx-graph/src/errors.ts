export type GraphErrorCode =
  | 'SHAPE_MISMATCH'
  | 'DTYPE_MISMATCH'
  | 'RANK_MISMATCH'
  | 'BAD_ARGUMENT'
  | 'DUPLICATE_NAME'
  | 'FOREIGN_VALUE'
  | 'MISSING_PARAMETER'
  | 'PARAMETER_SHAPE'
  | 'SAVE_FAILED'
  | 'MODEL_TOO_LARGE'
  | 'UNSUPPORTED_PLATFORM';

/**
 * Thrown while a graph is being built, before anything runs. `node` is the
 * scoped name of the node being added (`vision.blocks.3.attn.MatMul_2`), so
 * the message points at the module a reader can find.
 */
export class GraphError extends Error {
  readonly code: GraphErrorCode;
  readonly node: string | undefined;

  constructor(code: GraphErrorCode, message: string, node?: string) {
    super(node === undefined ? message : `${node}: ${message}`);
    this.name = 'GraphError';
    this.code = code;
    this.node = node;
  }
}
