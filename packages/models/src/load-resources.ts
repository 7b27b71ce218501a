// What a model's load holds open until it has succeeded, so that a failed load (a graph ORT cannot run, a
// session that cannot be created, a bad option found late) leaves no file handle or native session behind.
import type { Checkpoint } from '@vlmkit/safetensors';

interface Releasable {
  release(): Promise<void>;
}

/**
 * The checkpoint is closed whatever happens (its lazy tensors are read only while the graphs are written); the
 * sessions made so far are released unless the load `keep`s them (it succeeded and the model owns them now).
 * Used as `const held = new LoadResources(); try { ... held.keep(); return model } finally { await held.dispose() }`.
 */
export class LoadResources {
  #checkpoint: Checkpoint | undefined;
  readonly #sessions: Releasable[] = [];
  #kept = false;

  /** Holds `c` until `closeCheckpoint` or `dispose`. */
  checkpoint(c: Checkpoint): Checkpoint {
    this.#checkpoint = c;
    return c;
  }

  /** Holds a session (a `cachedSession` result) until the load keeps it. */
  session<T extends { session: Releasable }>(s: T): T {
    this.#sessions.push(s.session);
    return s;
  }

  async closeCheckpoint(): Promise<void> {
    const c = this.#checkpoint;
    this.#checkpoint = undefined;
    await c?.close();
  }

  /** The load succeeded: the model owns its sessions. */
  keep(): void {
    this.#kept = true;
  }

  /** Closes what is still open; on a failed load (no `keep`) releases the sessions too. Errors here never mask the load's own. */
  async dispose(): Promise<void> {
    await this.closeCheckpoint().catch(() => undefined);
    if (this.#kept) return;
    for (const s of this.#sessions) await s.release().catch(() => undefined);
  }
}
