import type { LoadOptions } from '../model-load.js';
import { loadPretrained } from '../registry.js';

/** What `loadPretrained(dir, options)` throws; undefined (the model released again) when it loads. */
export async function loadFailure(dir: string, options: LoadOptions): Promise<unknown> {
  return loadPretrained(dir, options).then(
    (m) => m.release().then(() => undefined),
    (e: unknown) => e,
  );
}
