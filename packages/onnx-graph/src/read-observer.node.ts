// Node's read observer: the listener travels with the async context (AsyncLocalStorage), so concurrent
// observed work (two sessions built at once) reports each read to its own listener.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FileRead } from './read-observer.js';

const observer = new AsyncLocalStorage<(read: FileRead) => void>();

/** Runs `fn`, reporting each file-backed tensor read made within it (work it awaits included) to `listener`. */
export function observeFileReads<T>(listener: (read: FileRead) => void, fn: () => Promise<T>): Promise<T> {
  return observer.run(listener, fn);
}

/** Reports a read to the observer of the current async context, if there is one. */
export function reportFileRead(read: FileRead): void {
  observer.getStore()?.(read);
}
