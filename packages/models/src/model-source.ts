// Where a model is loaded from: a checkpoint directory's path (Node: read in place, graphs kept in the disk
// cache) or its files through `ModelFiles` (@vlmkit/safetensors: `urlFiles(url)`, `blobFiles(files)`, Node's
// `dirFiles(dir)`; graphs built in memory). The side files (config.json, generation_config.json) are read the
// same way from either, with the same size bound.

import { type ModelFiles, readTextFile, SafetensorsError } from '@vlmkit/safetensors';
import { dirFile, readText } from '#platform';

/** A checkpoint directory's path (Node), or its files. */
export type CheckpointSource = string | ModelFiles;

/** The source as the user named it, for messages: the path, or the files' root (a URL, a picked folder). */
export function sourceName(source: CheckpointSource): string {
  return typeof source === 'string' ? source : source.root;
}

/** `name` in the checkpoint as messages say it: its path (absolute), or the files' root and the name. */
export function sourceFile(source: CheckpointSource, name: string): string {
  return typeof source === 'string' ? dirFile(source, name) : `${source.root.replace(/\/+$/, '')}/${name}`;
}

/**
 * The text of the side file `name` (bounded: safetensors' MAX_JSON_FILE_BYTES). A missing file is a
 * SafetensorsError FILE_NOT_FOUND either way, as the path reader throws it.
 */
export async function readSourceText(source: CheckpointSource, name: string): Promise<string> {
  if (typeof source === 'string') return readText(dirFile(source, name));
  const text = await readTextFile(source, name);
  if (text === undefined) {
    throw new SafetensorsError('FILE_NOT_FOUND', `${sourceFile(source, name)}: no such file in ${source.root}.`, {
      file: sourceFile(source, name),
    });
  }
  return text;
}
