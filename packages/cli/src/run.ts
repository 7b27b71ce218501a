// `vlmkit run` and `vlmkit preprocess`: one user message holding the images (or the video), then
// the prompt, templated with the generation prompt, as HF's processor.apply_chat_template does it.
import { resolve } from 'node:path';
import {
  type ChatSummary,
  familyAt,
  type GenerateOptions,
  loadPretrained,
  outputFile,
  readNamedTensors,
  writeNamedTensors,
} from '@vlmkit/models';
import { type ChatMessage, type ContentPart, Processor, type VideoFrames } from '@vlmkit/processors';
import type { HostTensor } from '@vlmkit/runtime';
import { SafetensorsFile } from '@vlmkit/safetensors';
import { assertRegularFile, type CommonOptions, modelLoadOptions, type Out, UsageError } from './commands.js';
import { Interrupted, untilAborted } from './interrupt.js';
import { loadProgressBar } from './progress-bar.js';

export interface PromptOptions {
  images: readonly string[];
  /**
   * A video file (decoded by @vlmkit/processors' decodeVideo, which needs the optional node-av), or a
   * .safetensors of decoded frames: `frames` uint8 [N, H, W, 3], metadata `fps`.
   */
  video?: string | undefined;
  prompt: string;
}

export interface RunCommandOptions extends CommonOptions, PromptOptions {
  generate: Omit<GenerateOptions, 'onToken'>;
  /** JSON lines instead of text: `{"type":"progress"|"text"|"summary", ...}`. */
  json?: boolean | undefined;
  /** Draw progress bars (stdout is a terminal). */
  tty?: boolean | undefined;
  /** Where progress bars go (stderr), so stdout holds only the answer and its summary. */
  err?: Out | undefined;
  /** `err` is a terminal: the bar is redrawn in place (default); else one line per load step. */
  errTty?: boolean | undefined;
  /**
   * Ctrl-C. Before the answer's first piece (reading media, loading, preprocessing, prefill) it ends the
   * command at once with Interrupted; once the answer streams, generation stops after the current token and
   * the summary is printed.
   */
  signal?: AbortSignal | undefined;
  /** stdout has gone (its reader closed the pipe): generation stops, nothing more is printed. */
  outputClosed?: AbortSignal | undefined;
}

/**
 * A `.safetensors` of decoded RGB frames (`frames` uint8 [N, H, W, 3]; the frame rate in the file's
 * metadata as `fps`, as test-fixtures/processors/video/frames.safetensors), as the processor's
 * `{ frames, fps }`.
 */
export async function readVideoFrames(path: string): Promise<VideoFrames> {
  const t = (await readNamedTensors(path)).frames;
  if (t === undefined || t.dtype !== 'uint8' || t.dims.length !== 4 || t.dims[3] !== 3) {
    throw new UsageError(`${path}: expected a tensor 'frames' uint8 [N, H, W, 3]`);
  }
  const [n, height, width] = t.dims as [number, number, number, number];
  const data = t.data as Uint8Array;
  const size = height * width * 3;
  const frames = Array.from({ length: n }, (_, i) => ({ width, height, data: data.subarray(i * size, (i + 1) * size) }));
  const fps = Number((await safetensorsMetadata(path)).fps);
  return Number.isFinite(fps) && fps > 0 ? { frames, fps } : { frames };
}

/** The `__metadata__` of a .safetensors file's header. */
async function safetensorsMetadata(path: string): Promise<Record<string, string>> {
  const file = await SafetensorsFile.open(path);
  await file.close();
  return file.metadata;
}

async function assertMedia(o: PromptOptions): Promise<void> {
  for (const path of o.images) await assertRegularFile(path, '--image');
  if (o.video !== undefined) await assertRegularFile(o.video, '--video');
}

/** One user message: the images, then the video, then the prompt's text. */
export async function userMessage(o: PromptOptions): Promise<ChatMessage[]> {
  const content: ContentPart[] = o.images.map((path) => ({ type: 'image', path: resolve(path) }));
  if (o.video?.endsWith('.safetensors')) content.push({ type: 'video', video: await readVideoFrames(o.video) });
  // A video file: the processor decodes it (as HF's PyAV backend) and samples frames from the container's metadata.
  else if (o.video !== undefined) content.push({ type: 'video', path: resolve(o.video) });
  content.push({ type: 'text', text: o.prompt });
  return [{ role: 'user', content }];
}

