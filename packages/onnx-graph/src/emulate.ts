import { bf16ToF32, f16ToF32 } from '@vlmkit/safetensors';
import { GraphError } from './errors.js';
import { type OnnxTypes, onnx } from './proto.js';

const T = onnx.TensorProto.DataType;
const FLOATS = new Set<number>([T.FLOAT, T.FLOAT16, T.BFLOAT16, T.DOUBLE]);
const BOOL_OPS = new Set(['Equal', 'Less', 'LessOrEqual', 'Greater', 'GreaterOrEqual', 'And', 'Or', 'Not', 'Xor', 'IsNaN', 'IsInf']);
const INT64_OPS = new Set(['Shape', 'Size', 'NonZero', 'ArgMax', 'ArgMin']);
/** Ops that only move, pick or repeat values: a rounded input gives rounded outputs, so no rounding is added after them. */
const MOVES = new Set([
  'Reshape',
  'Transpose',
  'Gather',
  'GatherElements',
  'GatherND',
  'Concat',
  'Split',
  'Slice',
  'Squeeze',
  'Unsqueeze',
  'Expand',
  'Identity',
  'Where',
  'Tile',
  'ConstantOfShape',
]);

/**
 * A 16-bit model rewritten to run on float32 kernels with the 16-bit model's numerics: every `dtype`
 * (bfloat16 or float16) tensor is held in float32, and every result a node computes in `dtype` is rounded
 * to it (a Cast to `dtype` and back after the node); nodes that only move values get no rounding. This is
 * what a 16-bit kernel that computes in float32 inside and rounds its output gives (cuBLAS, ORT's CUDA
 * elementwise kernels), so it checks a bfloat16 graph's numbers on an EP without bfloat16 kernels (ORT's
 * CPU EP has almost none, docs in the onnx-graph README). Initializers stay as stored (a Cast to float32
 * is added after each), so external data still applies. Graph inputs in `dtype` are refused; graph
 * outputs in `dtype` become float32 (holding rounded values). Loop / If bodies are rewritten the same way (a
 * carried `dtype` value is carried as float32 holding rounded values); Scan is refused.
 */
export function emulateInFloat32(model: Uint8Array, dtype: 'bfloat16' | 'float16' = 'bfloat16'): Uint8Array {
  const E = dtype === 'bfloat16' ? T.BFLOAT16 : T.FLOAT16;
  const proto = onnx.ModelProto.decode(model);
  const graph = proto.graph!;
  for (const v of graph.input ?? []) {
    if (elem(v) === E) throw new GraphError('BAD_ARGUMENT', `emulateInFloat32: graph input '${v.name}' is ${dtype}; feed it as float32`);
  }
  rewriteGraph(graph, new Map(), E, dtype);
  return onnx.ModelProto.encode(proto).finish();
}

const elem = (v: OnnxTypes.IValueInfoProto) => v.type?.tensorType?.elemType ?? 0;

/**
 * Rewrites `graph` in place (see `emulateInFloat32`); `outer` holds the element types of the enclosing graphs'
 * values (a Loop / If body reads them). Returns the graph's outputs' element types as they were before (E
 * where the output held E). Inputs in E (a body's carried values) become float32 holding rounded values.
 */
