// Reading a model folder's processor files through ModelFiles (@vlmkit/safetensors source.ts): a Node
// directory, a picked folder or an HTTP base URL alike. HF's rule for these files (cached_file,
// os.path.isfile): a name that is not a regular file counts as absent; a file over its limit is refused.
import type { ModelFiles } from '@vlmkit/safetensors';
import { ProcessorError, type ProcessorErrorCode } from './errors.js';

export type { ByteSource, ModelFiles } from '@vlmkit/safetensors';

/**
 * A ModelFiles that lists a subfolder (Node's processorDirFiles). HF lists one subfolder of a processor
 * folder, chat_templates/ (processor-files.ts); a source that cannot list skips that check.
 */
export interface FolderListing {
  /** The names in the subfolder `dir`, undefined when there is none. */
  listFolder(dir: string): Promise<readonly string[] | undefined>;
}

/** The names of `files` in its subfolder `dir`, where the source can say; undefined where it cannot. */
export async function listFolder(files: ModelFiles, dir: string): Promise<readonly string[] | undefined> {
  const f = files as ModelFiles & Partial<FolderListing>;
  if (typeof f.listFolder === 'function') return f.listFolder(dir);
  if (typeof f.list !== 'function') return undefined;
  const prefix = `${dir}/`;
  return (await f.list()).filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
}

/** The largest processor file read (tokenizer.json excepted): configs and templates are kilobytes. */
export const MAX_PROCESSOR_FILE_BYTES = 16 * 1024 * 1024;
/** The largest tokenizer.json read (the biggest hub vocabularies are tens of MB). */
export const MAX_TOKENIZER_JSON_BYTES = 512 * 1024 * 1024;

/** `root/name`, for messages about a file not opened (yet). */
export function fileName(files: ModelFiles, name: string): string {
  return `${files.root.replace(/\/+$/, '')}/${name}`;
}

/**
 * A processor file's text, or undefined when it is absent (ModelFiles.open gave nothing). A file over
 * `maxBytes` throws `code` before it is read; so does one that cannot be read.
 */
export async function readProcessorFile(
  files: ModelFiles,
  name: string,
  code: ProcessorErrorCode = 'TOKENIZER_ERROR',
  maxBytes = MAX_PROCESSOR_FILE_BYTES,
): Promise<string | undefined> {
  const fail = (where: string, e: unknown) =>
    e instanceof ProcessorError ? e : new ProcessorError(code, `${where} cannot be read: ${(e as Error).message}`, { cause: e });
  let source: Awaited<ReturnType<ModelFiles['open']>>;
  try {
    source = await files.open(name);
  } catch (e) {
    throw fail(fileName(files, name), e);
  }
  if (source === undefined) return undefined;
  try {
    if (source.size > maxBytes) {
      throw new ProcessorError(
        code,
        `${source.name} is ${source.size} bytes, over the ${maxBytes}-byte limit for this file; it cannot be a valid one.`,
      );
    }
    // ignoreBOM: a BOM stays in the text, as Node's readFile('utf8') kept it (JSON.parse then refuses it, as Python's json does).
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(await source.read(0, source.size));
  } catch (e) {
    throw fail(source.name, e);
  } finally {
    await source.close();
  }
}

/** A JSON object file, or `{}` when it is absent (readProcessorFile); a file that is not a JSON object throws `code`. */
export async function readJsonIfPresent(
  files: ModelFiles,
  name: string,
  code: ProcessorErrorCode = 'TOKENIZER_ERROR',
): Promise<Record<string, unknown>> {
  return (await readJsonObject(files, name, code)) ?? {};
}

/** A JSON object file, or undefined when it is absent (readProcessorFile); a file that is not a JSON object throws `code`. */
export async function readJsonObject(
  files: ModelFiles,
  name: string,
  code: ProcessorErrorCode = 'TOKENIZER_ERROR',
): Promise<Record<string, unknown> | undefined> {
  const text = await readProcessorFile(files, name, code);
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw new ProcessorError(code, `${fileName(files, name)} is not a JSON object: ${(e as Error).message}`, { cause: e });
  }
}
