// onnx-proto is a CommonJS protobufjs build; re-export its namespace for ESM callers.
import onnxProto from 'onnx-proto';

export const onnx = onnxProto.onnx;
export type { onnx as OnnxTypes } from 'onnx-proto';
