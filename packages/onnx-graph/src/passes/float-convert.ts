import { type DType, floatData, isFloat, onnxDataType } from '../dtype.js';
import { GraphError } from '../errors.js';
import type { Graph } from '../graph.js';
import type { OnnxTypes } from '../proto.js';
import { applyPasses, type GraphPass, makeNode } from './rewrite.js';

type Node = OnnxTypes.INodeProto;
type HalfDType = 'float16' | 'bfloat16';

/**
 * The mark (`g.mark`) of a graph input or output that is held in the compute dtype where onnxruntime-node can
 * feed and read it (float16), and float32 otherwise (bfloat16: Node has no bfloat16 tensor): a KV cache.
 * Every other float32 input and output stays float32.
 */
export const COMPUTE_DTYPE_IO = 'compute-dtype-io';

/** The dtype a `COMPUTE_DTYPE_IO` input or output has in a graph computing in `dtype`. */
export function computeIoDType(dtype: 'float32' | HalfDType): 'float32' | 'float16' {
  return dtype === 'float16' ? 'float16' : 'float32';
}

/**
 * A float32 graph converted to compute in `dtype`, with the numerics of HF's 16-bit modules (torch's
 * rounding points): every float32 value becomes `dtype` except
 * - the nodes built inside `g.inFloat32` (a router, a rotary in float32, SiLU), which read float32 and
 *   whose results are rounded once where a 16-bit node reads them;
 * - LayerNormalization, normalised in float32 with float32 weight and bias, then rounded (torch's
 *   LayerNorm kernels), and ScatterND 'add', summed in float32 and rounded once (no 16-bit CPU kernel);
 * - RMSNormalization, normalised in float32 with a unit scale, rounded, then times the weight in `dtype`
 *   (HF's Llama-family RMSNorm: `weight * hidden.float()...to(input_dtype)`);
 * - graph inputs and outputs, which keep their float32 type (a Cast at the boundary), except those marked
 *   `COMPUTE_DTYPE_IO`.
 * A Cast to float32 of a 16-bit value (a bf16 checkpoint's weight widened) is read as that value where a
 * `dtype` node reads it: the weight is used as stored, or cast once to `dtype`. Float32 constants become
 * `dtype` constants (rounded to nearest even, large finite values saturating: a mask's -1e9 stays finite
 * in float16). Loop and If bodies are converted with the graph (carried float values in `dtype`, but a
 * float32 input or a float32 result carried as it is). Run it first, before the fusions: they match the
 * 16-bit forms it writes.
 */
export function floatConvertPass(dtype: HalfDType): GraphPass {
  return {
    name: dtype,
    run(body) {
      const g = body.graph;
      // The whole model is converted from its root (bodies with it); the bodies' own visits find nothing.
      if (body.nodes !== g.nodes) return 0;
      if (g.computeDtype !== 'float32') {
        throw new GraphError('BAD_ARGUMENT', `floatConvertPass('${dtype}'): the graph computes in ${g.computeDtype} already`);
      }
      const count = new Converter(g, dtype).root();
      g.convertedTo(dtype);
      return count;
    },
  };
}

/** The passes that make a float32 graph compute in `dtype`: none for float32, else `floatConvertPass(dtype)`. */
export function computeDtypePasses(dtype: 'float32' | HalfDType): GraphPass[] {
  return dtype === 'float32' ? [] : [floatConvertPass(dtype)];
}

/** Converts the float32 graph `g` in place to compute in `dtype` (nothing for float32 or undefined): a builder's `computeDtype` option. */
export function applyComputeDtype(g: Graph, dtype: 'float32' | HalfDType | undefined): void {
  applyPasses(g, computeDtypePasses(dtype ?? 'float32'));
}

/** Where a value of the float32 graph lives in the converted one. */
interface Place {
  name: string;
  dtype: DType;
  /** A Cast to float32 of a 16-bit value: that value, which 16-bit readers use instead. */
  narrow?: { name: string; dtype: DType };
  /** Made inside `inFloat32` (or a float32 graph input): read as is there, rounded to E first elsewhere. */
  island?: boolean;
}

/** One body's places and the shared casts made in it (a body reads its ancestors'). */
class Scope {
  readonly places = new Map<string, Place>();
  readonly casts = new Map<string, string>();
  constructor(readonly parent?: Scope) {}

