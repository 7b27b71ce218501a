// What the server needs of a model: @vlmkit/models' batching engine (createEngine) has this shape. Until it is
// exported, `serialEngine` gives the same contract on the one-request-at-a-time `chat()`.
import type { ChatOptions, ChatStream, ChatSummary, PretrainedModel } from '@vlmkit/models';
import type { ChatMessage } from '@vlmkit/processors';

export interface EngineStats {
  running: number;
  queued: number;
  maxBatch: number;
  kvBytes: number;
  kvLimitBytes: number;
  tokensGenerated: number;
}

export interface ChatEngine {
  /** chat()'s contract: the answer's text pieces, then `summary()`; `options.signal` stops the request. */
  chat(messages: readonly ChatMessage[], options: ChatOptions): ChatStream;
  stats(): EngineStats;
  /** Stops taking requests; finishes (or with `abort`, cancels) the ones it holds. */
  close(options?: { abort?: boolean }): Promise<void>;
}

/** The engine's error for a request made after close(): ModelError's shape, code ENGINE_CLOSED. */
class EngineClosed extends Error {
  readonly code = 'ENGINE_CLOSED';
  override readonly name = 'ModelError';
}

/** One request at a time on `model.chat()`, in arrival order: a ChatEngine with a batch of one. */
export function serialEngine(model: PretrainedModel): ChatEngine {
  let turn: Promise<void> = Promise.resolve();
  let running = 0;
  let queued = 0;
  let tokensGenerated = 0;
  let closed = false;
  const live = new Set<AbortController>();
  return {
    chat(messages, options) {
      if (closed) throw new EngineClosed('the engine is closed: it takes no new requests');
      const stop = new AbortController();
      const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
      live.add(stop);
      queued++;
      const previous = turn;
      let done!: () => void;
      turn = new Promise((resolve) => {
        done = resolve;
      });
      let summary: ChatSummary | undefined;
      async function* pieces(): AsyncGenerator<string, void, undefined> {
        entered = true;
        let waiting = true;
        try {
          await previous;
          queued--;
          waiting = false;
          running++;
          const stream = model.chat(messages, { ...options, signal });
          for await (const piece of stream) yield piece;
          summary = await stream.summary();
          tokensGenerated += summary.newTokens;
        } finally {
          if (waiting) queued--;
          else running--;
          live.delete(stop);
          done();
        }
      }
      let entered = false;
      const body = pieces();
      // A stream given up before its body ran (return() on a fresh generator skips the body) still leaves its turn.
      const it: AsyncGenerator<string, void, undefined> = Object.assign(Object.create(body), {
        next: () => body.next(),
        return: async () => {
          if (!entered) {
            entered = true;
            queued--;
            live.delete(stop);
            void previous.then(done);
          }
          return body.return(undefined);
        },
      });
      let started = false;
      return {
        [Symbol.asyncIterator]() {
          started = true;
          return it;
        },
        async summary() {
          if (!started) {
            started = true;
            for await (const _ of it) {
              // drained for the summary
            }
          }
          if (summary === undefined) throw new Error('the chat stream has no summary yet: call summary() after the loop ends');
          return summary;
        },
      };
    },
    stats: () => ({ running, queued, maxBatch: 1, kvBytes: 0, kvLimitBytes: 0, tokensGenerated }),
    async close(o = {}) {
      closed = true;
      if (o.abort) for (const c of live) c.abort();
      await turn;
    },
  };
}
