import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import {
  defaultCacheDir,
  type LoadOptions,
  loadPretrained,
  type ModelGenerateOptions,
  outputFile,
  type ReadPaths,
  readNamedTensors,
  writeNamedTensors,
} from '@vlmkit/models';
import { type DeviceRequest, int64 } from '@vlmkit/runtime';

export type Out = (s: string) => void;

/** The tensor `vlmkit generate --out` writes: the new tokens, [B, N] int64. */
export const GENERATED_IDS = 'generated_ids';

export class UsageError extends Error {
  readonly code = 'USAGE';
}

export interface CommonOptions {
  model: string;
  device: DeviceRequest;
  reference: 'vllm' | 'hf';
  cacheDir?: string | undefined;
  /** A PEFT LoRA adapter directory merged at load (families whose spec has `supports.adapter`). */
  adapter?: string | undefined;
  /** The load options of the same names (model-load's `LoadOptions`): quantization, compute dtype, profile. */
  quantize?: LoadOptions['quantize'];
  dtype?: LoadOptions['dtype'];
  profile?: LoadOptions['profile'];
}

/** The load options every command that loads a model passes from its command line. */
export function modelLoadOptions(o: CommonOptions): LoadOptions {
  return {
    device: o.device,
    reference: o.reference,
    cacheDir: o.cacheDir,
    adapter: o.adapter,
    quantize: o.quantize,
    dtype: o.dtype,
    profile: o.profile,
  };
}

/**
 * A file the command reads (`--inputs`, `--image`, `--video`) must be a readable regular file: a FIFO would block
 * the read forever, a device (/dev/zero) would be read without end.
 */
export async function assertRegularFile(path: string, flag: string): Promise<void> {
  try {
    await access(path, constants.R_OK);
    if (!(await stat(path)).isFile()) throw new Error('not a regular file (a FIFO, a device or a directory)');
  } catch (e) {
    throw new UsageError(`cannot read ${flag} ${path}: ${(e as Error).message}`);
  }
}

/** What a command that loads a model reads besides its inputs: the checkpoint, the adapter, the graph cache. */
export function modelReads(o: CommonOptions): ReadPaths {
  return [o.model, o.adapter, o.cacheDir ?? defaultCacheDir()];
}

function ms(x: number): string {
  return `${x.toFixed(1)} ms`;
}

/** `vlmkit forward`: HF kwargs in, logits / vision embeddings / position ids out. */
export async function forwardCommand(o: CommonOptions & { inputs: string; out: string }, out: Out): Promise<void> {
  // Before the load: an output that would replace what the command reads is refused with nothing written.
  const target = await outputFile(o.out, [...modelReads(o), o.inputs]);
  const model = await loadPretrained(o.model, modelLoadOptions(o));
  try {
    await assertRegularFile(o.inputs, '--inputs');
    const inputs = await readNamedTensors(o.inputs);
    const t0 = performance.now();
    const result = await model.forwardNamed(inputs);
    const forwardMs = performance.now() - t0;
    await writeNamedTensors(target, result);
    out(`${model.modelType} on ${model.device}: forward ${ms(forwardMs)}; wrote ${Object.keys(result).sort().join(', ')} to ${o.out}\n`);
  } finally {
    await model.release();
  }
}

export interface GenerateCommandOptions extends CommonOptions {
  inputs: string;
  out?: string | undefined;
  generate: ModelGenerateOptions;
}

/** `vlmkit generate`: greedy by default; streams each step's tokens; writes `generated_ids` [B, N] int64. */
export async function generateCommand(o: GenerateCommandOptions, out: Out): Promise<number[][]> {
  const target = o.out === undefined ? undefined : await outputFile(o.out, [...modelReads(o), o.inputs]);
  const model = await loadPretrained(o.model, modelLoadOptions(o));
  try {
    await assertRegularFile(o.inputs, '--inputs');
    const inputs = await readNamedTensors(o.inputs);
    out(`device: ${model.device} (${model.deviceReason})\n`);
    out(`load ${ms(model.timings.loadMs)}, build ${ms(model.timings.buildMs)}, sessions ${ms(model.timings.sessionMs)}\n`);
    out('tokens:');
    const r = await model.generate(inputs, { ...o.generate, onToken: (t) => out(` [${t.join(', ')}]`) });
    out('\n');
    const steps = r.timings.stepMs;
    const perToken = steps.length > 0 ? steps.reduce((a, b) => a + b, 0) / steps.length : 0;
    out(`vision ${ms(r.visionMs)}, prefill ${ms(r.timings.prefillMs)}, decode ${ms(perToken)}/token over ${steps.length} steps\n`);
    if (target) {
      const n = Math.max(0, ...r.tokens.map((t) => t.length));
      const flat = r.tokens.flatMap((row) => [...row, ...new Array<number>(n - row.length).fill(0)]);
      await writeNamedTensors(target, { [GENERATED_IDS]: int64(flat, [r.tokens.length, n]) });
      out(`wrote ${GENERATED_IDS} [${r.tokens.length}, ${n}] to ${target.path}\n`);
    }
    return r.tokens;
  } finally {
    await model.release();
  }
}
