import { type ComputeDType, type DType, type TypedArray, typedArrayOf } from './dtype.js';
import { GraphError } from './errors.js';
import { type Attr, type GraphOptions, type InitializerEntry, type OutputSpec, toAttribute } from './graph-core.js';
import { AttentionOps } from './ops-attention.js';
import { ContribOps } from './ops-contrib.js';
import { ControlFlowOps } from './ops-control.js';
import { MathOps } from './ops-math.js';
import { TensorOps } from './ops-tensor.js';
import type { OnnxTypes } from './proto.js';
import type { Dim, Shape } from './shape.js';
import { type TensorRef, tensorFromArray } from './tensor-ref.js';
import { Value } from './value.js';
import type { Weights } from './weights.js';

/** What a root graph and its subgraphs share: one name space (ONNX resolves outer-scope names), the initializers. */
interface SharedState {
  /** The ai.onnx opset the model imports (`lowerOpset`). */
  opset: number;
  readonly initializerList: InitializerEntry[];
  readonly domains: Set<string>;
  readonly counters: Map<string, number>;
  readonly valueNames: Set<string>;
  readonly byRef: Map<TensorRef, Value>;
  readonly byInitName: Map<string, Value>;
  /** What a node is, by its first output's name, for passes to read (`mark`). */
  readonly marks: Map<string, string>;
  /** The nodes built inside `inFloat32`, by their first output's name. */
  readonly float32Nodes: Set<string>;
  float32Depth: number;
  computeDtype: ComputeDType;
  readonly smallConstants: Map<string, Value>;
  /** Every value's dtype and shape by name, bodies' too: what rewrite passes read (`typeOf`). */
  readonly types: Map<string, OutputSpec>;
  dims: number;
}

