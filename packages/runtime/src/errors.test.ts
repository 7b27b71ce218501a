import { describe, expect, it } from 'vitest';
import { nodeNameFromOrtMessage, RuntimeError, wrapOrtError } from './errors.js';

describe('nodeNameFromOrtMessage', () => {
  it.each([
    ["Non-zero status code returned while running Reshape node. Name:'blocks.0/reshape' Status Message: bad", 'blocks.0/reshape'],
    [
      'Type Error: Type parameter (T) of Optype (Add) bound to different types (tensor(float) and tensor(int64) in node (blocks.1/add).',
      'blocks.1/add',
    ],
    ['This is an invalid model. In Node, ("blocks.2/foo", NoSuchOp, "", -1) : ("x": tensor(float),)', 'blocks.2/foo'],
    ['Node (blocks.3/mm) Op (MatMul) [ShapeInferenceError] Incompatible dimensions', 'blocks.3/mm'],
    ["input 'x' is missing in 'feeds'.", undefined],
  ])('%s', (msg, node) => {
    expect(nodeNameFromOrtMessage(msg)).toBe(node);
  });
});

describe('wrapOrtError', () => {
  it('names the session and the node and keeps the cause', () => {
    const cause = new Error("Non-zero status code returned while running MatMul node. Name:'proj/matmul' Status Message: x");
    const e = wrapOrtError('ORT_RUN_FAILED', 'vision', cause);
    expect(e).toBeInstanceOf(RuntimeError);
    expect(e.code).toBe('ORT_RUN_FAILED');
    expect(e.session).toBe('vision');
    expect(e.node).toBe('proj/matmul');
    expect(e.cause).toBe(cause);
    expect(e.message).toMatch(/^Session 'vision' failed to run at node 'proj\/matmul': Non-zero status/);
  });
});
