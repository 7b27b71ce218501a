import { type ComputeDType, type DType, floatData, type TypedArray, typedArrayFor } from './dtype.js';
import { GraphError } from './errors.js';
import type { OnnxTypes } from './proto.js';
import { onnx } from './proto.js';
import { type QuantizeOptions, type QuantizeRequest, quantizeOptions } from './quant.js';
import type { Dim, Shape } from './shape.js';
import { type TensorRef, tensorFromArray } from './tensor-ref.js';
import { Value } from './value.js';
import type { Weights } from './weights.js';

/** A node attribute with its ONNX kind made explicit (JS numbers do not say int or float). */
export type Attr =
  | { readonly int: number }
  | { readonly float: number }
  | { readonly string: string }
  | { readonly ints: readonly number[] }
  | { readonly floats: readonly number[] }
  | { readonly tensor: { dtype: DType; shape: readonly number[]; data: TypedArray } }
  /** A subgraph (Loop / If bodies): see `ControlFlowOps`. */
  | { readonly graph: OnnxTypes.IGraphProto };

export const MS_DOMAIN = 'com.microsoft';

export interface GraphOptions {
  /** Graph name written into the model. */
  name?: string;
  /** ai.onnx opset (default 23: Attention, RMSNormalization, RotaryEmbedding). */
  opset?: number;
  /**
   * Block-quantized weights for the Linear layers built on this graph (`nn.linear` and what uses it):
   * MatMulNBits on int8/int4 codes instead of MatMul on the float weight. Default: none (float).
   */
  quantize?: QuantizeRequest | undefined;
  /**
   * The float type the components built on this graph compute in (default 'float32'): they cast their float
   * inputs to it at entry, and `nn` blocks keep weights in it (a checkpoint tensor already in it is used as
   * stored; others are cast, a cast `saveModel({ fold })` does once while saving). See `ComputeDType`.
   */
  computeDtype?: ComputeDType | undefined;
}

export interface OutputSpec {
  dtype: DType;
  shape: Shape;
}

export interface InitializerEntry {
  readonly name: string;
  readonly ref: TensorRef;
}

/** What a root graph and its subgraphs share: one name space (ONNX resolves outer-scope names), the initializers. */
interface SharedState {
  readonly initializerList: InitializerEntry[];
  readonly domains: Set<string>;
  readonly counters: Map<string, number>;
  readonly valueNames: Set<string>;
  readonly byRef: Map<TensorRef, Value>;
  readonly byInitName: Map<string, Value>;
  readonly smallConstants: Map<string, Value>;
  /** Every value's dtype and shape by name, bodies' too: what rewrite passes read (`typeOf`). */
  readonly types: Map<string, OutputSpec>;
  dims: number;
}

/**
 * The bookkeeping under every op: scoped names, inputs, outputs,
 * initializers, and node emission. Ops (ops-*.ts) sit on top of it.
 *
 * A subgraph (a Loop or If body, `ControlFlowOps`) is a GraphCore with a `parent`: it has its own nodes,
 * inputs and outputs, but shares the root's name space (every name is unique in the whole model, as ONNX
 * needs for outer-scope references) and the root's initializers: a parameter or constant made in a body is
 * stored once, in the root graph, and read by the body as an outer-scope value. Values of any ancestor graph
 * may be used inside a body.
 */
export class GraphCore {
  readonly name: string;
  readonly opset: number;
  /** The weight quantization asked for at construction (`GraphOptions.quantize`), resolved; undefined: float. */
  readonly quantize: QuantizeOptions | undefined;
  /** The compute dtype asked for at construction (`GraphOptions.computeDtype`), default 'float32'. */
  readonly computeDtype: ComputeDType;
  /** The graph this one is a body of; undefined for the root (model) graph. */
  readonly parent: GraphCore | undefined;
  protected readonly nodeList: OnnxTypes.INodeProto[] = [];
  protected readonly inputList: Value[] = [];
  protected readonly outputList: Value[] = [];
  protected readonly initializerList: InitializerEntry[];
  protected readonly domains: Set<string>;
  private readonly scopeStack: string[] = [];
  private readonly shared: SharedState;