  place(name: string): Place | undefined {
    for (let s: Scope | undefined = this; s !== undefined; s = s.parent) {
      const p = s.places.get(name);
      if (p !== undefined) return p;
    }
    return undefined;
  }

  cast(key: string): string | undefined {
    for (let s: Scope | undefined = this; s !== undefined; s = s.parent) {
      const c = s.casts.get(key);
      if (c !== undefined) return c;
    }
    return undefined;
  }
}

/** The nodes of one body being rewritten, in order. */
type Out = Node[];

class Converter {
  private count = 0;
  private readonly before = new Map<string, DType>();

  constructor(
    private readonly g: Graph,
    private readonly E: HalfDType,
  ) {}

  root(): number {
    const g = this.g;
    const { inputs, outputs } = g.snapshot();
    const scope = new Scope();
    for (const v of inputs) {
      if (v.dtype !== 'float32') continue;
      if (g.markOf(v.name) !== COMPUTE_DTYPE_IO) {
        // Cast to E where the graph computes in E (a float32 region reads the input as fed).
        scope.places.set(v.name, { name: v.name, dtype: 'float32', island: true });
      } else if (computeIoDType(this.E) === this.E) {
        this.retype(v.name, this.E);
        scope.places.set(v.name, { name: v.name, dtype: this.E });
        this.count++;
      }
    }
    const wants = new Map<string, DType>();
    for (const v of outputs) {
      if (v.dtype !== 'float32') continue;
      wants.set(v.name, g.markOf(v.name) === COMPUTE_DTYPE_IO ? computeIoDType(this.E) : 'float32');
    }
    const nodes = this.body(g.nodes, scope, wants);
    g.nodes.splice(0, g.nodes.length, ...nodes);
    for (const [name, dtype] of wants) if (g.typeOf(name)?.dtype !== dtype) this.retype(name, dtype);
    return this.count;
  }

  /**
   * `nodes` converted in `scope`. `keep`: the body's outputs that must come out in a given dtype under their
   * own name (the root graph's outputs): their producer writes a fresh name and a Cast makes them.
   */
  private body(nodes: readonly Node[], scope: Scope, keep: ReadonlyMap<string, DType> = new Map()): Out {
    const out: Out = [];
    for (const node of nodes) {
      const before = out.length;
      this.node(node, scope, out);
      for (const o of node.output ?? []) {
        const want = keep.get(o);
        const p = scope.places.get(o);
        if (want === undefined || p === undefined || p.dtype === want) continue;
        // The producer writes a fresh name in p.dtype; the output is a Cast of it under its own name.
        const fresh = this.g.freshName(`${o}/as_${p.dtype}`, { dtype: p.dtype, shape: this.shape(o) });
        const producer = out.slice(before).find((n) => n.output?.includes(p.name));
        if (producer === undefined) throw new GraphError('BAD_ARGUMENT', `floatConvertPass: no producer for output '${o}'`);
        producer.output![producer.output!.indexOf(p.name)] = fresh;
        for (const n of out.slice(before)) n.input = (n.input ?? []).map((x) => (x === p.name ? fresh : x));
        scope.places.set(o, { name: fresh, dtype: p.dtype });
        out.push(this.castNode(fresh, want, o));
      }
    }
    return this.dropUnread(out, scope, keep);
  }

  private node(node: Node, scope: Scope, out: Out): void {
    const op = (node.domain ?? '') === '' ? (node.opType ?? '') : '';
    const inFloat32 = this.g.computesInFloat32(node.output?.[0] ?? '');
    if (op === 'Loop') this.loop(node, scope, out);
    else if (op === 'If') this.ifNode(node, scope, out);
    else if ((node.attribute ?? []).some((a) => a.g)) {
      throw new GraphError('BAD_ARGUMENT', `floatConvertPass: control flow '${node.opType}' (${node.name}) is not converted`);
    } else if (op === 'Cast') this.castOf(node, scope, out, inFloat32);
    else if (op === 'Identity') this.identity(node, scope, out);
    else if (op === 'RMSNormalization' && !inFloat32) this.rmsNorm(node, scope, out);
    else if ((op === 'LayerNormalization' || isScatterAdd(node)) && !inFloat32) this.roundedFloat32(node, scope, out);
    else this.compute(node, scope, out, inFloat32);
  }

