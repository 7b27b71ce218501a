/**
 * Bytes from a `Blob` or `File` (a file the user picked, or a folder picked with `<input webkitdirectory>`).
 * A Blob's bytes never change; a File can change on disk after it was picked, which the browser reports as
 * a failed read (NotReadableError): that is refused as SOURCE_CHANGED.
 */
import { fail } from './errors.js';
import { checkedName } from './names.js';
import type { ByteSource, ModelFiles } from './source.js';

/** A ByteSource over `blob`; `name` (for messages) defaults to the File's name. Stamp: size and lastModified. */
export function blobSource(blob: Blob, name?: string): ByteSource {
  const file = blob as Partial<File>;
  const label = name ?? (typeof file.name === 'string' && file.name !== '' ? file.name : 'blob');
  const size = blob.size;
  return {
    name: label,
    size,
    stamp: typeof file.lastModified === 'number' ? `blob:${size}:${file.lastModified}` : `blob:${size}`,
    async read(offset: number, length: number): Promise<Uint8Array> {
      if (offset + length > size) {
        fail('SHORT_READ', `expected ${length} bytes at offset ${offset}, found the blob holds only ${size}.`, { file: label });
      }
      let bytes: Uint8Array;
      try {
        bytes = new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
      } catch (cause) {
        if (cause instanceof RangeError) throw cause; // allocation: the caller names the tensor
        const what = (cause as Error).name === 'NotReadableError' ? 'SOURCE_CHANGED' : 'IO_ERROR';
        return fail(
          what,
          `read of ${length} bytes at offset ${offset} failed (${(cause as Error).message}); a picked file that changed on disk must be picked again.`,
          { file: label, cause },
        );
      }
      if (bytes.length !== length) {
        fail('SHORT_READ', `expected ${length} bytes at offset ${offset}, found ${bytes.length}.`, { file: label });
      }
      return bytes;
    },
    async close(): Promise<void> {
      // Nothing is held open: reads after close still work (a graph's tensors may be read after the checkpoint closed).
    },
  };
}

/** A File as `<input webkitdirectory>` gives it: webkitRelativePath is 'picked-folder/sub/name'. */
type PickedFile = Blob & { readonly name: string; readonly webkitRelativePath?: string };

/**
 * A model directory from files in memory: a picked folder (`input.files` of `<input type="file" webkitdirectory>`,
 * each named by its `webkitRelativePath` with the picked folder itself dropped, so 'ernie/config.json' is
 * 'config.json'), files picked one by one (by name), or a map of name -> Blob. `root` (for messages) defaults
 * to the picked folder's name. Two files of one name are refused (DUPLICATE_FILE).
 */
export function blobFiles(files: Iterable<PickedFile> | Record<string, Blob>, root?: string): ModelFiles {
  const byName = new Map<string, Blob>();
  let top: string | undefined;
  const add = (name: string, blob: Blob) => {
    const key = checkedName(root ?? top ?? 'picked files', name);
    if (byName.has(key)) fail('DUPLICATE_FILE', `expected each file once, found '${key}' twice.`, { file: root ?? top ?? 'picked files' });
    byName.set(key, blob);
  };
  if (Symbol.iterator in files) {
    for (const file of files as Iterable<PickedFile>) {
      const relative = file.webkitRelativePath ?? '';
      if (relative === '') {
        add(file.name, file);
        continue;
      }
      const slash = relative.indexOf('/');
      top ??= slash < 0 ? undefined : relative.slice(0, slash);
      add(slash < 0 ? relative : relative.slice(slash + 1), file);
    }
  } else {
    for (const [name, blob] of Object.entries(files)) add(name, blob);
  }
  const label = root ?? top ?? 'picked files';
  return {
    root: label,
    async open(name: string): Promise<ByteSource | undefined> {
      const key = checkedName(label, name);
      const blob = byName.get(key);
      return blob === undefined ? undefined : blobSource(blob, `${label}/${key}`);
    },
    async list(): Promise<string[]> {
      return [...byName.keys()].filter((n) => !n.includes('/')).sort();
    },
  };
}