function rewriteGraph(graph: OnnxTypes.IGraphProto, outer: ReadonlyMap<string, number>, E: number, dtype: string): number[] {
  const types = new Map(outer);
  for (const v of graph.input ?? []) types.set(v.name!, elem(v));
  const head: OnnxTypes.INodeProto[] = [];
  for (const t of graph.initializer ?? []) {
    types.set(t.name!, t.dataType ?? 0);
    if (t.dataType !== E) continue;
    // The stored tensor under a new name, widened (exactly) by a Cast that takes the old name.
    const stored = `${t.name}::${dtype}`;
    head.push(cast(`${t.name}/emulate_widen`, stored, t.name!, T.FLOAT));
    t.name = stored;
  }
  const nodes: OnnxTypes.INodeProto[] = [...head];
  for (const node of graph.node ?? []) {
    const outTypes = CONTROL.has(node.opType ?? '') ? controlFlow(node, types, E, dtype) : outputTypes(node, types);
    (node.output ?? []).forEach((o, i) => {
      types.set(o, outTypes[i] ?? 0);
    });
    for (const a of node.attribute ?? []) if (a.t && a.t.dataType === E) a.t = widenTensor(a.t, E);
    // A body's results were rounded inside it: control flow only moves them out.
    const moves = MOVES.has(node.opType ?? '') || CONTROL.has(node.opType ?? '');
    const rounded = (node.output ?? []).map((o, i) => o !== '' && outTypes[i] === E && !moves);
    if (node.opType === 'Cast') {
      // Cast to E rounds already: its result only needs widening back.
      const out = node.output![0]!;
      if (outTypes[0] === E) {
        node.output = [`${out}::${dtype}`];
        nodes.push(node, cast(`${node.name}/emulate_widen`, `${out}::${dtype}`, out, T.FLOAT));
      } else nodes.push(node);
      continue;
    }
    const after: OnnxTypes.INodeProto[] = [];
    node.output = (node.output ?? []).map((o, i) => {
      if (!rounded[i]) return o;
      after.push(cast(`${o}/emulate_round`, `${o}::f32`, `${o}::${dtype}`, E), cast(`${o}/emulate_widen`, `${o}::${dtype}`, o, T.FLOAT));
      return `${o}::f32`;
    });
    nodes.push(node, ...after);
  }
  graph.node = nodes;
  const outs = (graph.output ?? []).map(elem);
  for (const v of [...(graph.input ?? []), ...(graph.output ?? []), ...(graph.valueInfo ?? [])]) {
    if (v.type?.tensorType && v.type.tensorType.elemType === E) v.type.tensorType.elemType = T.FLOAT;
  }
  return outs;
}

const CONTROL = new Set(['Loop', 'If']);

/**
 * A Loop's or If's bodies rewritten (they see `types`); its outputs' element types as before: a Loop's are its
 * body's outputs after the condition (carried, then scans), an If's its then-branch's.
 */
function controlFlow(node: OnnxTypes.INodeProto, types: ReadonlyMap<string, number>, E: number, dtype: string): number[] {
  let outs: number[] = [];
  for (const a of node.attribute ?? []) {
    if (!a.g) continue;
    const o = rewriteGraph(a.g, types, E, dtype);
    if (a.name === 'body') outs = o.slice(1);
    if (a.name === 'then_branch') outs = o;
  }
  return outs;
}

function cast(name: string, input: string, output: string, to: number): OnnxTypes.INodeProto {
  return {
    opType: 'Cast',
    name,
    domain: '',
    input: [input],
    output: [output],
    attribute: [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: to }],
  };
}

/** Each output's element type, from the node's inputs (the ops the builders emit; others: the first float input's type). */
function outputTypes(node: OnnxTypes.INodeProto, types: ReadonlyMap<string, number>): number[] {
  const op = node.opType ?? '';
  const n = node.output?.length ?? 0;
  const ins = (node.input ?? []).map((i) => (i === '' ? 0 : (types.get(i) ?? 0)));
  const all = (t: number) => new Array<number>(n).fill(t);
  const attr = (name: string) => node.attribute?.find((a) => a.name === name);
  if (op === 'Cast') return [Number(attr('to')?.i ?? 0)];
  if (BOOL_OPS.has(op)) return all(T.BOOL);
  if (INT64_OPS.has(op)) return all(T.INT64);
  if (op === 'TopK') return [ins[0]!, T.INT64];
  if (op === 'ConstantOfShape') return [attr('value')?.t?.dataType ?? T.FLOAT];
  if (op === 'Where') return [ins[1]!];
  if (op === 'Scan') throw new GraphError('BAD_ARGUMENT', `emulateInFloat32: control flow (${op} '${node.name}') is not rewritten`);
  return all(ins.find((t) => FLOATS.has(t)) ?? ins[0] ?? 0);
}

/** A 16-bit attribute tensor as float32 (exact). */
function widenTensor(t: OnnxTypes.ITensorProto, E: number): OnnxTypes.ITensorProto {
  const raw = t.rawData ?? new Uint8Array(0);
  // A copy: protobufjs hands bytes as a Node Buffer, whose slice() is a view into a shared pool.
  const bits = new Uint16Array(new Uint8Array(raw).buffer);
  const f = E === T.BFLOAT16 ? bf16ToF32(bits) : f16ToF32(bits);
  return { ...t, dataType: T.FLOAT, rawData: new Uint8Array(f.buffer, f.byteOffset, f.byteLength) };
}
