// The page cache of the files a measurement maps. ORT memory-maps a session's external data, so a process's
// peak RSS counts the mapped pages it touched, and how many pages one touch maps depends on how the file got
// into the page cache: read or written sequentially, it is held in large folios (up to 2 MB) and one 4 KB
// embedding row maps a whole folio; dropped, a touch reads in and maps about a page (docs/benchmarks.md,
// "int4 peak RSS").
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Regular files under `root`, recursively. */
export function filesUnder(root) {
  let out = [];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, e.name);
    if (e.isDirectory()) out = out.concat(filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/**
 * Drops the cached pages of `paths` (GNU dd: iflag=nocache with count=0 advises the kernel to drop the whole
 * file); false where dd cannot (not Linux, no GNU dd), and the cache stays as it was.
 */
export function dropPageCache(paths) {
  try {
    for (const p of paths) execFileSync('dd', [`if=${p}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}
