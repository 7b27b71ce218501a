// The export manifest's graph inputs come from the graphs' contracts (declaredTensors), not from reading the
// built graph back: they must be exactly the inputs the written ONNX files declare, and carry the contracts'
// names.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ERNIE_DECODER_INPUTS, GRANITE_DECODER_INPUTS, QWEN3VL_DECODER_INPUTS } from '@vlmkit/moe-decoder';
import { type Contract, contractProblems, loadModelProto, onnx, type Schema } from '@vlmkit/onnx-graph';
import { afterAll, describe, expect, it } from 'vitest';
import { ERNIE_VISION_ENCODER_INPUTS } from './ernie/vision-encoder.js';
import { exportModel } from './export.node.js';
import { GRANITE_VISION_ENCODER_INPUTS } from './granite/vision-encoder.js';
import { QWEN3VL_VISION_ENCODER_INPUTS } from './qwen3vl/vision-encoder.js';
import { FIXTURES } from './test-utils/fixtures.js';

const work = mkdtempSync(join(tmpdir(), 'vlmkit-export-contracts-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The inputs an ONNX file declares, as the manifest writes them. */
async function fileInputs(path: string): Promise<{ name: string; dtype: string; dims: (number | string)[] }[]> {
  const proto = await loadModelProto(path);
  const dtypes = onnx.TensorProto.DataType as unknown as Record<number, string>;
  const names: Record<string, string> = { FLOAT: 'float32', INT64: 'int64', INT32: 'int32', FLOAT16: 'float16', BOOL: 'bool' };
  return proto.graph!.input!.map((i) => ({
    name: i.name!,
    dtype: names[dtypes[i.type!.tensorType!.elemType!]!]!,
    dims: i.type!.tensorType!.shape!.dim!.map((d) => (d.dimParam ? d.dimParam : Number(d.dimValue))),
  }));
}

const CASES: [string, Contract<Schema>, Contract<Schema>][] = [
  ['ernie-tiny', ERNIE_VISION_ENCODER_INPUTS as Contract<Schema>, ERNIE_DECODER_INPUTS as Contract<Schema>],
  ['granite-tiny', GRANITE_VISION_ENCODER_INPUTS as Contract<Schema>, GRANITE_DECODER_INPUTS as Contract<Schema>],
  ...['qwen3-vl-tiny', 'qwen3-vl-moe-tiny'].map(
    (m) => [m, QWEN3VL_VISION_ENCODER_INPUTS, QWEN3VL_DECODER_INPUTS] as [string, Contract<Schema>, Contract<Schema>],
  ),
];

describe.each(CASES)('%s export', (model, vision, decoder) => {
  it("manifest inputs: the contracts' tensors, equal to the written graphs' inputs", async () => {
    const dir = join(work, model);
    const { manifest } = await exportModel(join(FIXTURES, model), dir);
    for (const [stem, c] of [
      ['vision_encoder', vision],
      ['decoder', decoder],
    ] as const) {
      const graph = manifest.graphs[stem];
      expect(graph.inputs.length, stem).toBeGreaterThan(0);
      expect(graph.inputs, stem).toEqual(await fileInputs(join(dir, graph.file)));
      // Every manifest input is one of the contract's names (counted ones by their template).
      const byName = Object.fromEntries(graph.inputs.map((t) => [t.name, { dtype: t.dtype, dims: [] }]));
      expect(
        contractProblems(c, byName).filter((p) => p.code === 'UNKNOWN_INPUT'),
        stem,
      ).toEqual([]);
    }
  });
});
