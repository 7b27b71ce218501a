import { exportModel } from '@vlmkit/models';
import type { ComputeDType, QuantizeMode } from '@vlmkit/onnx-graph';
import type { Out } from './commands.js';

export interface ExportCommandOptions {
  model: string;
  out: string;
  adapter?: string | undefined;
  reference: 'vllm' | 'hf';
  quantize?: QuantizeMode | undefined;
  computeDtype?: ComputeDType | undefined;
}

/** `vlmkit export`: the component ONNX files and manifest.json, runnable by onnxruntime in any language. */
export async function exportCommand(o: ExportCommandOptions, out: Out): Promise<void> {
  const t0 = performance.now();
  const r = await exportModel(o.model, o.out, {
    adapter: o.adapter,
    reference: o.reference,
    quantize: o.quantize,
    computeDtype: o.computeDtype,
  });
  const g = r.manifest.graphs;
  const io = (x: typeof g.decoder) => `${x.inputs.length} inputs, ${x.outputs.length} outputs`;
  out(
    `${r.manifest.model_type}: wrote ${r.files.join(', ')} to ${o.out} in ${((performance.now() - t0) / 1000).toFixed(1)} s ` +
      `(vision_encoder: ${io(g.vision_encoder)}; decoder: ${io(g.decoder)}, KV cache of ${r.manifest.decoder.kv_cache.num_layers} layers; ` +
      `compute ${r.manifest.compute_dtype})\n`,
  );
}