/**
 * The graph builder. Values carry dtype and shape; ops are methods that
 * return values and check their operands; names are scoped:
 *
 * ```ts
 * const g = new Graph();
 * const x = g.input('x', 'float32', ['batch', 4]);
 * const y = g.scope('fc', () => g.matmul(x, w));
 * g.output(y, 'y');
 * ```
 *
 * This class holds the bookkeeping under every op: scoped names, inputs, outputs, initializers and node
 * emission. The ops are methods too, written in files of one concept each (ops-math.ts, ops-tensor.ts,
 * ops-attention.ts, ops-control.ts, ops-contrib.ts) and mixed into this class below.
 *
 * A subgraph (a Loop or If body, `g.loop`, `g.if`) is a Graph with a `parent`: it has its own nodes,
 * inputs and outputs, but shares the root's name space (every name is unique in the whole model, as ONNX
 * needs for outer-scope references) and the root's initializers: a parameter or constant made in a body is
 * stored once, in the root graph, and read by the body as an outer-scope value. Values of any ancestor graph
 * may be used inside a body.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the op methods declared by the interface below are installed there.
export class Graph {
  readonly name: string;
  /** The graph this one is a body of; undefined for the root (model) graph. */
  readonly parent: Graph | undefined;
  private readonly nodeList: OnnxTypes.INodeProto[] = [];
  private readonly inputList: Value[] = [];
  private readonly outputList: Value[] = [];
  private readonly scopeStack: string[] = [];
  private readonly shared: SharedState;

  /** `parent`: build a subgraph of it (`subgraph` does; options other than `name` come from the root). */
  constructor(options: GraphOptions = {}, parent?: Graph) {
    this.name = options.name ?? 'vlmkit';
    this.parent = parent;
    if (parent !== undefined) {
      this.shared = parent.shared;
      // A body's nodes are named in the scope it was opened in.
      this.scopeStack.push(...parent.scopeStack);
    } else {
      this.shared = {
        opset: options.opset ?? 23,
        initializerList: [],
        domains: new Set(),
        counters: new Map(),
        valueNames: new Set(),
        byRef: new Map(),
        byInitName: new Map(),
        marks: new Map(),
        float32Nodes: new Set(),
        float32Depth: 0,
        computeDtype: options.computeDtype ?? 'float32',
        smallConstants: new Map(),
        types: new Map(),
        dims: 0,
      };
    }
  }

  /** The ai.onnx opset the model imports (its bodies' too). */
  get opset(): number {
    return this.shared.opset;
  }

  /**
   * Declares an older ai.onnx opset for the whole model, for a runtime whose kernels stop at it (onnxruntime-web's
   * WebGPU EP: `webgpuOpsetPass`). The caller has checked that no op newer than it is left; raising is refused.
   */
  lowerOpset(version: number): void {
    if (!Number.isInteger(version) || version > this.shared.opset)
      throw new GraphError('BAD_ARGUMENT', `lowerOpset: ${version} is not at or below the model's opset ${this.shared.opset}`);
    this.shared.opset = version;
  }

  /**
   * The float type the graph computes in: 'float32' as built, the 16-bit type `floatConvertPass` converted it
   * to afterwards (or the one asked for at construction, `GraphOptions.computeDtype`).
   */
  get computeDtype(): ComputeDType {
    return this.shared.computeDtype;
  }

  /** The model graph: this one, or the root of the bodies this one is nested in. */
  get root(): Graph {
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
   * (tied embeddings) yields the same value, stored once. `before`: listed
   * just before that initializer (a pass replacing a weight keeps the order
   * of the tensors it writes), else last.
   */
  initializer(name: string, ref: TensorRef, before?: string): Value {
    const { byRef, byInitName, initializerList } = this.shared;
    const seen = byRef.get(ref);
    if (seen !== undefined) return seen;
    if (byInitName.has(name)) {
      throw new GraphError('DUPLICATE_NAME', `initializer '${name}' is already defined with another tensor`);
    }
    this.claim(name);
    // Owned by the root: every body may read it.
    const v = this.track(new Value(this.root, name, ref.dtype, [...ref.shape]));
    const at = before === undefined ? -1 : initializerList.findIndex((e) => e.name === before);
    initializerList.splice(at < 0 ? initializerList.length : at, 0, { name, ref });
    byRef.set(ref, v);
    byInitName.set(name, v);
    return v;
  }

  /** `v` is an initializer of this model (not a node output or an input). */
  isInitializer(v: Value): boolean {
    return this.shared.byInitName.get(v.name) === v;
  }

  /** The tensor of the initializer named `name`, or undefined (not an initializer). */
  initializerRef(name: string): TensorRef | undefined {
    return this.shared.initializerList.find((e) => e.name === name)?.ref;
  }

  /**
   * Drops the initializers no node of the model reads (in any body) and no graph output returns: what a
   * rewrite left behind (a float weight a pass replaced by its quantized form). Returns their names.
   */
  pruneInitializers(): string[] {
    const root = this.root;
    const read = new Set<string>(root.outputList.map((v) => v.name));
    const visit = (nodes: readonly OnnxTypes.INodeProto[]) => {
      for (const node of nodes) {
        for (const i of node.input ?? []) read.add(i);
        for (const a of node.attribute ?? []) {
          if (a.g) {
            visit(a.g.node ?? []);
            for (const o of a.g.output ?? []) read.add(o.name ?? '');
          }
        }
      }
    };
    visit(root.nodeList);
    const { initializerList, byRef, byInitName, smallConstants } = this.shared;
    const dropped = initializerList.filter((e) => !read.has(e.name));
    if (dropped.length === 0) return [];
    const names = new Set(dropped.map((e) => e.name));
    initializerList.splice(0, initializerList.length, ...initializerList.filter((e) => !names.has(e.name)));
    for (const e of dropped) {
      byRef.delete(e.ref);
      byInitName.delete(e.name);
    }
    for (const [key, v] of smallConstants) if (names.has(v.name)) smallConstants.delete(key);
    return [...names];
  }

  /**
   * Marks the node that made `v` as a `kind` (e.g. 'linear': nn.linear's MatMul) for rewrite passes to read
   * (`markOf`): what a builder knows about a node that its ops do not say. Returns `v`.
   */
  mark(v: Value, kind: string): Value {
    this.shared.marks.set(v.name, kind);
    return v;
  }

  /** The mark (`mark`) of the node whose first output is `name`, or undefined. */
  markOf(name: string): string | undefined {
    return this.shared.marks.get(name);
  }

  /**
   * Runs `fn`; the nodes it builds compute in float32 whatever 16-bit type `floatConvertPass` converts the
   * graph to (HF's `autocast(enabled=False)` regions: a MoE router, a rotary in float32): their float inputs
   * are cast to float32 and their results rounded where 16-bit nodes read them.
   */
  inFloat32<T>(fn: () => T): T {
    this.shared.float32Depth++;
    try {
      return fn();
    } finally {
      this.shared.float32Depth--;
    }
  }

  /** The node whose first output is `name` was built inside `inFloat32`. */
  computesInFloat32(name: string): boolean {
    return this.shared.float32Nodes.has(name);
  }

  /**
   * Retypes the value `name` (a graph input or output too), as `floatConvertPass` converts it.
   * @internal For rewrite passes.
   */
  retype(name: string, dtype: DType): void {
    const t = this.shared.types.get(name);
    if (t === undefined) throw new GraphError('BAD_ARGUMENT', `retype: no value '${name}' in graph '${this.root.name}'`);
    this.shared.types.set(name, { dtype, shape: t.shape });
    const root = this.root;
    for (const list of [root.inputList, root.outputList]) {
      const i = list.findIndex((v) => v.name === name);
      if (i >= 0) list[i] = new Value(root, name, dtype, list[i]!.shape);
    }
  }

  /** @internal For `floatConvertPass`. */
  convertedTo(dtype: ComputeDType): void {
    this.shared.computeDtype = dtype;
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
    const data = typedArrayOf(dtype, n, values);
    // Numbered by the shared ones made so far; a pruned one's number may be taken (`pruneInitializers`).
    const name = this.uniqueName(small ? `const.${dtype}.${this.shared.smallConstants.size}` : this.scoped('const'));
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

  /** An op from another domain with caller-given output specs (escape hatch for contrib ops). */
  custom(
    opType: string,
    domain: string,
    inputs: readonly (Value | undefined)[],
    outputs: readonly OutputSpec[],
    attrs: Record<string, Attr | undefined> = {},
  ): Value[] {
    return this.emit(opType, inputs, outputs, attrs, domain);
  }

  /**
   * Emits one node. `outputs` gives each output's dtype and shape, already
   * inferred by the op; the returned values carry them.
   * @internal For the op files; builders call the ops (or `custom`).
   */
  emit(
    opType: string,
    inputs: readonly (Value | undefined)[],
    outputs: readonly OutputSpec[],
    attrs: Record<string, Attr | undefined> = {},
    domain = '',
    nodeName?: string,
  ): Value[] {
    const name = nodeName ?? this.nodeName(opType);
    for (const v of inputs) if (v !== undefined) this.own(v, name);
    if (domain !== '') this.shared.domains.add(domain);
    const outNames = outputs.map((_, i) => (outputs.length === 1 ? `${name}/out` : `${name}/out${i}`));
    for (const o of outNames) this.claim(o);
    if (this.shared.float32Depth > 0 && outNames[0] !== undefined) this.shared.float32Nodes.add(outNames[0]);
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
    if (domain !== '') this.shared.domains.add(domain);
  }

  /** The live node list of this graph (root or body being built): rewrite passes edit it in place. */
  get nodes(): OnnxTypes.INodeProto[] {
    return this.nodeList;
  }

  /**
   * The name the next `opType` node in this scope will get.
   * @internal For the op files.
   */
  nodeName(opType: string): string {
    const base = this.scoped(opType);
    const counters = this.shared.counters;
    const k = counters.get(base) ?? 0;
    counters.set(base, k + 1);
    return k === 0 ? base : `${base}_${k}`;
  }

  /**
   * `base`, or `base_1`, ... : the first not yet used in the model (not claimed).
   * @internal For the op files.
   */
  uniqueName(base: string): string {
    const names = this.shared.valueNames;
    if (!names.has(base)) return base;
    for (let k = 1; ; k++) if (!names.has(`${base}_${k}`)) return `${base}_${k}`;
  }

  /**
   * A fresh symbolic dim name for a size the builder cannot know.
   * @internal For the op files.
   */
  freshDim(label: string): Dim {
    return `${label}_${this.shared.dims++}`;
  }

  /**
   * A body graph of this one, sharing the root's names and initializers (`g.loop`, `g.if`).
   * @internal For the op files.
   */
  subgraph(name: string): Graph {
    return new Graph({ name }, this);
  }

  private claim(name: string): void {
    const names = this.shared.valueNames;
    if (names.has(name)) throw new GraphError('DUPLICATE_NAME', `the name '${name}' is already used in graph '${this.root.name}'`);
    names.add(name);
  }

  /** Refuses a value this graph cannot read: its own values and its ancestors' (outer scope) are readable. */
  private own(v: Value, where: string): void {
    for (let g: Graph | undefined = this; g !== undefined; g = g.parent) if (v.owner === g) return;
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
      domains: [...this.shared.domains].sort(),
      nodes: this.nodeList,
      inputs: this.inputList,
      outputs: this.outputList,
      // A body's initializers are the root's (outer-scope values): listed once, by the root.
      initializers: this.parent === undefined ? this.shared.initializerList : [],
    };
  }
}

// The ops, one file per concept, are methods of Graph: the interface declares them, the loop installs them.
export interface Graph extends MathOps, TensorOps, AttentionOps, ControlFlowOps, ContribOps {}

for (const ops of [MathOps, TensorOps, AttentionOps, ControlFlowOps, ContribOps]) {
  for (const key of Object.getOwnPropertyNames(ops.prototype)) {
    if (key === 'constructor') continue;
    if (key in Graph.prototype) throw new GraphError('DUPLICATE_NAME', `op '${key}' of ${ops.name} is already a Graph method`);
    Object.defineProperty(Graph.prototype, key, Object.getOwnPropertyDescriptor(ops.prototype, key)!);
  }
}
