// The prompt of `run` and `preprocess`: on the command line (--prompt TEXT), from a file (--prompt-file PATH) or
// from stdin (--prompt -). A long prompt cannot go on the command line (see argv-limit.ts); what is read is
// bounded, and only a regular file or stdin itself is read, so nothing blocks on a FIFO or reads a device forever.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { UsageError } from './commands.js';

/** The most prompt bytes read from a file or stdin. */
export const MAX_PROMPT_BYTES = 16 * 1024 * 1024;

const MIB = MAX_PROMPT_BYTES / (1024 * 1024);

function utf8(bytes: Uint8Array, from: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`${from} is not UTF-8 text`);
  }
}

async function readFileBounded(path: string): Promise<Uint8Array> {
  let f: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat could refuse it.
    f = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new UsageError(`--prompt-file ${path}: ${(e as Error).message}`);
  }
  try {
    const s = await f.stat();
    if (!s.isFile()) throw new UsageError(`--prompt-file ${path} is not a regular file: to pipe a prompt in, use --prompt - (stdin)`);
    if (s.size > MAX_PROMPT_BYTES) throw new UsageError(`--prompt-file ${path} is ${s.size} bytes: prompts over ${MIB} MiB are refused`);
    const buf = Buffer.alloc(s.size);
    let done = 0;
    while (done < buf.length) {
      const { bytesRead } = await f.read(buf, done, buf.length - done, done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return buf.subarray(0, done);
  } finally {
    await f.close();
  }
}

async function readStreamBounded(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > MAX_PROMPT_BYTES) {
      (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      throw new UsageError(`--prompt - read more than ${MIB} MiB from stdin: prompts over ${MIB} MiB are refused`);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

/**
 * The prompt from `--prompt TEXT`, `--prompt -` (all of stdin) or `--prompt-file PATH` (exactly one of them),
 * taken as written: a trailing newline in a file is part of the prompt.
 */
export async function readPrompt(
  v: { prompt?: string | undefined; 'prompt-file'?: string | undefined },
  stdin: NodeJS.ReadableStream,
): Promise<string> {
  const file = v['prompt-file'];
  if (file !== undefined && v.prompt !== undefined) throw new UsageError('give --prompt or --prompt-file, not both');
  if (file === undefined && (v.prompt === undefined || v.prompt === ''))
    throw new UsageError('--prompt is required (or --prompt-file PATH, or --prompt - to read stdin)');
  const text =
    file !== undefined
      ? utf8(await readFileBounded(file), `--prompt-file ${file}`)
      : v.prompt === '-'
        ? utf8(await readStreamBounded(stdin), '--prompt - (stdin)')
        : v.prompt!;
  if (text === '') throw new UsageError(`${file !== undefined ? `--prompt-file ${file}` : 'stdin (--prompt -)'} is empty`);
  return text;
}
