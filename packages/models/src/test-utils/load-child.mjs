// A child process for the graph cache's concurrency tests: loads one model into a cache directory and
// releases it. Once its modules are imported it prints `ready` and waits for a line on stdin, so that the
// parent can start every child's load at the same moment. Then prints `ok`, or `FAIL <code> <message>` and
// exits 1.
// Run: node --conditions=@vlmkit/source --import ./register-ts.mjs load-child.mjs <checkpoint> <cacheDir> [quantize]
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const [checkpoint, cacheDir, quantize] = process.argv.slice(2);
try {
  const { Ernie45VL } = await import('../ernie/model.ts');
  const { Granite4Vision } = await import('../granite/model.ts');
  const lines = createInterface({ input: process.stdin });
  const go = once(lines, 'line');
  console.log('ready');
  await go;
  lines.close();
  const options = { device: 'cpu', cacheDir, profile: { threads: 1, logger: () => {} }, ...(quantize ? { quantize } : {}) };
  const model = checkpoint.includes('granite')
    ? await Granite4Vision.fromPretrained(checkpoint, options)
    : await Ernie45VL.fromPretrained(checkpoint, { ...options, reference: 'hf' });
  await model.release();
  console.log('ok');
} catch (e) {
  console.log(`FAIL ${e?.code ?? ''} ${e?.message ?? e}`);
  process.exitCode = 1;
}
