#!/usr/bin/env node
// Only argv-limit.js is imported statically: main.js loads onnxruntime-node, which must not see a command line
// long enough to crash it.
import { argvTooLong } from './argv-limit.js';

const tooLong = argvTooLong(process.argv);
if (tooLong !== undefined) {
  process.stderr.write(`vlmkit: ${tooLong}\n`);
  process.exitCode = 2;
} else {
  // A reader that goes away (`vlmkit run ... | head -c 20`) ends the command quietly: generation stops, the model
  // is released, exit 0. Any other stdout failure (a full disk) stops it too, with the reason and exit 1.
  const closed = new AbortController();
  let failure: string | undefined;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') failure ??= `cannot write to stdout: ${e.message}`;
    closed.abort();
  });
  import('./main.js')
    .then(async ({ main, INTERRUPTED }) => {
      const code = await main(process.argv.slice(2), undefined, {
        tty: process.stdout.isTTY === true,
        err: (s) => process.stderr.write(s),
        outputClosed: closed.signal,
      });
      return { code, INTERRUPTED };
    })
    .then(
      ({ code, INTERRUPTED }) => {
        if (failure !== undefined) {
          process.stderr.write(`vlmkit: ${failure}\n`);
          process.exitCode = 1;
        } else process.exitCode = code;
        // Ctrl-C ended the command: a read still pending (stdin, a FIFO) must not hold the process open.
        if (code === INTERRUPTED) process.exit(code);
      },
      (err: unknown) => {
        const e = err as Error & { code?: string };
        process.stderr.write(`vlmkit: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
        process.exitCode = 1;
      },
    );
}
