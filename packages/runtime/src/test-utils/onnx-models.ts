/**
 * Small ONNX models for tests, written directly with onnx-proto (the
 * runtime package must not depend on @vlmkit/onnx-graph to be tested).
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
const DT = onnx.TensorProto.DataType;

export type ElemType = 'float32' | 'float16' | 'int64' | 'int32' | 'bool' | 'uint8' | 'bfloat16';

const ELEM: Record<ElemType, number> = {
  float32: DT.FLOAT,
  float16: DT.FLOAT16,
  int64: DT.INT64,
  int32: DT.INT32,
  bool: DT.BOOL,
  uint8: DT.UINT8,
  bfloat16: DT.BFLOAT16,
};

type Dim = number | string;

export function valueInfo(name: string, type: ElemType, dims: readonly Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: ELEM[type],
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
      },
    },
  };
}

export function node(
  opType: string,
  name: string,
  input: string[],
  output: string[],
  attribute: onnxProto.onnx.IAttributeProto[] = [],
): onnxProto.onnx.INodeProto {
  return { opType, name, input, output, attribute };
}

export function intAttr(name: string, i: number): onnxProto.onnx.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INT, i };
}

export function int64Init(name: string, values: number[]): onnxProto.onnx.ITensorProto {
  return { name, dataType: DT.INT64, dims: [values.length], int64Data: values };
}

export function float32Init(name: string, dims: number[], values: number[]): onnxProto.onnx.ITensorProto {
  return { name, dataType: DT.FLOAT, dims, floatData: values };
}

/** A float32 initializer whose bytes live in an external file at [offset, offset + 4n). */
export function externalFloat32Init(name: string, dims: number[], location: string, offset: number): onnxProto.onnx.ITensorProto {
  const length = dims.reduce((a, b) => a * b, 1) * 4;
  return {
    name,
    dataType: DT.FLOAT,
    dims,
    dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
    externalData: [
      { key: 'location', value: location },
      { key: 'offset', value: String(offset) },
      { key: 'length', value: String(length) },
    ],
  };
}

export interface GraphSpec {
  name?: string;
  nodes: onnxProto.onnx.INodeProto[];
  inputs: onnxProto.onnx.IValueInfoProto[];
  outputs: onnxProto.onnx.IValueInfoProto[];
  initializers?: onnxProto.onnx.ITensorProto[];
  opset?: number;
}

export function modelBytes(spec: GraphSpec): Uint8Array {
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'vlmkit-runtime-tests',
    opsetImport: [{ domain: '', version: spec.opset ?? 17 }],
    graph: {
      name: spec.name ?? 'test',
      node: spec.nodes,
      input: spec.inputs,
      output: spec.outputs,
      initializer: spec.initializers ?? [],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

/** y = x * 2 + 1, x float32 [batch, 4]. */
export function affineModel(): Uint8Array {
  return modelBytes({
    name: 'affine',
    nodes: [node('Mul', 'affine/mul', ['x', 'two'], ['x2']), node('Add', 'affine/add', ['x2', 'one'], ['y'])],
    inputs: [valueInfo('x', 'float32', ['batch', 4])],
    outputs: [valueInfo('y', 'float32', ['batch', 4])],
    initializers: [float32Init('two', [], [2]), float32Init('one', [], [1])],
  });
}

/** y = Reshape(x, [5, 7]): fails at run time for any x that is not 35 elements. */
export function impossibleReshapeModel(): Uint8Array {
  return modelBytes({
    name: 'reshape',
    nodes: [node('Reshape', 'blocks.0.attn/reshape', ['x', 'shape'], ['y'])],
    inputs: [valueInfo('x', 'float32', ['n', 4])],
    outputs: [valueInfo('y', 'float32', [5, 7])],
    initializers: [int64Init('shape', [5, 7])],
  });
}

/** y = Identity(x) for one element type with a dynamic shape of the given rank. */
export function identityModel(type: ElemType, rank = 2): Uint8Array {
  const dims = Array.from({ length: rank }, (_, i) => `d${i}`);
  return modelBytes({
    name: `identity_${type}`,
    nodes: [node('Identity', 'identity', ['x'], ['y'])],
    inputs: [valueInfo('x', type, dims)],
    outputs: [valueInfo('y', type, dims)],
  });
}

/** Two inputs: ids int64 [batch, seq] and mask bool [batch, seq]; out = Cast(ids) * Cast(mask) as float32. */
export function twoInputModel(): Uint8Array {
  return modelBytes({
    name: 'two_inputs',
    nodes: [
      node('Cast', 'cast_ids', ['input_ids'], ['ids_f'], [intAttr('to', DT.FLOAT)]),
      node('Cast', 'cast_mask', ['attention_mask'], ['mask_f'], [intAttr('to', DT.FLOAT)]),
      node('Mul', 'mul', ['ids_f', 'mask_f'], ['out']),
    ],
    inputs: [valueInfo('input_ids', 'int64', ['batch', 'seq']), valueInfo('attention_mask', 'bool', ['batch', 'seq'])],
    outputs: [valueInfo('out', 'float32', ['batch', 'seq'])],
  });
}

/** y = MatMul(x [n, 3], w [3, 2]) with w stored externally in `location` at `offset`. */
export function externalWeightModel(location: string, offset: number): Uint8Array {
  return modelBytes({
    name: 'external',
    nodes: [node('MatMul', 'proj/matmul', ['x', 'w'], ['y'])],
    inputs: [valueInfo('x', 'float32', ['n', 3])],
    outputs: [valueInfo('y', 'float32', ['n', 2])],
    initializers: [externalFloat32Init('w', [3, 2], location, offset)],
  });
}

/**
 * A toy decoder step for the KV cache: for each layer i,
 * present.{i}.key = Concat(past_key_values.{i}.key, new_key * (i + 1)) on axis 2,
 * the same for value with new_value. new_key / new_value: [B, H, S, hd].
 */
export function kvConcatModel(numLayers: number, heads: number, headDim: number): Uint8Array {
  const nodes: onnxProto.onnx.INodeProto[] = [];
  const inputs = [
    valueInfo('new_key', 'float32', ['batch', heads, 'seq', headDim]),
    valueInfo('new_value', 'float32', ['batch', heads, 'seq', headDim]),
  ];
  const outputs: onnxProto.onnx.IValueInfoProto[] = [];
  const initializers: onnxProto.onnx.ITensorProto[] = [];
  for (let i = 0; i < numLayers; i++) {
    initializers.push(float32Init(`layers.${i}.scale`, [], [i + 1]));
    for (const kind of ['key', 'value'] as const) {
      inputs.push(valueInfo(`past_key_values.${i}.${kind}`, 'float32', ['batch', heads, 'past', headDim]));
      outputs.push(valueInfo(`present.${i}.${kind}`, 'float32', ['batch', heads, 'total', headDim]));
      nodes.push(node('Mul', `layers.${i}.${kind}/scale`, [`new_${kind}`, `layers.${i}.scale`], [`layers.${i}.${kind}.new`]));
      nodes.push(
        node(
          'Concat',
          `layers.${i}.${kind}/concat`,
          [`past_key_values.${i}.${kind}`, `layers.${i}.${kind}.new`],
          [`present.${i}.${kind}`],
          [intAttr('axis', 2)],
        ),
      );
    }
  }
  return modelBytes({ name: 'kv_concat', nodes, inputs, outputs, initializers });
}
