// Progress of a long save: each byte range of a file read for a tensor (a checkpoint weight copied, folded or
// quantized) is reported to the observer of the context it is read in. A context rather than a parameter:
// those reads happen inside lazy tensors that passes made long before the save that loads them. The context
// is the platform's (#platform): Node's AsyncLocalStorage, the browser's scope stack (read-scope.ts).
export { observeFileReads, reportFileRead } from '#platform';

/** One file-backed tensor read: by `tensorBytes`, or streamed into a data file by `saveModel`. */
export interface FileRead {
  /** The file's path, or a `source` tensor's `RangeSource.name` (a URL, a picked file's name). */
  readonly path: string;
  readonly byteOffset: number;
  readonly byteLength: number;
}