  /** Any other node: in float32 inside `inFloat32`, else in E. */
  private compute(node: Node, scope: Scope, out: Out, inFloat32: boolean): void {
    const standard = (node.domain ?? '') === '';
    const op = node.opType ?? '';
    const want: DType = inFloat32 ? 'float32' : this.E;
    // Inputs that were float32 are read in the node's dtype; others (a bf16 table a Gather reads) as they are.
    node.input = (node.input ?? []).map((i) => (i === '' ? i : this.read(scope, i, this.wasFloat32(i) ? want : undefined, out, inFloat32)));
    let changed = false;
    if (standard && op === 'ConstantOfShape' && want !== 'float32') changed = this.constantOfShape(node) || changed;
    for (const o of node.output ?? []) {
      if (o === '') continue;
      const dt = this.wasFloat32(o) ? want : this.g.typeOf(o)?.dtype;
      if (dt === undefined) continue;
      if (dt !== 'float32' && this.wasFloat32(o)) {
        this.retype(o, dt);
        changed = true;
      }
      scope.places.set(o, { name: o, dtype: dt, ...(inFloat32 ? { island: true } : {}) });
    }
    if (changed) this.count++;
    out.push(node);
  }

  /**
   * A Cast. To float32 from a 16-bit value: kept for float32 readers, and 16-bit readers read the value
   * itself (`Place.narrow`). To float32 from an integer or bool, outside `inFloat32`: to the compute dtype.
   */
  private castOf(node: Node, scope: Scope, out: Out, inFloat32: boolean): void {
    const [input] = node.input ?? [];
    const o = node.output![0]!;
    const from = scope.place(input!) ?? this.original(input!);
    node.input = [from.name];
    out.push(node);
    if (!this.wasFloat32(o)) {
      scope.places.set(o, { name: o, dtype: this.g.typeOf(o)!.dtype });
      return;
    }
    if (from.dtype === 'float16' || from.dtype === 'bfloat16') {
      scope.places.set(o, { name: o, dtype: 'float32', narrow: { name: from.name, dtype: from.dtype } });
      return;
    }
    if (inFloat32 || isFloat(from.dtype)) {
      scope.places.set(o, { name: o, dtype: 'float32', ...(inFloat32 ? { island: true } : {}) });
      return;
    }
    node.attribute = (node.attribute ?? []).map((a) => (a.name === 'to' ? { ...a, i: onnxDataType(this.E) } : a));
    this.retype(o, this.E);
    scope.places.set(o, { name: o, dtype: this.E });
    this.count++;
  }

  /** An Identity (a graph or body output under another name) passes its input on as it is. */
  private identity(node: Node, scope: Scope, out: Out): void {
    const [input] = node.input ?? [];
    const o = node.output![0]!;
    const from = scope.place(input!) ?? this.original(input!);
    node.input = [from.name];
    if (from.dtype !== this.g.typeOf(o)?.dtype) this.retype(o, from.dtype);
    scope.places.set(o, { ...from, name: o });
    out.push(node);
  }

  /** HF's 16-bit RMSNorm: Mul(Cast(RMSNormalization(Cast(x, float32), ones), E), weight in E). */
  private rmsNorm(node: Node, scope: Scope, out: Out): void {
    const g = this.g;
    const [x, scale] = node.input as [string, string];
    const o = node.output![0]!;
    const d = this.shape(x).at(-1);
    if (typeof d !== 'number')
      throw new GraphError('BAD_ARGUMENT', `floatConvertPass: RMSNormalization '${node.name}' needs a static last dim`);
    const prefix = node.name!.slice(0, node.name!.lastIndexOf('.') + 1);
    const x32 = this.read(scope, x, 'float32', out);
    const ones = g.constant('float32', [d], new Float32Array(d).fill(1)).name;
    const normed = g.freshName(`${o}/as_float32`, { dtype: 'float32', shape: this.shape(o) });
    node.input = [x32, ones];
    node.output = [normed];
    out.push(node);
    const rounded = g.freshName(`${prefix}Cast_out`, { dtype: this.E, shape: this.shape(o) });
    out.push(this.castNode(normed, this.E, rounded, `${prefix}Cast`));
    const w = this.read(scope, scale, this.E, out);
    this.retype(o, this.E);
    out.push(makeNode('Mul', [rounded, w], [o], { name: g.freshName(`${prefix}Mul`) }));
    scope.places.set(o, { name: o, dtype: this.E });
    this.count++;
  }

