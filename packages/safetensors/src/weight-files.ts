/**
 * Which files of a model directory are its weights: transformers' rule for `from_pretrained`
 * (modeling_utils `_get_resolved_checkpoint_files`), written once over `ModelFiles` so that a local folder,
 * a picked folder and a URL are read by the same rule. The file or index config.json's
 * `transformers_weights` names, if it names one; else `model.safetensors`; else the shards
 * `model.safetensors.index.json` names. No other .safetensors file is read: a folder holding only others (a
 * reference dump, an adapter, a variant) is refused by name (NO_MODEL_SAFETENSORS) rather than guessed at.
 */
import { fail, SafetensorsError, show } from './errors.js';
import { type JsonDefect, MAX_JSON_DEPTH, scanJson, showPath } from './json-guard.js';
import { joinName, normalizeName } from './names.js';
import type { ByteSource, ModelFiles } from './source.js';
import { readTextFile } from './text-file.js';

/** transformers' SAFE_WEIGHTS_NAME and SAFE_WEIGHTS_INDEX_NAME: the only weight files of a directory it reads. */
export const WEIGHTS = 'model.safetensors';
export const WEIGHTS_INDEX = 'model.safetensors.index.json';
/** An index is read whole; one for a 1T-parameter model is a few MB. */
const MAX_INDEX_SIZE = 100_000_000;

/** The weight files of a checkpoint: what `Checkpoint.open` reads. */
export interface CheckpointFiles {
  /** The index naming the shards; undefined for one unsharded file. */
  readonly index: string | undefined;
  /** The .safetensors files, absolute, sorted by name; each once. */
  readonly files: readonly string[];
  /**
   * The directory's other `*.safetensors` and `*.safetensors.index.json` files (absolute, sorted), which a
   * load does not read: a reference dump, an adapter, a variant. Empty for a file opened directly.
   */
  readonly unread: readonly string[];
}

/** The weight files of a model directory, opened (the caller closes `sources`). */
export interface WeightFiles {
  /** The index's source name (a path, a URL), undefined for one unsharded file. */
  readonly index: string | undefined;
  /** The index's weight_map, shard names normalized ({} without an index). */
  readonly weightMap: Record<string, string>;
  /** The weight files by name in the directory (normalized, sorted, each once) ... */
  readonly names: readonly string[];
  /** ... and opened, in the same order. */
  readonly sources: readonly ByteSource[];
}

/**
 * The weight files of `files`, each opened. `index` reads that index as given (a path to an index .json
 * passed directly), skipping the rule.
 */
export async function locateWeights(files: ModelFiles, index?: string): Promise<WeightFiles> {
  if (index !== undefined) return readIndex(files, index);
  const named = await namedWeights(files);
  if (named?.endsWith('.json')) return readIndex(files, named);
  if (named !== undefined) {
    const source = await openWeight(files, named);
    if (source === undefined) fail('FILE_NOT_FOUND', 'expected a file here, found nothing.', { file: joinName(files.root, named) });
    return { index: undefined, weightMap: {}, names: [named], sources: [source] };
  }
  // os.path.isfile, as transformers checks: a directory, a FIFO or a dangling link of that name is not the weights.
  let notAFile: SafetensorsError | undefined;
  const openIfFile = async (name: string): Promise<ByteSource | undefined> => {
    try {
      return await openWeight(files, name);
    } catch (err) {
      if (!(err instanceof SafetensorsError) || err.code !== 'NOT_A_FILE') throw err;
      if (name === WEIGHTS) notAFile = err;
      return undefined;
    }
  };
  const weights = await openIfFile(WEIGHTS);
  if (weights !== undefined) return { index: undefined, weightMap: {}, names: [WEIGHTS], sources: [weights] };
  const indexSource = await openIfFile(WEIGHTS_INDEX);
  if (indexSource !== undefined) return readIndex(files, WEIGHTS_INDEX, indexSource);
  // Neither is a file: a model.safetensors that is something else (a directory, a FIFO, a link to nothing) is named as such.
  if (notAFile !== undefined) throw notAFile;
  const present = (await files.list?.())?.filter(isWeightName);
  if (present === undefined || present.length === 0) {
    const found = present === undefined ? 'found neither' : 'found no safetensors file at all';
    fail('NO_SAFETENSORS', `expected ${WEIGHTS} or ${WEIGHTS_INDEX} in this directory, ${found}.`, { file: files.root });
  }
  return fail(
    'NO_MODEL_SAFETENSORS',
    `expected ${WEIGHTS} or ${WEIGHTS_INDEX} in this directory (the weight files transformers' from_pretrained reads), found only ${present.map((f) => `'${f}'`).join(', ')}, which are not read as weights; rename the weights file to ${WEIGHTS} (or its index to ${WEIGHTS_INDEX}).`,
    { file: files.root },
  );
}

/** A name a weight file or index could have: what `unread` lists and NO_MODEL_SAFETENSORS names. */
export function isWeightName(name: string): boolean {
  return name.endsWith('.safetensors') || name.endsWith('.safetensors.index.json');
}

/**
 * config.json's `transformers_weights`: the weight file or index a repository names for transformers to read
 * instead of model.safetensors (`transformers_explicit_filename`), normalized. Undefined without one, and when
 * config.json is missing or unreadable (the model's config reader reports that).
 */