  /** `parent`: build a subgraph of it (`ControlFlowOps` does; options other than `name` come from the root). */
  constructor(options: GraphOptions = {}, parent?: GraphCore) {
    this.name = options.name ?? 'vlmkit';
    this.parent = parent;
    this.computeDtype = parent?.computeDtype ?? options.computeDtype ?? 'float32';
    if (parent === undefined && options.quantize !== undefined && this.computeDtype !== 'float32') {
      // nn.linear quantizes float32 activations only: refuse rather than silently keep float weights.
      throw new GraphError(
        'BAD_ARGUMENT',
        `quantize needs computeDtype 'float32' (got '${this.computeDtype}'): quantized weights are built for float32 activations`,
      );
    }
    if (parent !== undefined) {
      this.opset = parent.opset;
      this.quantize = parent.quantize;
      this.shared = parent.shared;
      // A body's nodes are named in the scope it was opened in.
      this.scopeStack.push(...parent.scopeStack);
    } else {
      this.opset = options.opset ?? 23;
      this.quantize = options.quantize !== undefined ? quantizeOptions(options.quantize) : undefined;
      this.shared = {
        initializerList: [],
        domains: new Set(),
        counters: new Map(),
        valueNames: new Set(),
        byRef: new Map(),
        byInitName: new Map(),
        smallConstants: new Map(),
        types: new Map(),
        dims: 0,
      };
    }
    this.initializerList = this.shared.initializerList;
    this.domains = this.shared.domains;
  }

  /** The model graph: this one, or the root of the bodies this one is nested in. */
  get root(): GraphCore {
    return this.parent === undefined ? this : this.parent.root;
  }

  /** The current scope path (`vision.blocks.3.attn`), empty at top level. */
  get scopePath(): string {
    return this.scopeStack.join('.');
  }

  /** Runs `fn` with `name` appended to the scope of node and initializer names. */
  scope<T>(name: string, fn: () => T): T {
    this.scopeStack.push(name);
    try {
      return fn();
    } finally {
      this.scopeStack.pop();
    }
  }

  /** A scoped name: `scope.name`. */
  scoped(name: string): string {
    const path = this.scopePath;
    return path === '' ? name : `${path}.${name}`;
  }

  /** Declares a graph input. Symbolic dims are strings (`'batch'`). */
  input(name: string, dtype: DType, shape: Shape): Value {
    this.claim(name);
    const v = this.track(new Value(this, name, dtype, [...shape]));
    this.inputList.push(v);
    return v;
  }

  /** Marks a value as a graph output under `name` (an Identity is added when the value has another name). */
  output(value: Value, name: string = value.name, shape?: Shape): Value {
    this.own(value, `output ${name}`);
    let out = value;
    // A body's output must be computed in the body: an outer-scope value passes through an Identity.
    if (value.name !== name || this.outputList.includes(value) || this.inputList.includes(value) || value.owner !== this) {
      this.claim(name);
      this.nodeList.push({ opType: 'Identity', name: `${name}/Identity`, input: [value.name], output: [name], domain: '' });
      out = this.track(new Value(this, name, value.dtype, shape ?? value.shape));
    } else if (shape !== undefined) {
      out = this.track(new Value(this, name, value.dtype, shape));
    }
    this.outputList.push(out);
    return out;
  }

  /**
   * An initializer named exactly `name`. The same TensorRef embedded twice
   * (tied embeddings) yields the same value, stored once.
   */
  initializer(name: string, ref: TensorRef): Value {
    const { byRef, byInitName } = this.shared;
    const seen = byRef.get(ref);
    if (seen !== undefined) return seen;
    if (byInitName.has(name)) {
      throw new GraphError('DUPLICATE_NAME', `initializer '${name}' is already defined with another tensor`);
    }
    this.claim(name);
    // Owned by the root: every body may read it.
    const v = this.track(new Value(this.root, name, ref.dtype, [...ref.shape]));
    this.initializerList.push({ name, ref });
    byRef.set(ref, v);
    byInitName.set(name, v);
    return v;
  }

  /**
   * A parameter from `weights` under its local name, embedded as an
   * initializer named after the current scope (`blocks.3.attn.qkv.weight`).
   * `shape` is the concrete shape the builder expects: checked against the
   * tensor, and what `recordParameters` records (the component's parameter
   * list is derived from these reads).
   */
  param(weights: Weights, localName: string, shape: readonly number[]): Value {
    return this.initializer(this.scoped(localName), this.paramRef(weights, localName, shape));
  }