  /**
   * A node computed in float32 and rounded once: torch's 16-bit LayerNorm, Cast(LayerNormalization(Cast(x,
   * float32), weight, bias in float32), E); a ScatterND 'add' (ORT's CPU EP has none in 16 bits).
   */
  private roundedFloat32(node: Node, scope: Scope, out: Out): void {
    const g = this.g;
    const o = node.output![0]!;
    const prefix = node.name!.slice(0, node.name!.lastIndexOf('.') + 1);
    if (isScatterAdd(node)) this.widenBeforeReshape(node.input![0]!, scope, out);
    node.input = (node.input ?? []).map((i) => (i === '' || !this.wasFloat32(i) ? i : this.read(scope, i, 'float32', out)));
    const normed = g.freshName(`${o}/as_float32`, { dtype: 'float32', shape: this.shape(o) });
    node.output = [normed, ...(node.output ?? []).slice(1)];
    out.push(node);
    this.retype(o, this.E);
    out.push(this.castNode(normed, this.E, o, `${prefix}Cast`));
    scope.places.set(o, { name: o, dtype: this.E });
    this.count++;
  }

  /**
   * The Reshape making `name` (a ScatterND 'add''s data) reshapes the value widened to float32 instead, as the
   * builder wrote it (`reshape(cast(h, float32))`): on ORT's CPU EP, where a 16-bit Add has no kernel, the
   * Cast's place decides whether the sum before it is rounded.
   */
  private widenBeforeReshape(name: string, scope: Scope, out: Out): void {
    const p = scope.place(name);
    const at = out.findIndex((n) => n.opType === 'Reshape' && n.output?.[0] === p?.name);
    const reshape = out[at];
    if (p === undefined || reshape === undefined || p.dtype !== this.E) return;
    const wide = this.g.freshName(`${reshape.input![0]}/as_float32`, { dtype: 'float32', shape: this.shape(reshape.input![0]!) });
    out.splice(at, 0, this.castNode(reshape.input![0]!, 'float32', wide));
    reshape.input = [wide, ...reshape.input!.slice(1)];
    this.retype(p.name, 'float32');
    scope.places.set(name, { name: p.name, dtype: 'float32' });
  }

  /**
   * A Loop: its float carried values carried in E (the body's inputs and carried outputs), its body
   * converted, its scans in the dtype the body makes them.
   */
  private loop(node: Node, scope: Scope, out: Out): void {
    const body = node.attribute!.find((a) => a.name === 'body')!.g!;
    const inner = new Scope(scope);
    const carried = (node.input ?? []).slice(2);
    // A float value carried in E, but one read as fed or made in float32 (a rotary table, an input).
    const types: DType[] = carried.map((c) => (scope.place(c)?.island ? 'float32' : this.converted(c)));
    node.input = (node.input ?? []).map((i, k) =>
      i === '' ? i : this.read(scope, i, k >= 2 && types[k - 2] === this.E ? this.E : undefined, out),
    );
    for (const [k, v] of (body.input ?? []).slice(2).entries()) this.retypeInfo(v, inner, types[k]!);
    const bodyOut = this.body(body.node ?? [], inner);
    const outputs = body.output ?? [];
    const wants = outputs.map((v, k) => (k === 0 ? 'bool' : k <= carried.length ? types[k - 1]! : this.converted(v.name!)));
    body.node = this.bodyOutputs(outputs, wants, inner, bodyOut);
    this.finishControl(node, outputs, scope, out);
  }

  /** An If: both branches converted, each output in E where it was float32. */
  private ifNode(node: Node, scope: Scope, out: Out): void {
    node.input = (node.input ?? []).map((i) => this.read(scope, i, undefined, out));
    let outputs: OnnxTypes.IValueInfoProto[] = [];
    for (const a of node.attribute ?? []) {
      if (!a.g) continue;
      const inner = new Scope(scope);
      const converted = this.body(a.g.node ?? [], inner);
      const outs = a.g.output ?? [];
      a.g.node = this.bodyOutputs(
        outs,
        outs.map((v) => this.converted(v.name!)),
        inner,
        converted,
      );
      outputs = outs;
    }
    this.finishControl(node, outputs, scope, out);
  }

  /** The dtype a value of the float32 graph has once converted (outside `inFloat32`). */
  private converted(name: string): DType {
    return this.wasFloat32(name) ? this.E : this.g.typeOf(name)!.dtype;
  }

