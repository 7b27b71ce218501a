// Progress of a long save: each byte range of a file read for a tensor (a checkpoint weight copied, folded or
// quantized) is reported to the observer of the async context it is read in. A context rather than a
// parameter: those reads happen inside lazy tensors that passes made long before the save that loads them.
import { AsyncLocalStorage } from 'node:async_hooks';

/** One file-backed tensor read: by `tensorBytes`, or streamed into a data file by `saveModel`. */
export interface FileRead {
  readonly path: string;
  readonly byteOffset: number;
  readonly byteLength: number;
}

const observer = new AsyncLocalStorage<(read: FileRead) => void>();

/** Runs `fn`, reporting each file-backed tensor read made within it (work it awaits included) to `listener`. */
export function observeFileReads<T>(listener: (read: FileRead) => void, fn: () => Promise<T>): Promise<T> {
  return observer.run(listener, fn);
}

/** Reports a read to the observer of the current async context, if there is one. */
export function reportFileRead(read: FileRead): void {
  observer.getStore()?.(read);
}
