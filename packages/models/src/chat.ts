// A conversation in, a streamed answer out: the model directory's processor prepares the inputs
// (HF processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)),
// generate() samples, and the tokenizer's incremental detokenizer turns each new id into text
// (never half a UTF-8 character), as HF's TextIteratorStreamer does for model.generate.
import type { ChatMessage, ProcessChatOptions, Processor } from '@vlmkit/processors';
import type { HostTensor } from '@vlmkit/runtime';
import { ModelError } from './errors.js';
import type { GenerateResult } from './generate.js';
import type { ModelGenerateOptions } from './graph-loop.js';
import type { SamplingOptions } from './sampling.js';

export interface ChatOptions extends SamplingOptions {
  maxNewTokens: number;
  /** Ids that end the answer. Default: the model's (generation_config.json, else config.json). */
  eos?: number | readonly number[] | undefined;
  /** Stops after the current step; the stream then ends normally with finishReason 'aborted'. */
  signal?: AbortSignal | undefined;
  /** Leave special tokens out of the text (HF decode's skip_special_tokens). Default true. */
  skipSpecialTokens?: boolean | undefined;
  /** Chat template and video sampling options (`enableThinking`, `fps`, ...); the generation prompt is always added. */
  template?: ProcessChatOptions | undefined;
  /** A model loaded with loop: 'graph': tokens per session run (generate's `loopChunk`); each chunk's text streams once it has run. */
  loopChunk?: number | undefined;
}

export interface ChatSummary {
  /** The whole answer: every piece the stream yielded, concatenated. */
  text: string;
  /** The new token ids (eos included when the answer stopped on it). */
  tokens: number[];
  promptTokens: number;
  newTokens: number;
  /** 'stop': an eos token; 'length': maxNewTokens (or, in an engine, the model's context) reached; 'aborted': the signal fired. */
  finishReason: 'stop' | 'length' | 'aborted';
  /** From the call to the first new token: preprocessing, vision encoder and prefill. */
  timeToFirstTokenMs: number;
  /** Decode speed: the tokens after the first, over the time after the first (0 for fewer than 2 tokens). */
  tokensPerSecond: number;
  /** Images and text to tensors (decode, resize, template, tokenizer). */
  processMs: number;
  visionMs: number;
  prefillMs: number;
  totalMs: number;
  device: string;
}

/** The answer's text pieces as they are generated; `summary()` once it is done. */
export interface ChatStream extends AsyncIterable<string> {
  /** The summary, after the stream ends; if nobody iterates the stream, this runs it to the end. */
  summary(): Promise<ChatSummary>;
}

/** What chat needs of a model: generate on HF-named tensors (every PretrainedModel has it). */
export interface ChatModel {
  readonly device: string;
  generate(inputs: Record<string, HostTensor>, options: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }>;
  /** The ids that end an answer when the options give none; undefined: generate's default (config.json's). */
  eos?: () => Promise<readonly number[] | undefined>;
}

/**
 * Streams the model's answer to `messages` (one sequence; images given in the messages' parts as
 * files, bytes or decoded images, videos as decoded frames).
 *
 * ```ts
 * const stream = chat(model, processor, messages, { maxNewTokens: 64 });
 * for await (const piece of stream) process.stdout.write(piece);
 * const { newTokens, tokensPerSecond } = await stream.summary();
 * ```
 *
 * Breaking out of the loop stops generation after the current step.
 */