  /** A body's outputs renamed to where their values are, in `wants`; returns the body's nodes. */
  private bodyOutputs(outputs: OnnxTypes.IValueInfoProto[], wants: readonly DType[], inner: Scope, nodes: Out): Out {
    const made = new Set(nodes.flatMap((n) => n.output ?? []));
    outputs.forEach((v, k) => {
      // A float32 result leaves as it is (a carried rotary table); others in their dtype.
      let name = this.read(inner, v.name!, wants[k], nodes, wants[k] === 'float32');
      if (!made.has(name) && !nodes.some((n) => n.output?.includes(name))) {
        // A body output must be made in the body: an outer value passes through an Identity.
        const id = this.g.freshName(`${v.name}/Identity`, { dtype: wants[k]!, shape: this.shape(v.name!) });
        nodes.push(makeNode('Identity', [name], [id], { name: `${id}/node` }));
        name = id;
      }
      v.name = name;
      this.retypeInfo(v, undefined, wants[k]!);
    });
    return nodes;
  }

  /** A Loop's or If's outputs typed as its body's (now converted) outputs. */
  private finishControl(node: Node, bodyOutputs: readonly OnnxTypes.IValueInfoProto[], scope: Scope, out: Out): void {
    const skip = node.opType === 'Loop' ? 1 : 0;
    (node.output ?? []).forEach((o, k) => {
      const info = bodyOutputs[k + skip];
      const dt = (info && elemDType(info)) ?? this.g.typeOf(o)!.dtype;
      if (dt !== this.g.typeOf(o)?.dtype) this.retype(o, dt);
      scope.places.set(o, { name: o, dtype: dt });
    });
    this.count++;
    out.push(node);
  }

  /** A body input or output's declared type set to `dtype` (and its place in `scope`: a float32 one as fed). */
  private retypeInfo(v: OnnxTypes.IValueInfoProto, scope: Scope | undefined, dtype: DType): void {
    const t = v.type?.tensorType;
    if (t) t.elemType = onnxDataType(dtype);
    if (this.g.typeOf(v.name!) !== undefined && this.g.typeOf(v.name!)!.dtype !== dtype) this.retype(v.name!, dtype);
    scope?.places.set(v.name!, { name: v.name!, dtype, ...(dtype === 'float32' ? { island: true } : {}) });
  }

  /**
   * The name holding `name`'s value in `want` (undefined: as it is now). Casts to E are shared (one per
   * value and body); casts to float32 are made per reader, as a builder's `g.cast` into a float32 island is.
   */
  private read(scope: Scope, name: string, want: DType | undefined, out: Out, inFloat32 = false): string {
    let p = scope.place(name) ?? this.original(name);
    if (want === undefined || !isFloat(p.dtype)) return p.name;
    if (p.island && !inFloat32) {
      // Leaving a float32 region: rounded once (shared), as the builder's cast back to the compute dtype did.
      const rounded = this.read(scope, name, this.E, out, true);
      if (want === this.E) return rounded;
      p = { name: rounded, dtype: this.E };
    }
    if (p.dtype === want) return p.name;
    if (p.narrow !== undefined && p.narrow.dtype === want) return p.narrow.name;
    const source = p.narrow ?? p;
    const key = `${source.name}|${want}`;
    const seen = want === 'float32' ? undefined : scope.cast(key);
    if (seen !== undefined) return seen;
    const made = this.constantIn(source.name, want) ?? this.castInto(source.name, want, out);
    if (want !== 'float32') {
      // A cast of an initializer is shared by the whole model, as `g.cast` shares it.
      let s = scope;
      if (this.g.initializerRef(source.name) !== undefined) while (s.parent !== undefined) s = s.parent;
      s.casts.set(key, made);
    }
    return made;
  }

  /** A Cast node appended to `out`: `source` in `to`, under a fresh name. */
  private castInto(source: string, to: DType, out: Out): string {
    const name = this.g.freshName(`${source}/as_${to}`, { dtype: to, shape: this.shape(source) });
    out.push(this.castNode(source, to, name));
    return name;
  }

  private castNode(input: string, to: DType, output: string, nodeName?: string): Node {
    return makeNode('Cast', [input], [output], {
      name: nodeName ? this.g.freshName(nodeName) : `${output}/Cast`,
      attrs: { to: { int: onnxDataType(to) } },
    });
  }

