import { stackedRows } from '../expert-weights.js';
import { MS_DOMAIN } from '../graph-core.js';
import type { TensorRef } from '../tensor-ref.js';
import { PassBuilder, scopeOf } from './attention-pattern.js';
import { linearWeights, type QuantizedLinear, routedRegions } from './moe-experts.js';
import { attrNumber, type GraphPass, NodeIndex, type PassBody, replaceNodes } from './rewrite.js';

/**
 * Each routed expert's gate and up Linears, once block-quantized (`quantizeLinearPass`), as one MatMulNBits over
 * both weights' blocks (rows stacked: gate, then up) and a Split: one kernel launch of 2I rows instead of two of
 * I. A decode step's experts are one-row products of ~1 MB each, which ORT's CPU kernel streams at about two
 * thirds of the rate it reaches on larger ones (docs/benchmarks.md, "Expert gate and up in one MatMulNBits").
 * Every output column is the same dot product over the same quantized input blocks, so the result is the same,
 * bit for bit. Float Linears are left alone (their stacked copy would be a second copy of the weights). Run it
 * after `quantizeLinearPass` and before `expertGroupsPass`.
 */
export const expertGateUpPass: GraphPass = {
  name: 'expert-gate-up',
  run(body) {
    let n = 0;
    const index = new NodeIndex(body);
    for (const region of routedRegions(body.graph).values()) {
      for (const e of region.experts) if (fuse(body, index, e.gate, e.up)) n++;
    }
    return n;
  },
};

function fuse(body: PassBody, index: NodeIndex, gate: string, up: string): boolean {
  const [gn, un] = [index.producer(gate), index.producer(up)];
  const [gl, ul] = [linearWeights(index, gate), linearWeights(index, up)];
  if (gn === undefined || un === undefined || gl?.kind !== 'quantized' || ul?.kind !== 'quantized') return false;
  const x = gn.input?.[0];
  const level = (n: typeof gn) => attrNumber(n, 'accuracy_level', 0);
  const same = (a: QuantizedLinear, b: QuantizedLinear) =>
    a.k === b.k && a.bits === b.bits && a.blockSize === b.blockSize && (a.zeroPoints === undefined) === (b.zeroPoints === undefined);
  if (!x || un.input?.[0] !== x || !same(gl, ul) || level(gn) !== level(un) || (un.input ?? []).length !== (gn.input ?? []).length) {
    return false;
  }
  const b = new PassBuilder(body);
  const rowsShape = b.value(gate)?.shape.slice(0, -1);
  if (rowsShape === undefined) return false;
  const g = body.graph;
  const N = gl.n + ul.n;
  // Each part stacked by rows: B [N, blocks, bytes], scales and zero points [N * per-row].
  const base = gl.name.replace(/\.quant$/, '');
  const stacked = (gatePart: TensorRef, upPart: TensorRef, part: string) => {
    const perRow = gatePart.shape.reduce((p, d) => p * d, 1) / gl.n;
    const shape = gatePart.shape.length === 1 ? [N * perRow] : [N, ...gatePart.shape.slice(1)];
    return g.initializer(g.uniqueName(`${base}.gate_up.${part}`), stackedRows([gatePart, upPart], shape), gl.name).name;
  };
  const zeroPoints = gl.zeroPoints && ul.zeroPoints ? stacked(gl.zeroPoints, ul.zeroPoints, 'zero_points') : undefined;
  const inputs = [x, stacked(gl.b, ul.b, 'quant'), stacked(gl.scales, ul.scales, 'scales'), ...(zeroPoints ? [zeroPoints] : [])];
  const operands = inputs.map((name) => b.value(name)!);
  const [gateOut, upOut] = b.build(scopeOf(gn.name), (sg) => {
    const attrs = {
      K: { int: gl.k },
      N: { int: N },
      bits: { int: gl.bits },
      block_size: { int: gl.blockSize },
      accuracy_level: { int: level(gn) },
    };
    const [y] = sg.custom('MatMulNBits', MS_DOMAIN, operands, [{ dtype: 'float32', shape: [...rowsShape, N] }], attrs);
    return sg.split(y!, [gl.n, ul.n], -1);
  });
  return replaceNodes(
    index,
    [gn, un],
    b.nodes([
      [gateOut!, gate],
      [upOut!, up],
    ]),
  );
}
