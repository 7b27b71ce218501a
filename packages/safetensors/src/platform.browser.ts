/**
 * The browser's side of `#platform`: there are no paths in a page, so every path API refuses with
 * UNSUPPORTED_PLATFORM and names what to use instead. Typed against platform.node.ts, so the two cannot drift.
 */
import { fail } from './errors.js';
import type * as NodePlatform from './platform.node.js';

const SOURCES = 'urlSource(url) or blobSource(file)';
const FILES = 'urlFiles(baseUrl) or blobFiles(input.files)';

function unsupported(api: string, instead: string): never {
  return fail('UNSUPPORTED_PLATFORM', `${api} reads the file system, which a browser has not; use ${instead}.`);
}

export const fileSource: typeof NodePlatform.fileSource = async () =>
  unsupported('SafetensorsFile.open(path)', `SafetensorsFile.fromSource(${SOURCES})`);
export const dirFiles: typeof NodePlatform.dirFiles = () => unsupported('dirFiles(dir)', FILES);
export const locatePath: typeof NodePlatform.locatePath = async () =>
  unsupported('Checkpoint.open(path)', `Checkpoint.fromFiles(${FILES})`);
export const checkpointFiles: typeof NodePlatform.checkpointFiles = async () =>
  unsupported('checkpointFiles(path)', `Checkpoint.fromFiles(${FILES}) and its files()`);
export const openRegularFile: typeof NodePlatform.openRegularFile = async () => unsupported('openRegularFile(path)', SOURCES);
export const readRegularTextFile: typeof NodePlatform.readRegularTextFile = async () =>
  unsupported('readRegularTextFile(path)', `readTextFile(${FILES}, name)`);
export const writeSafetensors: typeof NodePlatform.writeSafetensors = async () =>
  unsupported('writeSafetensors(path, ...)', 'serializeSafetensors(tensors), then a Blob download or the Origin Private File System');
