/**
 * What @vlmkit/safetensors does differently in Node: paths. Every `node:` import of the package's source is
 * here or in a `*.node.ts` module only this imports; platform.browser.ts gives the same names, which refuse
 * (UNSUPPORTED_PLATFORM) and say what to use in a page.
 */
export { checkpointFiles, dirFiles, locatePath } from './dir-files.node.js';
export { fileSource } from './file-source.node.js';
export { openRegularFile, readRegularTextFile } from './regular-file.node.js';
export { writeSafetensors } from './write-file.node.js';
