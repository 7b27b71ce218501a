// Compares @vlmkit/processors' decodeImage with HF's load_image on the files written by
// fuzz_image_decode.py: `pnpm --filter @vlmkit/processors build`, then
// `node tools/processors/fuzz-image-decode.mjs /tmp/fuzz`. Prints the tally and any file where the
// two differ; exits 1 when a file decodes to other bytes, or decodes where HF refuses it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeImage } from '../../packages/processors/dist/index.js';

const dir = process.argv[2];
const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
const tally = {};
const notes = [];
for (const [name, e] of Object.entries(index)) {
  let ours;
  try {
    ours = await decodeImage(join(dir, name), { maxPixels: 4_000_000 });
  } catch (err) {
    if (err?.name !== 'ProcessorError') throw err;
    ours = { error: `${err.code}: ${err.message}` };
  }
  let kind;
  if (e.error) kind = ours.error ? 'both refuse' : 'HF refuses, decoded';
  else if (ours.error) kind = 'HF decodes, refused by name';
  else {
    const expected = readFileSync(join(dir, `${name}.rgb`));
    const same = ours.width === e.width && ours.height === e.height && Buffer.compare(expected, Buffer.from(ours.data)) === 0;
    kind = same ? 'identical' : 'DIFFERENT';
  }
  tally[kind] = (tally[kind] ?? 0) + 1;
  const first = (s) => s?.split('\n')[0];
  if (kind !== 'identical' && kind !== 'both refuse')
    notes.push(`${name}: ${kind} (HF: ${first(e.error) ?? 'decodes'}; ours: ${first(ours.error) ?? 'decodes'})`);
}
console.log(JSON.stringify(tally));
for (const n of notes
  .filter((n) => !n.includes('refused by name'))
  .concat(notes.filter((n) => n.includes('refused by name')).slice(0, 10))) {
  console.log(n);
}
process.exit((tally.DIFFERENT ?? 0) + (tally['HF refuses, decoded'] ?? 0) > 0 ? 1 : 0);
