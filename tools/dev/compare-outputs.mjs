// Compares two folders written by tools/dev/cli-outputs.sh: every file must be byte-identical.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [a, b] = process.argv.slice(2);
if (!a || !b) throw new Error('usage: node tools/dev/compare-outputs.mjs BEFORE AFTER');
const names = readdirSync(a).sort();
const other = readdirSync(b).sort();
let bad = 0;
if (names.join() !== other.join()) {
  console.log(`file lists differ:\n  ${names.join(' ')}\n  ${other.join(' ')}`);
  bad++;
}
for (const n of names.filter((x) => other.includes(x))) {
  const same = readFileSync(join(a, n)).equals(readFileSync(join(b, n)));
  if (!same) bad++;
  console.log(`${same ? 'identical' : 'DIFFERENT'}  ${n}`);
}
console.log(`${names.length - bad} identical, ${bad} different`);
process.exit(bad === 0 ? 0 : 1);
