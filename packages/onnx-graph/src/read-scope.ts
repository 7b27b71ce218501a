// The browser's read observer: a page has no AsyncLocalStorage, so the listeners of the observeFileReads
// calls in progress form a stack and a read goes to the newest one. Exact while one observed call runs at a
// time (a page that builds its sessions one after another, as @vlmkit/models does). Its limit: while two
// overlap (started without awaiting each other), every read goes to the one started last, its own and the
// other's, until it ends; then to the other again. A read made outside every call reaches no one.
import type { FileRead } from './read-observer.js';

type Listener = (read: FileRead) => void;

/** A stack of the listeners in force; one per platform module (the browser's has one for the page). */
export class ReadScopes {
  readonly #active: Listener[] = [];

  /** Runs `fn` with `listener` as the newest observer, removed (wherever it is in the stack) when `fn` settles. */
  async observe<T>(listener: Listener, fn: () => Promise<T>): Promise<T> {
    this.#active.push(listener);
    try {
      return await fn();
    } finally {
      this.#active.splice(this.#active.lastIndexOf(listener), 1);
    }
  }

  report(read: FileRead): void {
    this.#active.at(-1)?.(read);
  }
}