  /** The tensor `param` would embed, read and shape-checked the same way, not embedded (a quantizer embeds a transform of it). */
  paramRef(weights: Weights, localName: string, shape: readonly number[]): TensorRef {
    const ref = weights.read(localName, shape);
    const ok = shape.length === ref.shape.length && shape.every((d, i) => d === ref.shape[i]);
    if (!ok) {
      throw new GraphError(
        'PARAMETER_SHAPE',
        `parameter '${weights.fullName(localName)}' has shape [${ref.shape.join(', ')}], expected [${shape.join(', ')}]`,
        this.scoped(localName),
      );
    }
    return ref;
  }

  /** A constant tensor; small ones are shared across the graph. */
  constant(dtype: DType, shape: readonly number[], values: readonly number[] | readonly bigint[] | TypedArray): Value {
    const n = shape.reduce((a, b) => a * b, 1);
    const small = n <= 64;
    const key = small ? `${dtype}|${shape.join(',')}|${Array.from(values as ArrayLike<number | bigint>).join(',')}` : '';
    if (small) {
      const hit = this.shared.smallConstants.get(key);
      if (hit !== undefined) return hit;
    }
    const data = toTypedArray(dtype, n, values);
    const name = small ? `const.${dtype}.${this.shared.smallConstants.size}` : this.uniqueName(this.scoped('const'));
    const v = this.initializer(name, tensorFromArray(dtype, shape, data));
    if (small) this.shared.smallConstants.set(key, v);
    return v;
  }

  /** An int64 1-D constant (axes, shapes, indices). */
  ints(values: readonly number[]): Value {
    return this.constant('int64', [values.length], values);
  }

  /** A scalar (rank-0) constant of `dtype`. */
  scalar(value: number, dtype: DType): Value {
    return this.constant(dtype, [], [value]);
  }

  /**
   * Emits one node. `outputs` gives each output's dtype and shape, already
   * inferred by the op; the returned values carry them.
   */
  protected emit(
    opType: string,
    inputs: readonly (Value | undefined)[],
    outputs: readonly OutputSpec[],
    attrs: Record<string, Attr | undefined> = {},
    domain = '',
    nodeName?: string,
  ): Value[] {
    const name = nodeName ?? this.nodeName(opType);
    for (const v of inputs) if (v !== undefined) this.own(v, name);
    if (domain !== '') this.domains.add(domain);
    const outNames = outputs.map((_, i) => (outputs.length === 1 ? `${name}/out` : `${name}/out${i}`));
    for (const o of outNames) this.claim(o);
    const attribute: OnnxTypes.IAttributeProto[] = [];
    for (const [key, a] of Object.entries(attrs)) if (a !== undefined) attribute.push(toAttribute(key, a));
    // Trailing optional inputs are dropped; inner ones are written as '' (ONNX's "absent").
    let last = inputs.length;
    while (last > 0 && inputs[last - 1] === undefined) last--;
    this.nodeList.push({
      opType,
      name,
      domain,
      input: inputs.slice(0, last).map((v) => v?.name ?? ''),
      output: outNames,
      attribute,
    });
    return outputs.map((o, i) => this.track(new Value(this, outNames[i]!, o.dtype, [...o.shape])));
  }

  private track(v: Value): Value {
    this.shared.types.set(v.name, { dtype: v.dtype, shape: v.shape });
    return v;
  }

  /** The dtype and shape of the value named `name` anywhere in the model (undefined: not made by this builder). */
  typeOf(name: string): OutputSpec | undefined {
    return this.shared.types.get(name);
  }

  /**
   * A new name in the model's name space, claimed (`base`, else `base_1`, ...), with its dtype and shape
   * recorded: for nodes and values that rewrite passes add.
   */
  freshName(base: string, type?: OutputSpec): string {
    const name = this.uniqueName(base);
    this.claim(name);
    if (type !== undefined) this.shared.types.set(name, type);
    return name;
  }

  /** Declares that nodes of `domain` (e.g. com.microsoft) are in the model: the serializer imports its opset. */
  useDomain(domain: string): void {
    if (domain !== '') this.domains.add(domain);
  }

  /** The live node list of this graph (root or body being built): rewrite passes edit it in place. */
  get nodes(): OnnxTypes.INodeProto[] {
    return this.nodeList;
  }

