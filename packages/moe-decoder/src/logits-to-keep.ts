import type { Graph, Value } from '@vlmkit/onnx-graph';

/** The last `logitsToKeep` positions of h [B, S, D]; 0 keeps all of them (HF's `logits_to_keep`: h[:, -n:]). */
export function keepLastPositions(g: Graph, h: Value, logitsToKeep: Value): Value {
  return g.scope('logits_to_keep', () => {
    // Slice's start -n counts from the end; -0 is 0, the whole axis.
    const starts = g.neg(g.reshape(logitsToKeep, [1]));
    const ends = g.ints([Number.MAX_SAFE_INTEGER]);
    return g.sliceDynamic(h, starts, ends, [1], [h.dim(0), 'kept', h.dim(2)]);
  });
}
