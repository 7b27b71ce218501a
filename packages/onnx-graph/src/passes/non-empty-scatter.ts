import type { OnnxTypes } from '../proto.js';
import { PassBuilder } from './attention-pattern.js';
import { type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

const MARK = '/non_empty';

/**
 * A row ScatterND (indices [n, 1] into data [N, ...]) that stays valid when n is 0: onnxruntime-web's WebGPU
 * kernel refuses zero-sized inputs ("Program ScatterND has zero-sized tensor(s) in inputs or outputs"), and a
 * prompt without an image scatters no image rows. The data gets one spare row N, the scatter one more update
 * written there (a copy of row 0: any value does, for any reduction), and the spare row is sliced off again.
 * The rows 0..N-1 are what the plain scatter makes; the cost is a copy of the data in and out (the hidden
 * states, once per forward). Other index depths are left alone.
 */
export const nonEmptyScatterPass: GraphPass = {
  name: 'non-empty-scatter',
  run: (body) => rewriteEach(body, (node, index) => node.opType === 'ScatterND' && rewrite(body, index, node)),
};

function rewrite(body: PassBody, index: NodeIndex, node: Node): boolean {
  const [d, i, u] = node.input ?? [];
  const out = node.output?.[0];
  if ((node.domain ?? '') !== '' || !d || !i || !u || !out || (node.name ?? '').endsWith(MARK)) return false;
  const b = new PassBuilder(body);
  const [data, indices, updates] = [b.value(d), b.value(i), b.value(u)];
  if (data === undefined || indices === undefined || updates === undefined || indices.rank !== 2 || indices.dim(1) !== 1) return false;
  const name = `${node.name ?? 'ScatterND'}${MARK}`;
  const result = b.build(name, (g) => {
    const rows = g.shapeOf(data, 0, 1); // [N]
    const spare = g.slice(data, [0], [1], [0]);
    const padded = g.concat([data, spare], 0);
    const spareAt = g.reshape(indices.dtype === 'int64' ? rows : g.cast(rows, indices.dtype), [1, 1]);
    const at = g.concat([indices, spareAt], 0);
    const scattered = g.emit(
      'ScatterND',
      [padded, at, g.concat([updates, spare], 0)],
      [{ dtype: data.dtype, shape: padded.shape }],
      {},
      '',
      name,
    )[0]!;
    return g.sliceDynamic(scattered, g.ints([0]), rows, [0], data.shape);
  });
  const built = b.nodes([[result, out]]);
  // The scatter keeps the original's attributes (reduction).
  const scatter = built.find((n) => n.opType === 'ScatterND')!;
  scatter.attribute = node.attribute ?? [];
  return replaceNodes(index, [node], built);
}
