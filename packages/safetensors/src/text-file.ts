/** Reading a small side file (config, index, processor config) of a model through `ModelFiles`, bounded. */
import { fail } from './errors.js';
import type { ModelFiles } from './source.js';

/** The most a JSON side file of a checkpoint (config, index, adapter config) may hold: real ones are KB to a few MB. */
export const MAX_JSON_FILE_BYTES = 64 * 2 ** 20;

/**
 * The UTF-8 text of `name` in `files` (a byte-order mark is kept, as Node's Buffer decoding keeps it); undefined
 * when the file is absent. FILE_TOO_LARGE when it holds more than `maxBytes`: only its size is looked at then.
 */
export async function readTextFile(files: ModelFiles, name: string, maxBytes: number = MAX_JSON_FILE_BYTES): Promise<string | undefined> {
  const source = await files.open(name);
  if (source === undefined) return undefined;
  try {
    if (source.size > maxBytes) fail('FILE_TOO_LARGE', `expected at most ${maxBytes} bytes, found ${source.size}.`, { file: source.name });
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(await source.read(0, source.size));
  } finally {
    await source.close().catch(() => undefined);
  }
}
