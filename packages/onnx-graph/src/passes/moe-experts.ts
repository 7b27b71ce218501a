import { interleavedGateUp, interleavedRows, stackedExperts } from '../expert-weights.js';
import type { Graph } from '../graph.js';
import { MS_DOMAIN } from '../graph-core.js';
import type { OnnxTypes } from '../proto.js';
import type { TensorRef } from '../tensor-ref.js';
import type { Value } from '../value.js';
import { PassBuilder } from './attention-pattern.js';
import { attrNumber, feedersOf, type GraphPass, type NodeIndex, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/** The mark of a routed-experts result (`markRoutedExperts`), which `moeExpertsPass` replaces. */
export const ROUTED_EXPERTS = 'routed_experts';

/**
 * One layer's routed experts as a builder wrote them, for `moeExpertsPass`: each token's output is the sum over
 * the experts it chose (`topkIds`) of `down(silu(gate(x)) * up(x))`, weighted by softmax(`routerLogits`) over
 * the chosen experts, renormalized to sum 1. How the experts were chosen is the builder's (ERNIE adds a bias
 * before its top-k); the weights must be these.
 */
export interface RoutedExperts {
  /** [N, D]. */
  tokens: Value;
  /** bool [N, 1]: the tokens routed to these experts; the others' rows of the result are zero. */
  inModality: Value;
  /** float32 [N, E]. */
  routerLogits: Value;
  /** int64 [N, k]. */
  topkIds: Value;
  /** Per expert, the outputs of its gate, up and down Linear layers (`nn.linear`: MatMuls marked 'linear'). */
  experts: readonly { gate: Value; up: Value; down: Value }[];
}

/** What the pass reads of a `RoutedExperts`: value names, and the scope its nodes are named in. */
interface Record {
  tokens: string;
  inModality: string;
  routerLogits: string;
  topkIds: string;
  experts: { gate: string; up: string; down: string }[];
  scope: string;
}

const records = new WeakMap<Graph, Map<string, Record>>();

/** The routed-experts regions of `g`'s model still marked, by result name: what the expert passes read. */
export function routedRegions(
  g: Graph,
): ReadonlyMap<string, { experts: readonly { gate: string; up: string; down: string }[]; scope: string }> {
  return records.get(g.root) ?? new Map();
}

/** Marks `out` (`g.mark`) as the result of the routed experts `r`, for `moeExpertsPass`. Returns `out`. */
export function markRoutedExperts(g: Graph, out: Value, r: RoutedExperts): Value {
  const byOut = records.get(g.root) ?? new Map<string, Record>();
  records.set(g.root, byOut);
  byOut.set(out.name, {
    tokens: r.tokens.name,
    inModality: r.inModality.name,
    routerLogits: r.routerLogits.name,
    topkIds: r.topkIds.name,
    experts: r.experts.map((e) => ({ gate: e.gate.name, up: e.up.name, down: e.down.name })),
    scope: g.scopePath,
  });
  return g.mark(out, ROUTED_EXPERTS);
}

/**
 * Routed experts -> one com.microsoft MoE (`moeExpertsPass`: float weights) or QMoE (`qmoeExpertsPass`:
 * experts already block-quantized by `quantizeLinearPass`, so run that first) per marked region, on the
 * region's own tokens (NonZero, Gather; the result scattered back, other rows zero). Every node that only fed
 * the result goes (the per-expert dispatch and Linears, the routing weights), and with them the per-expert
 * weights. Two passes, not one, because a profile chooses them apart: QMoE changes a quantized decoder's
 * numbers (it computes on dequantized weights, MatMulNBits at the load's accuracy level) and EPs register it
 * for fewer activation dtypes than MoE.
 *
 * The op routes by itself (softmax of its router input, top-k, renormalized); the region may have chosen
 * otherwise (ERNIE: top-k of softmax + bias). So the op is given the logits of the chosen experts and -1e30 for
 * the rest: its softmax over them is p_i / sum(p of the chosen) (shift-invariant), its top-k exactly the chosen.
 *
 * Weights: MoE takes fc1 [E, 2I, D] with gate and up rows interleaved (`interleavedGateUp`) and fc2 [E, D, I],
 * in the activations' dtype. QMoE takes the MatMulNBits blocks of the same rows stacked (codes, scales, zero
 * points) with `expert_weight_bits` and `block_size` (`qmoeFits` says which layouts). A region whose Linears
 * are not all of the pass's form, or quantized in a layout QMoE does not take, is left as it is.
 */
export const moeExpertsPass: GraphPass = routedExpertsPass('moe-experts', 'float');

/** `moeExpertsPass`'s quantized twin: block-quantized routed experts -> one com.microsoft QMoE per region. */
export const qmoeExpertsPass: GraphPass = routedExpertsPass('qmoe-experts', 'quantized');

/**
 * The fewest routed experts per region for which models' cpu profile makes them one MoE ('moe-experts-wide'):
 * ORT's CPU kernel saves the per-expert dispatch of the MatMul form, which pays only with many experts: at 128
 * it won in every shape measured, at 64 in one of three (docs/benchmarks.md, "Where ORT's MoE kernel pays off
 * on CPU").
 */
export const WIDE_MOE_EXPERTS = 128;

/** `moeExpertsPass` on regions of `WIDE_MOE_EXPERTS` routed experts or more; narrower ones stay as they are. */
export const wideMoeExpertsPass: GraphPass = routedExpertsPass('moe-experts-wide', 'float', WIDE_MOE_EXPERTS);

function routedExpertsPass(name: string, form: LinearForm, minExperts = 0): GraphPass {
  return {
    name,
    ...(minExperts > 0 ? { key: `minExperts=${minExperts}` } : {}),
    run(body) {
      const byOut = records.get(body.graph.root);
      if (byOut === undefined) return 0;
      return rewriteEach(body, (node, index) => {
        const out = node.output?.[0] ?? '';
        const r = byOut.get(out);
        if (r === undefined || body.graph.markOf(out) !== ROUTED_EXPERTS || r.experts.length < minExperts) return false;
        const insert = replacement(new PassBuilder(body), index, r, out, form);
        if (insert === undefined) return false;
        const keep = new Set(insert.flatMap((n) => n.input ?? []));
        if (!replaceNodes(index, feedersOf(index, node, keep), insert)) return false;
        byOut.delete(out);
        return true;
      });
    },
  };
}

type LinearForm = 'float' | 'quantized';

/** The MoE / QMoE nodes computing the region `r` into `out`, or undefined when its Linears do not fit one. */
function replacement(b: PassBuilder, index: NodeIndex, r: Record, out: string, form: LinearForm): Node[] | undefined {
  const [x, inModality, logits, topkIds] = [r.tokens, r.inModality, r.routerLogits, r.topkIds].map((n) => b.value(n));
  if (x === undefined || inModality === undefined || logits === undefined || topkIds === undefined) return undefined;
  const k = topkIds.shape[1];
  const E = r.experts.length;
  if (typeof k !== 'number' || logits.shape[1] !== E) return undefined;
  const linears = r.experts.map((e) => [e.gate, e.up, e.down].map((name) => linearWeights(index, name)));
  const flat = linears.flat();
  let experts: (g: Graph, x: Value, router: Value) => Value;
  if (form === 'float' && flat.every((l) => l?.kind === 'float')) {
    experts = (g, xs, router) => floatMoe(g, xs, router, linears as FloatLinear[][], k);
  } else if (form === 'quantized' && flat.every((l) => l?.kind === 'quantized') && qmoeFits(flat as QuantizedLinear[], x)) {
    experts = (g, xs, router) => quantizedMoe(g, xs, router, linears as QuantizedLinear[][], k);
  } else {
    return undefined;
  }
  const y = b.build(`${r.scope}.experts`, (g) => {
    const rows = g.reshape(g.nonZero(g.reshape(inModality, [-1])), [-1]); // [M]
    const ids = g.constant(
      'int64',
      [1, 1, E],
      Array.from({ length: E }, (_, e) => e),
    );
    const chosen = g.reduceMax(g.equal(g.unsqueeze(topkIds, [2]), ids), [1], false); // bool [N, E]
    const router = g.where(chosen, logits, g.scalar(-1e30, 'float32'));
    const moe = experts(g, g.gather(x, rows, 0), g.cast(g.gather(router, rows, 0), x.dtype));
    return g.scatterND(g.mul(x, 0), g.unsqueeze(rows, [1]), moe);
  });
  return b.nodes([[y, out]]);
}

interface FloatLinear {
  kind: 'float';
  /** The weight [out, in] as stored (the initializer before any Cast). */
  weight: TensorRef;
  name: string;
}

/** `quantizeLinearPass`'s MatMulNBits: its initializers and attributes. */
export interface QuantizedLinear {
  kind: 'quantized';
  b: TensorRef;
  scales: TensorRef;
  zeroPoints: TensorRef | undefined;
  n: number;
  k: number;
  bits: number;
  blockSize: number;
  name: string;
}

/** The weights of the Linear whose output is `name`: `nn.linear`'s MatMul on a (cast) initializer, or `quantizeLinearPass`'s MatMulNBits. */
export function linearWeights(index: NodeIndex, name: string): FloatLinear | QuantizedLinear | undefined {
  const g = index.body.graph;
  const node = index.producer(name);
  const ref = (n: string | undefined) => (n ? g.initializerRef(n) : undefined);
  if (node?.opType === 'MatMulNBits' && node.domain === MS_DOMAIN) {
    const [, q, scales, zeroPoints] = node.input ?? [];
    const [bq, bs, zp] = [ref(q), ref(scales), ref(zeroPoints)];
    if (bq === undefined || bs === undefined || (zeroPoints && zp === undefined)) return undefined;
    const [n, k] = [attrNumber(node, 'N', 0), attrNumber(node, 'K', 0)];
    const [bits, blockSize] = [attrNumber(node, 'bits', 4), attrNumber(node, 'block_size', 0)];
    return { kind: 'quantized', b: bq, scales: bs, zeroPoints: zp, n, k, bits, blockSize, name: q! };
  }
  if (node?.opType !== 'MatMul' || (node.domain ?? '') !== '') return undefined;
  const t = index.producer(node.input?.[1] ?? '');
  const perm = t?.attribute?.find((a) => a.name === 'perm')?.ints?.map(Number);
  if (t?.opType !== 'Transpose' || perm?.length !== 2 || perm[0] !== 1 || perm[1] !== 0) return undefined;
  const cast = index.producer(t.input?.[0] ?? '');
  const w = cast?.opType === 'Cast' ? cast.input?.[0] : t.input?.[0];
  const weight = ref(w);
  return weight === undefined || weight.shape.length !== 2 ? undefined : { kind: 'float', weight, name: w! };
}

/** com.microsoft MoE on the float weights, packed once at save, in the activations' dtype. */
function floatMoe(g: Graph, x: Value, router: Value, linears: FloatLinear[][], k: number): Value {
  const [gates, ups, downs] = [0, 1, 2].map((i) => linears.map((l) => l[i]!.weight)) as [TensorRef[], TensorRef[], TensorRef[]];
  const first = linears[0]![0]!.name;
  const like = (v: Value) => g.cast(v, x.dtype);
  const fc1 = like(g.initializer(g.scoped('fc1'), interleavedGateUp(gates, ups), first));
  const fc2 = like(g.initializer(g.scoped('fc2'), stackedExperts(downs), first));
  return g.moe(x, router, fc1, fc2, { k });
}

/**
 * QMoE takes float32 activations and blocks of one width and bit count, K a whole number of blocks. ORT 1.29's
 * CPU kernel reads rows of one block as per-row quantization, and then 4-bit zero points wrong (measured), so
 * those need two blocks or more.
 */
function qmoeFits(all: QuantizedLinear[], x: Value): boolean {
  const { bits, blockSize, zeroPoints } = all[0]!;
  const same = (l: QuantizedLinear) =>
    l.bits === bits && l.blockSize === blockSize && (l.zeroPoints === undefined) === (zeroPoints === undefined);
  const blocks = (l: QuantizedLinear) => l.k % blockSize === 0 && (bits === 8 || l.zeroPoints === undefined || l.k >= 2 * blockSize);
  return x.dtype === 'float32' && all.every((l) => same(l) && blocks(l));
}

/** com.microsoft QMoE on the Linears' MatMulNBits blocks (`qmoeFits`), stacked once at save. */
function quantizedMoe(g: Graph, x: Value, router: Value, linears: QuantizedLinear[][], k: number): Value {
  const { bits, blockSize, name: first } = linears[0]![0]!;
  // Per expert, the Linears whose rows interleave: fc1 gate row i then up row i; fc2 the down rows.
  const fc = (parts: QuantizedLinear[][], name: string) => {
    const { n, k: K } = parts[0]![0]!;
    const shape = (width: number): [number, number, number] => [linears.length, n * parts[0]!.length, width];
    const kBlocks = K / blockSize;
    const stack = (pick: (l: QuantizedLinear) => TensorRef, width: number) =>
      interleavedRows(
        parts.map((p) => p.map(pick)),
        shape(width),
      );
    const init = (suffix: string, ref: TensorRef) => g.initializer(g.scoped(`${name}.${suffix}`), ref, first);
    const zeroPoints = parts[0]![0]!.zeroPoints && stack((l) => l.zeroPoints!, Math.ceil((kBlocks * bits) / 8));
    return {
      weights: init(
        'quant',
        stack((l) => l.b, (K * bits) / 8),
      ),
      scales: init(
        'scales',
        stack((l) => l.scales, kBlocks),
      ),
      zeroPoints: zeroPoints && init('zero_points', zeroPoints),
    };
  };
  const fc1 = fc(
    linears.map((l) => [l[0]!, l[1]!]),
    'fc1',
  );
  const fc2 = fc(
    linears.map((l) => [l[2]!]),
    'fc2',
  );
  const inputs = [x, router, fc1.weights, fc1.scales, undefined, fc2.weights, fc2.scales, undefined, undefined, undefined, undefined];
  return g.custom('QMoE', MS_DOMAIN, [...inputs, fc1.zeroPoints, fc2.zeroPoints], [{ dtype: x.dtype, shape: x.shape }], {
    k: { int: k },
    activation_type: { string: 'swiglu' },
    swiglu_fusion: { int: 1 },
    activation_alpha: { float: 1 },
    activation_beta: { float: 0 },
    normalize_routing_weights: { int: 1 },
    expert_weight_bits: { int: bits },
    block_size: { int: blockSize },
  })[0]!;
}