async function namedWeights(files: ModelFiles): Promise<string | undefined> {
  const file = joinName(files.root, 'config.json');
  let config: unknown;
  try {
    config = JSON.parse((await readTextFile(files, 'config.json')) ?? 'null');
  } catch {
    return undefined;
  }
  const name = (config as { transformers_weights?: unknown } | null)?.transformers_weights;
  if (name === undefined || name === null) return undefined;
  if (typeof name !== 'string' || !isWeightName(name)) {
    fail(
      'BAD_TRANSFORMERS_WEIGHTS',
      `expected "transformers_weights" to name a .safetensors or .safetensors.index.json file, found ${show(name)}.`,
      { file },
    );
  }
  const normal = normalizeName(name);
  if (normal === undefined) {
    fail('BAD_TRANSFORMERS_WEIGHTS', `expected "transformers_weights" to name a file inside the model directory, found '${name}'.`, {
      file,
    });
  }
  return normal;
}

/** An index and its shards, opened (each once: 'a.safetensors' and './a.safetensors' are one file). */
async function readIndex(files: ModelFiles, name: string, opened?: ByteSource): Promise<WeightFiles> {
  const source = opened ?? (await openWeight(files, name));
  if (source === undefined)
    fail('FILE_NOT_FOUND', 'expected a safetensors index .json here, found nothing.', { file: joinName(files.root, name) });
  const indexFile = source.name;
  let weightMap: Record<string, string>;
  try {
    weightMap = await readWeightMap(source);
  } finally {
    await source.close().catch(() => undefined);
  }
  const dir = name.includes('/') ? name.slice(0, name.lastIndexOf('/') + 1) : '';
  const normal: Record<string, string> = {};
  const spelled = new Map<string, string>();
  for (const [tensor, shard] of Object.entries(weightMap)) {
    normal[tensor] = shardName(files, indexFile, dir, shard);
    if (!spelled.has(normal[tensor])) spelled.set(normal[tensor], shard);
  }
  const names = [...spelled.keys()].sort();
  const sources: ByteSource[] = [];
  try {
    for (const shard of names) sources.push(await openShard(files, indexFile, shard, spelled.get(shard) ?? shard));
  } catch (err) {
    await Promise.all(sources.map((s) => s.close().catch(() => undefined)));
    throw err;
  }
  return { index: indexFile, weightMap: normal, names, sources };
}

/**
 * A shard's name in the directory: the index's folder joined with the shard's name, refused if that leaves
 * the index's folder (by `..` or an absolute path).
 */
function shardName(files: ModelFiles, indexFile: string, dir: string, shard: string): string {
  const outside = (how: string): never =>
    fail('SHARD_OUTSIDE_DIR', `the index names shard '${shard}', which ${how}; expected a file inside the model directory ${files.root}.`, {
      file: indexFile,
    });
  if (/^([A-Za-z]:)?[\\/]/.test(shard)) outside('is an absolute path');
  return `${dir}${normalizeName(shard) ?? outside('points outside it')}`;
}

async function openShard(files: ModelFiles, indexFile: string, shard: string, given: string): Promise<ByteSource> {
  const source = await openWeight(files, shard, `the index names shard '${given}'`, indexFile);
  if (source === undefined) {
    fail('SHARD_MISSING', `the index names shard '${given}', expected it at ${joinName(files.root, shard)}, found nothing.`, {
      file: indexFile,
    });
  }
  return source;
}

/**
 * `files.open` of a weight file (an index, a shard): the source's refusal of a file outside the directory (a
 * symlink out of it) is SHARD_OUTSIDE_DIR, said as the index's when an index named it.
 */
async function openWeight(files: ModelFiles, name: string, namedBy?: string, indexFile?: string): Promise<ByteSource | undefined> {
  try {
    return await files.open(name);
  } catch (err) {
    if (!(err instanceof SafetensorsError) || err.code !== 'FILE_OUTSIDE_DIR') throw err;
    if (namedBy === undefined) throw new SafetensorsError('SHARD_OUTSIDE_DIR', err.message, { file: err.file, cause: err });
    const what = err.file !== undefined && err.message.startsWith(`${err.file}: `) ? err.message.slice(err.file.length + 2) : err.message;
    return fail('SHARD_OUTSIDE_DIR', `${namedBy}: ${what}`, { file: indexFile, cause: err });
  }
}

async function readWeightMap(source: ByteSource): Promise<Record<string, string>> {
  const indexFile = source.name;
  if (source.size > MAX_INDEX_SIZE) {
    fail('INDEX_TOO_LARGE', `expected an index of at most ${MAX_INDEX_SIZE} bytes (a real one is a few MB), found ${source.size} bytes.`, {
      file: indexFile,
    });
  }
  const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(await source.read(0, source.size));
  const defect: JsonDefect | null = scanJson(text);
  if (defect?.kind === 'too-deep') {
    fail(
      'JSON_TOO_DEEP',
      `expected the index JSON nested at most ${MAX_JSON_DEPTH} deep, found deeper nesting at character ${defect.offset}.`,
      {
        file: indexFile,
      },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    return fail(
      'INDEX_NOT_JSON',
      `expected the index to be JSON with a "weight_map", found unparsable text (${(cause as Error).message}).`,
      {
        file: indexFile,
        cause,
      },
    );
  }
  if (defect?.kind === 'duplicate-key') {
    fail('DUPLICATE_KEY', `expected each key once in ${showPath(defect.path)} of the index, found ${show(defect.key)} twice.`, {
      file: indexFile,
    });
  }
  const weightMap = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    return fail('INDEX_BAD_WEIGHT_MAP', `expected "weight_map" to be an object of tensor name -> shard file, found ${show(weightMap)}.`, {
      file: indexFile,
    });
  }
  for (const [tensor, shard] of Object.entries(weightMap)) {
    if (typeof shard !== 'string' || shard === '' || shard.includes('\0')) {
      fail('INDEX_BAD_WEIGHT_MAP', `expected "weight_map" to map tensor '${tensor}' to a shard file name, found ${show(shard)}.`, {
        file: indexFile,
        tensor,
      });
    }
  }
  return weightMap as Record<string, string>;
}
