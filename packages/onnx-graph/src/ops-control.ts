import type { DType } from './dtype.js';
import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import type { OnnxTypes } from './proto.js';
import type { Dim, Shape } from './shape.js';
import type { Value } from './value.js';
import { valueInfo } from './value-info.js';

/** A loop-carried value: its initial value and, where it changes across iterations, the shape it takes (symbolic dims). */
export interface LoopCarried {
  value: Value;
  /** The shape in the body (default: the initial value's); give symbolic dims for sizes that change (a growing cache). */
  shape?: Shape;
}

export interface LoopBodyInputs {
  /** int64 scalar: the iteration number, from 0. */
  iteration: Value;
  /** bool scalar: the condition the iteration started with. */
  cond: Value;
  /** The carried values, in the order given. */
  carried: Value[];
}

export interface LoopBodyOutputs {
  /** bool scalar: go on (with `trips` still left). */
  cond: Value;
  /** The carried values for the next iteration (same dtypes and order as the inputs). */
  carried: readonly Value[];
  /** Values stacked over the iterations run: each becomes an output [iterations, ...shape]. */
  scans?: readonly Value[];
}

export interface LoopOutputs {
  /** The carried values after the last iteration (the initial ones when none ran). */
  carried: Value[];
  /** Per scan value, [iterations, ...shape]. */
  scans: Value[];
}

/**
 * ONNX control flow, methods of `Graph` (graph.ts mixes them in): Loop and If with bodies built by callbacks.
 * A body is a Graph that shares the root's names and initializers (`g.subgraph`): a parameter read inside a
 * body is stored once and the body reads it from the outer scope, and values of the enclosing graphs are
 * usable inside.
 */
export class ControlFlowOps {
  /**
   * ONNX Loop. Runs `body` while `cond` holds and fewer than `trips` iterations ran (either may be omitted,
   * not both): each iteration gets the carried values and returns their next ones, a new condition, and
   * scan values stacked into outputs.
   */
  loop(
    this: Graph,
    args: { trips?: Value; cond?: Value; carried: readonly (Value | LoopCarried)[] },
    body: (b: Graph, inputs: LoopBodyInputs) => LoopBodyOutputs,
  ): LoopOutputs {
    const name = this.nodeName('Loop');
    if (args.trips === undefined && args.cond === undefined)
      throw new GraphError('BAD_ARGUMENT', 'Loop needs trips or cond (or both)', name);
    if (args.trips !== undefined) expectScalar(name, args.trips, 'int64', 'trips');
    if (args.cond !== undefined) expectScalar(name, args.cond, 'bool', 'cond');
    const carried = args.carried.map((c) => ('value' in c ? c : { value: c }));
    const b = this.subgraph(`${name}/body`);
    const iteration = b.input(b.uniqueName(`${name}/iteration`), 'int64', []);
    const condIn = b.input(b.uniqueName(`${name}/cond_in`), 'bool', []);
    const inputs = carried.map((c, i) => b.input(b.uniqueName(`${name}/carried_${i}`), c.value.dtype, [...(c.shape ?? c.value.shape)]));
    const r = body(b, { iteration, cond: condIn, carried: inputs });
    expectScalar(name, r.cond, 'bool', 'the body cond');
    if (r.carried.length !== carried.length) {
      throw new GraphError('BAD_ARGUMENT', `the body returns ${r.carried.length} carried values for ${carried.length}`, name);
    }
    r.carried.forEach((v, i) => {
      if (v.dtype !== inputs[i]!.dtype)
        throw new GraphError('DTYPE_MISMATCH', `carried value ${i}: body returns ${v}, carries ${inputs[i]}`, name);
    });
    const scans = r.scans ?? [];
    bodyOutput(b, r.cond, `${name}/cond_out`);
    const carriedOut = r.carried.map((v, i) => bodyOutput(b, v, `${name}/carried_out_${i}`, inputs[i]!.shape));
    for (const [i, v] of scans.entries()) bodyOutput(b, v, `${name}/scan_${i}`);
    const trips = this.freshDim('iterations');
    const outs = this.emit(
      'Loop',
      [args.trips, args.cond, ...carried.map((c) => c.value)],
      [
        ...carriedOut.map((v) => ({ dtype: v.dtype, shape: v.shape })),
        ...scans.map((v) => ({ dtype: v.dtype, shape: [trips, ...v.shape] })),
      ],
      { body: { graph: graphProto(b) } },
      '',
      name,
    );
    return { carried: outs.slice(0, carried.length), scans: outs.slice(carried.length) };
  }

  /**
   * ONNX If: the outputs of `then` where `cond` (bool, one element) is true, else those of `otherwise`. Both
   * branches return values of the same dtypes; a dim on which they differ is symbolic in the result.
   */
  if(this: Graph, cond: Value, then: (b: Graph) => readonly Value[], otherwise: (b: Graph) => readonly Value[]): Value[] {
    const name = this.nodeName('If');
    if (cond.dtype !== 'bool') throw new GraphError('DTYPE_MISMATCH', `If condition must be bool, got ${cond}`, name);
    const branch = (label: string, fn: (b: Graph) => readonly Value[]) => {
      const b = this.subgraph(`${name}/${label}`);
      const outs = fn(b).map((v, i) => bodyOutput(b, v, `${name}/${label}_${i}`));
      return { b, outs };
    };
    const t = branch('then', then);
    const e = branch('else', otherwise);
    if (t.outs.length !== e.outs.length) {
      throw new GraphError('BAD_ARGUMENT', `If branches return ${t.outs.length} and ${e.outs.length} values`, name);
    }
    const specs = t.outs.map((v, i) => {
      const w = e.outs[i]!;
      if (v.dtype !== w.dtype) throw new GraphError('DTYPE_MISMATCH', `If output ${i}: then gives ${v}, else ${w}`, name);
      const shape: Dim[] =
        v.rank === w.rank ? v.shape.map((d, k) => (d === w.shape[k] ? d : this.freshDim('if'))) : v.shape.map(() => this.freshDim('if'));
      return { dtype: v.dtype, shape };
    });
    return this.emit('If', [cond], specs, { then_branch: { graph: graphProto(t.b) }, else_branch: { graph: graphProto(e.b) } }, '', name);
  }
}

/** Declares `v` a body output: under its own name when the body computed it, else through an Identity. */
function bodyOutput(b: Graph, v: Value, label: string, shape?: Shape): Value {
  const { inputs, outputs } = b.snapshot();
  const own = v.owner === b && !inputs.includes(v) && !outputs.includes(v);
  return own && shape === undefined ? b.output(v) : b.output(v, b.uniqueName(label), shape);
}

/** The body as a GraphProto (nodes, inputs, outputs; its initializers live in the root). */
function graphProto(b: Graph): OnnxTypes.IGraphProto {
  const { name, nodes, inputs, outputs } = b.snapshot();
  return { name, node: [...nodes], input: inputs.map(valueInfo), output: outputs.map(valueInfo) };
}

function expectScalar(name: string, v: Value, dtype: DType, what: string): void {
  if (v.dtype !== dtype || v.rank !== 0) throw new GraphError('SHAPE_MISMATCH', `Loop ${what} must be a ${dtype} scalar, got ${v}`, name);
}
