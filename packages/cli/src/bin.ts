#!/usr/bin/env node
// Only argv-limit.js is imported statically: main.js loads onnxruntime-node, which must not see a command line
// long enough to crash it.
import { argvTooLong } from './argv-limit.js';

async function bin(): Promise<void> {
  const tooLong = argvTooLong(process.argv);
  if (tooLong !== undefined) {
    process.stderr.write(`vlmkit: ${tooLong}\n`);
    process.exitCode = 2;
    return;
  }
  // A reader that goes away (`vlmkit run ... | head -c 20`) ends the command quietly: generation stops, the model
  // is released, exit 0. Any other stdout failure (a full disk) stops it too, with the reason and exit 1.
  const closed = new AbortController();
  let failure: string | undefined;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') failure ??= `cannot write to stdout: ${e.message}`;
    closed.abort();
  });
  const { main, INTERRUPTED } = await import('./main.js');
  let code: number;
  try {
    code = await main(process.argv.slice(2), undefined, {
      tty: process.stdout.isTTY === true,
      errTty: process.stderr.isTTY === true,
      err: (s) => process.stderr.write(s),
      outputClosed: closed.signal,
    });
  } catch (err) {
    const e = err as Error & { code?: string };
    process.stderr.write(`vlmkit: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    process.exitCode = 1;
    return;
  }
  // Ctrl-C ended the command: a read still pending (stdin, a FIFO) must not hold the process open.
  if (code === INTERRUPTED) process.exit(code);
  // A failed write to stdout is reported on a later tick than the write.
  await new Promise((resolve) => setImmediate(resolve));
  if (failure !== undefined) process.stderr.write(`vlmkit: ${failure}\n`);
  process.exitCode = failure !== undefined ? 1 : code;
}

void bin();
