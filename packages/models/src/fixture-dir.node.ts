import { fileURLToPath } from 'node:url';

/** The repository's test-fixtures/ (tiny reference checkpoints), for demos and tests run from a checkout. */
export const FIXTURE_DIR = fileURLToPath(new URL('../../../test-fixtures/', import.meta.url));