/** `vlmkit preprocess`: what HF's processor returns for the message, under HF's names, to a .safetensors file. */
export async function preprocessCommand(
  o: { model: string; out: string; signal?: AbortSignal | undefined; promptFile?: string | undefined } & PromptOptions,
  out: Out,
): Promise<void> {
  // Before anything is read: an output that would replace the model's files, the media or the prompt file is refused.
  const target = await outputFile(o.out, [o.model, ...o.images, o.video, o.promptFile]);
  await assertMedia(o);
  const processor = await Processor.fromPretrained(o.model);
  const inputs = await processor.processChat(await userMessage(o), { addGenerationPrompt: true });
  const tensors = Object.fromEntries(Object.entries(inputs)) as Record<string, HostTensor>;
  // Interrupted (Ctrl-C): the command has already ended; nothing is written after it.
  if (o.signal?.aborted) return;
  await writeNamedTensors(target, tensors);
  const shapes = Object.entries(tensors).map(([k, v]) => `${k} [${v.dims.join(', ')}]`);
  out(`${processor.kind}: wrote ${shapes.join(', ')} to ${o.out}\n`);
}

function summaryLine(s: ChatSummary): string {
  return (
    `-- ${s.promptTokens} prompt tokens, ${s.newTokens} new tokens (${s.finishReason}), ` +
    `time to first token ${s.timeToFirstTokenMs.toFixed(1)} ms, ${s.tokensPerSecond.toFixed(1)} tokens/s, device ${s.device}\n`
  );
}

/**
 * `vlmkit run`: streams the answer as it is generated, then one summary line. With `json`, JSON
 * lines: `progress` (load steps), `text` (each piece), `summary` (ChatSummary + deviceReason).
 */
export async function runCommand(o: RunCommandOptions, out: Out): Promise<ChatSummary> {
  const json = (x: Record<string, unknown>) => out(`${JSON.stringify(x)}\n`);
  const bar = !o.json && o.tty && o.err ? loadProgressBar(o.err, { redraw: o.errTty ?? true }) : undefined;
  const interrupted = untilAborted(o.signal);
  // Fail before the long model load: the media readable, the processor files there. The model's chat takes
  // this processor, so it is read once.
  const { messages, processor } = await Promise.race([
    (async () => {
      await assertMedia(o);
      const family = await familyAt(o.model);
      if (o.video !== undefined && !family.supports.video) throw new UsageError(`--video: ${family.name} takes images only, not videos`);
      const m = await userMessage(o);
      return { messages: m, processor: await Processor.fromPretrained(o.model, family.processor) };
    })(),
    interrupted,
  ]);
  let model: Awaited<ReturnType<typeof loadPretrained>>;
  const loading = loadPretrained(o.model, {
    ...modelLoadOptions(o),
    // JSON lines: a step's start and end only; the details within a step are a terminal's.
    onProgress: o.json ? (p) => p.detail === undefined && json({ type: 'progress', ...p }) : bar?.onProgress,
  });
  try {
    model = await Promise.race([loading, interrupted]);
  } catch (e) {
    // Interrupted while loading: the load finishes in the background and its model is released then.
    if (e instanceof Interrupted) void loading.then((m) => m.release()).catch(() => undefined);
    throw e;
  } finally {
    bar?.stop();
  }
  const signals = [o.signal, o.outputClosed].filter((s): s is AbortSignal => s !== undefined);
  const stream = model.chat(messages, { ...o.generate, processor, signal: signals.length > 0 ? AbortSignal.any(signals) : undefined });
  const pieces = stream[Symbol.asyncIterator]();
  let first: IteratorResult<string> | undefined;
  try {
    const next = pieces.next();
    first = await Promise.race([next, interrupted]);
  } catch (e) {
    // Interrupted before the first piece (preprocessing, vision, prefill): the stream is ended and the model
    // released once the step in progress returns.
    if (e instanceof Interrupted) void settle(pieces, model);
    else await model.release();
    throw e;
  }
  try {
    for (let r = first; !r.done; r = await pieces.next()) {
      if (o.outputClosed?.aborted) continue;
      if (o.json) json({ type: 'text', text: r.value });
      else out(r.value);
    }
    const summary = await stream.summary();
    if (o.outputClosed?.aborted) return summary;
    if (o.json) json({ type: 'summary', ...summary, deviceReason: model.deviceReason });
    else out(`\n${summaryLine(summary)}`);
    return summary;
  } finally {
    await model.release();
  }
}

/** Ends an abandoned answer stream (its generator's clean-up waits for the running step), then releases the model. */
async function settle(pieces: AsyncIterator<string>, model: { release(): Promise<void> }): Promise<void> {
  try {
    await pieces.return?.();
  } catch {
    // the command has already failed; nothing more to report
  }
  await model.release().catch(() => undefined);
}