  /**
   * A small float32 constant with finite values beyond `to`'s range as a `to` constant, those values
   * saturated (a mask bias of -1e9 stays finite in float16, not -inf as a Cast makes it); else undefined.
   */
  private constantIn(name: string, to: DType): string | undefined {
    const ref = this.g.initializerRef(name);
    if (ref === undefined || ref.kind !== 'data' || ref.dtype !== 'float32' || (to !== 'float16' && to !== 'bfloat16')) return undefined;
    const max = to === 'float16' ? 65504 : 3.3895313892515355e38;
    const values = ref.data as Float32Array;
    if (values.length > 64 || !values.some((x) => Number.isFinite(x) && Math.abs(x) > max)) return undefined;
    return this.g.constant(to, [...ref.shape], halfBits(values, to)).name;
  }

  /** A ConstantOfShape's float32 value attribute in E; true when it changed. */
  private constantOfShape(node: Node): boolean {
    const a = (node.attribute ?? []).find((x) => x.name === 'value');
    if (a?.t?.dataType !== onnxDataType('float32')) return false;
    const raw = a.t.rawData!;
    const bits = halfBits(new Float32Array(new Uint8Array(raw).buffer), this.E);
    a.t = { ...a.t, dataType: onnxDataType(this.E), rawData: new Uint8Array(bits.buffer) };
    return true;
  }

  /** Drops the widening Casts no node reads any more (their readers read the 16-bit value itself). */
  private dropUnread(nodes: Out, scope: Scope, keep: ReadonlyMap<string, DType>): Out {
    const read = new Set<string>(keep.keys());
    const readBy = (n: Node) => {
      for (const i of n.input ?? []) read.add(i);
      for (const a of n.attribute ?? []) if (a.g) for (const name of subgraphReads(a.g)) read.add(name);
    };
    nodes.forEach(readBy);
    return nodes.filter((n) => {
      const o = n.output?.[0] ?? '';
      const widening = n.opType === 'Cast' && scope.places.get(o)?.narrow !== undefined;
      return !widening || read.has(o);
    });
  }

  /** The dtype `name` had in the float32 graph. */
  private wasFloat32(name: string): boolean {
    return (this.before.get(name) ?? this.g.typeOf(name)?.dtype) === 'float32';
  }

  /** Retypes `name`, remembering what it was. */
  private retype(name: string, dtype: DType): void {
    if (!this.before.has(name)) this.before.set(name, this.g.typeOf(name)!.dtype);
    this.g.retype(name, dtype);
  }

  private original(name: string): Place {
    const t = this.g.typeOf(name);
    if (t === undefined) throw new GraphError('BAD_ARGUMENT', `floatConvertPass: no type for '${name}'`);
    return { name, dtype: t.dtype };
  }

  private shape(name: string) {
    return this.g.typeOf(name)?.shape ?? [];
  }
}

function isScatterAdd(node: Node): boolean {
  const r = node.attribute?.find((a) => a.name === 'reduction');
  return node.opType === 'ScatterND' && r?.s !== undefined && r.s !== null && new TextDecoder().decode(r.s) === 'add';
}

/** Names a subgraph reads (its nodes' inputs and outputs, nested bodies included). */
function subgraphReads(g: OnnxTypes.IGraphProto): Set<string> {
  const names = new Set<string>();
  for (const node of g.node ?? []) {
    for (const i of node.input ?? []) names.add(i);
    for (const a of node.attribute ?? []) if (a.g) for (const n of subgraphReads(a.g)) names.add(n);
  }
  for (const o of g.output ?? []) names.add(o.name ?? '');
  return names;
}

const ELEM: Record<number, DType> = { 1: 'float32', 10: 'float16', 16: 'bfloat16' };

/** A body value's float type, or undefined (not a float). */
function elemDType(v: OnnxTypes.IValueInfoProto): DType | undefined {
  return ELEM[v.type?.tensorType?.elemType ?? 0];
}

/** float32 values as 16-bit bits, rounded to nearest even; finite values beyond the type's range saturate. */
function halfBits(values: Float32Array, to: HalfDType): Uint16Array {
  const max = to === 'float16' ? 65504 : 3.3895313892515355e38;
  const v = values.map((x) => (Number.isFinite(x) ? Math.max(-max, Math.min(max, x)) : x));
  return floatData(to, v) as Uint16Array;
}