  /** The name the next `opType` node in this scope will get. */
  protected nodeName(opType: string): string {
    const base = this.scoped(opType);
    const counters = this.shared.counters;
    const k = counters.get(base) ?? 0;
    counters.set(base, k + 1);
    return k === 0 ? base : `${base}_${k}`;
  }

  protected uniqueName(base: string): string {
    const names = this.shared.valueNames;
    if (!names.has(base)) return base;
    for (let k = 1; ; k++) if (!names.has(`${base}_${k}`)) return `${base}_${k}`;
  }

  /** A fresh symbolic dim name for a size the builder cannot know. */
  protected freshDim(label: string): Dim {
    return `${label}_${this.shared.dims++}`;
  }

  protected claim(name: string): void {
    const names = this.shared.valueNames;
    if (names.has(name)) throw new GraphError('DUPLICATE_NAME', `the name '${name}' is already used in graph '${this.root.name}'`);
    names.add(name);
  }

  /** Refuses a value this graph cannot read: its own values and its ancestors' (outer scope) are readable. */
  protected own(v: Value, where: string): void {
    for (let g: GraphCore | undefined = this; g !== undefined; g = g.parent) if (v.owner === g) return;
    throw new GraphError('FOREIGN_VALUE', `value '${v.name}' belongs to another graph (or to a body this graph cannot see)`, where);
  }

  /** Everything a serialiser needs; the model module turns it into a ModelProto. */
  snapshot(): {
    name: string;
    opset: number;
    domains: string[];
    nodes: readonly OnnxTypes.INodeProto[];
    inputs: readonly Value[];
    outputs: readonly Value[];
    initializers: readonly InitializerEntry[];
  } {
    return {
      name: this.name,
      opset: this.opset,
      domains: [...this.domains].sort(),
      nodes: this.nodeList,
      inputs: this.inputList,
      outputs: this.outputList,
      // A body's initializers are the root's (outer-scope values): listed once, by the root.
      initializers: this.parent === undefined ? this.initializerList : [],
    };
  }
}

function toTypedArray(dtype: DType, n: number, values: readonly number[] | readonly bigint[] | TypedArray): TypedArray {
  if (values.length !== n) throw new GraphError('BAD_ARGUMENT', `constant has ${values.length} values, shape needs ${n}`);
  const out = typedArrayFor(dtype, n);
  if (out instanceof BigInt64Array) {
    for (let i = 0; i < n; i++) out[i] = BigInt(values[i] as number | bigint);
  } else if (dtype === 'float16' || dtype === 'bfloat16') {
    // Raw Uint16 bits are kept; numbers are rounded to the dtype (to nearest even).
    out.set(values instanceof Uint16Array ? values : floatData(dtype, values as ArrayLike<number>));
  } else {
    for (let i = 0; i < n; i++) (out as Float32Array)[i] = Number(values[i]);
  }
  return out;
}

export function toAttribute(name: string, a: Attr): OnnxTypes.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if ('int' in a) return { name, type: T.INT, i: a.int };
  if ('float' in a) return { name, type: T.FLOAT, f: a.float };
  if ('string' in a) return { name, type: T.STRING, s: new TextEncoder().encode(a.string) };
  if ('ints' in a) return { name, type: T.INTS, ints: [...a.ints] };
  if ('floats' in a) return { name, type: T.FLOATS, floats: [...a.floats] };
  if ('graph' in a) return { name, type: T.GRAPH, g: a.graph };
  const t = a.tensor;
  return {
    name,
    type: T.TENSOR,
    t: {
      dataType: onnx.TensorProto.DataType[dtypeKey(t.dtype)],
      dims: [...t.shape],
      rawData: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
    },
  };
}

function dtypeKey(dtype: DType): keyof typeof onnx.TensorProto.DataType {
  const map: Record<DType, keyof typeof onnx.TensorProto.DataType> = {
    float32: 'FLOAT',
    float16: 'FLOAT16',
    bfloat16: 'BFLOAT16',
    float64: 'DOUBLE',
    int64: 'INT64',
    int32: 'INT32',
    int16: 'INT16',
    int8: 'INT8',
    uint8: 'UINT8',
    bool: 'BOOL',
  };
  return map[dtype];
}
