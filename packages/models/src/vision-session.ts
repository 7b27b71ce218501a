// The vision encoder's session, held for the model's lifetime or only while it encodes (`visionSession`).
import { type Feed, type HostTensor, type RunOptions, RuntimeError, type VlmSession } from '@vlmkit/runtime';
import { ModelError } from './errors.js';

/**
 * How long the vision encoder's session lives (the profile's `visionSession`, ./profiles.ts):
 * - 'resident' (default): created at load, kept until `release()`;
 * - 'per-call': created for each encoding (from the graph cache: the float32 weights are memory-mapped, so this
 *   takes well under a second) and released right after it, so its weights leave the process before the decoder
 *   runs. Lowers the peak RSS of a process that encodes once: the vision weights and the decoder's are then never
 *   resident together. A second encoding in the same process maps the vision weights again while the decoder's
 *   are still resident (ORT keeps a session's mapped pages), so a long-lived process that encodes repeatedly
 *   reaches about the same peak as 'resident' and pays the session creation on each request.
 */
export type VisionSessionMode = 'resident' | 'per-call';

export const VISION_SESSION_MODES: readonly VisionSessionMode[] = ['resident', 'per-call'];

/** What the models call on their vision encoder: a `VlmSession` or a `VisionSession`. */
export type VisionRunner = Pick<VlmSession, 'run' | 'release'>;

/**
 * The vision encoder's session under a `VisionSessionMode`. `first` is the session opened at load (so a graph
 * that cannot be opened fails the load, not the first request); 'per-call' releases it at once and opens a new
 * one with `reopen` for each `run`.
 */
export class VisionSession implements VisionRunner {
  #session: VlmSession | undefined;
  #released = false;

  private constructor(
    readonly name: string,
    readonly mode: VisionSessionMode,
    private readonly reopen: () => Promise<VlmSession>,
    first: VlmSession | undefined,
  ) {
    this.#session = first;
  }

  static async open(first: VlmSession, reopen: () => Promise<VlmSession>, mode: VisionSessionMode = 'resident'): Promise<VisionSession> {
    if (!VISION_SESSION_MODES.includes(mode)) {
      await first.release();
      throw new ModelError('BAD_LOAD_OPTIONS', `visionSession must be one of ${VISION_SESSION_MODES.join(', ')}, got ${String(mode)}`);
    }
    if (mode === 'resident') return new VisionSession(first.name, mode, reopen, first);
    await first.release();
    return new VisionSession(first.name, mode, reopen, undefined);
  }

  /** Whether a native session is held now ('per-call': only while `run` is in progress). */
  get held(): boolean {
    return this.#session !== undefined;
  }

  async run(feeds: Record<string, Feed>, opts: RunOptions = {}): Promise<Record<string, HostTensor>> {
    if (this.#released) {
      throw new RuntimeError('SESSION_RELEASED', `Session '${this.name}' was released; create a new one.`, { session: this.name });
    }
    const session = this.#session ?? (await this.reopen());
    this.#session = session;
    try {
      return await session.run(feeds, opts);
    } finally {
      if (this.mode === 'per-call') {
        this.#session = undefined;
        await session.release();
      }
    }
  }

  async release(): Promise<void> {
    this.#released = true;
    const session = this.#session;
    this.#session = undefined;
    await session?.release();
  }
}
