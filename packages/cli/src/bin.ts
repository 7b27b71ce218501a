#!/usr/bin/env node
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const e = err as Error & { code?: string };
    process.stderr.write(`vlmkit: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    process.exitCode = 1;
  },
);
