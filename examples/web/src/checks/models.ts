import type { NamedTensors, PretrainedModel } from '@vlmkit/models';
import { fromSafetensors } from '@vlmkit/runtime';
import { type ByteSource, SafetensorsFile } from '@vlmkit/safetensors';
import { toWire, type WireTensor } from './wire.js';

/** The tiny fixture checkpoints (test-fixtures/<name>) whose cases the check runs. */
export const MODEL_FIXTURES = ['ernie-tiny', 'granite-tiny', 'qwen3-vl-tiny', 'qwen3-vl-moe-tiny'] as const;

/** What the harness logs after a placement load (ORT's node placement lines come before it in the console). */
export const PLACEMENT_END = 'vlmkit: placement logged';

/** The fields of a case.json (test-fixtures/<model>/cases/<case>) the check reads. */
export interface ModelCaseJson {
  /** The checkpoint folder under test-fixtures/ (a case may use another than its model's, e.g. ernie-tiny-bf16). */
  checkpoint: string;
  max_new_tokens: number;
  /** A PEFT adapter folder under test-fixtures/, merged at load. */
  adapter?: string;
}

export interface ModelCaseResult {
  logits: WireTensor;
  /** Greedy new tokens, [B][max_new_tokens] (eos ignored, as HF's fixtures were generated). */
  ids: number[][];
  /** The device the model ran on, as the model reports it. */
  device: string;
}

/**
 * Load options of every fixture model, in the page and in Node: HF's rules, as the fixtures were made, and
 * float32 (the webgpu profile computes in float16 on an adapter with shader-f16; these checks compare numbers).
 */
export const FIXTURE_LOAD = { reference: 'hf', dtype: 'float32' } as const;

/** Every tensor of a .safetensors file by name, as host tensors (a case's HF forward kwargs), from any ByteSource. */
export async function readTensors(source: ByteSource): Promise<NamedTensors> {
  const file = await SafetensorsFile.fromSource(source);
  try {
    const out: NamedTensors = {};
    for (const name of file.names()) out[name] = fromSafetensors(await file.read(name));
    return out;
  } finally {
    await file.close();
  }
}

/** One case on a loaded model: forward's logits, then greedy generation of the case's max_new_tokens. */
export async function modelCase(model: PretrainedModel, inputs: NamedTensors, maxNewTokens: number): Promise<ModelCaseResult> {
  const out = await model.forwardNamed(inputs);
  const logits = out.logits;
  if (!logits || logits.dtype !== 'float32') throw new Error(`forward gave no float32 logits (outputs: ${Object.keys(out).join(', ')})`);
  const gen = await model.generate(inputs, { maxNewTokens, eos: [] });
  return { logits: toWire(logits.data, logits.dims), ids: gen.tokens, device: model.device };
}