export function chat(
  model: ChatModel,
  processor: Processor | Promise<Processor>,
  messages: readonly ChatMessage[],
  options: ChatOptions,
): ChatStream {
  let result: ChatSummary | undefined;
  const pieces = run();
  let started = false;
  async function* run(): AsyncGenerator<string, void, undefined> {
    const t0 = performance.now();
    const p = await processor;
    const inputs = await p.processChat(messages, { ...options.template, addGenerationPrompt: true });
    const processMs = performance.now() - t0;
    const eos = options.eos ?? (await model.eos?.());
    const stop = new AbortController();
    const abort = () => stop.abort();
    if (options.signal?.aborted) stop.abort();
    options.signal?.addEventListener('abort', abort, { once: true });

    // generate() reports each new id through onToken; the ids wait in `queue` until this generator
    // detokenizes and yields them. Generation runs at most one token ahead of the consumer (onToken's
    // promise holds the next step back), so a slow reader, or one that stops, leaves no work running on.
    const queue: number[] = [];
    let wake: (() => void) | undefined;
    let drained: (() => void) | undefined;
    const release = () => {
      drained?.();
      drained = undefined;
    };
    let firstAt: number | undefined;
    let lastAt = t0;
    let generated: (GenerateResult & { visionMs: number }) | undefined;
    let failure: { error: unknown } | undefined;
    let finished = false;
    // Chat's own options stay here; eos is resolved above (an explicit undefined would drop the model's default).
    const { template: _t, skipSpecialTokens: _s, signal: _g, eos: _e, ...generateOptions } = options;
    const running = model
      .generate(inputs as unknown as Record<string, HostTensor>, {
        ...generateOptions,
        ...(eos !== undefined ? { eos } : {}),
        signal: stop.signal,
        onToken: (tokens) => {
          lastAt = performance.now();
          firstAt ??= lastAt;
          queue.push(tokens[0]!);
          wake?.();
          // Once stopped (abort, or the consumer left), nothing will drain the queue: never wait then.
          if (queue.length <= 1 || stop.signal.aborted) return;
          return new Promise<void>((resolve) => {
            drained = resolve;
          });
        },
      })
      .then(
        (r) => {
          generated = r;
        },
        (error: unknown) => {
          failure = { error };
        },
      )
      .finally(() => {
        finished = true;
        wake?.();
      });

    const detokenizer = p.tokenizer.detokenizer({ skipSpecialTokens: options.skipSpecialTokens ?? true });
    let text = '';
    let completed = false;
    try {
      for (;;) {
        while (queue.length > 0) {
          const id = queue.shift()!;
          if (queue.length <= 1) release();
          const piece = await detokenizer.push(id);
          if (piece !== '') {
            text += piece;
            yield piece;
          }
        }
        if (finished) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      if (failure) throw failure.error;
      const rest = await detokenizer.flush();
      if (rest !== '') {
        text += rest;
        yield rest;
      }
      completed = true;
    } finally {
      // The consumer may have stopped early: end generation and wait for it, so the sessions are idle.
      stop.abort();
      release();
      options.signal?.removeEventListener('abort', abort);
      await running;
      if (generated) {
        const tokens = generated.tokens[0] ?? [];
        const firstToLast = firstAt === undefined ? 0 : lastAt - firstAt;
        result = {
          text,
          tokens,
          promptTokens: inputs.input_ids.dims[1]!,
          newTokens: tokens.length,
          finishReason: finishReason(tokens, eos, generated.maxNewTokens ?? options.maxNewTokens, completed && !options.signal?.aborted),
          timeToFirstTokenMs: (firstAt ?? lastAt) - t0,
          tokensPerSecond: tokens.length > 1 && firstToLast > 0 ? ((tokens.length - 1) * 1000) / firstToLast : 0,
          processMs,
          visionMs: generated.visionMs,
          prefillMs: generated.timings.prefillMs,
          totalMs: performance.now() - t0,
          device: model.device,
        };
      }
    }
  }
  return {
    [Symbol.asyncIterator]() {
      started = true;
      return pieces;
    },
    async summary() {
      if (!started) {
        started = true;
        for await (const _ of pieces) {
          // drained for the summary
        }
      }
      if (result === undefined) {
        throw new ModelError('BAD_INPUT', 'the chat stream has no summary yet: call summary() after the loop over the stream ends');
      }
      return result;
    },
  };
}

/** Why the answer ended; `ranToEnd`: generation stopped by itself (not aborted, no early break). */
function finishReason(
  tokens: readonly number[],
  eos: number | readonly number[] | undefined,
  maxNewTokens: number,
  ranToEnd: boolean,
): ChatSummary['finishReason'] {
  const ends = eos === undefined ? [] : typeof eos === 'number' ? [eos] : eos;
  const last = tokens[tokens.length - 1];
  if (last !== undefined && ends.includes(last)) return 'stop';
  if (tokens.length >= maxNewTokens) return 'length';
  // Fewer tokens than asked for and no abort: generate stopped on the model's own eos.
  return ranToEnd ? 'stop' : 'aborted';
}
