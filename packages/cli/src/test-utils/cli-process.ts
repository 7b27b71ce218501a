// The real `vlmkit` command as a child process (packages/cli/dist/bin.js, rebuilt by ./build-bin.ts when a source
// is newer), and copies of the tiny checkpoints for tests that try to damage them.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIXTURE_DIR } from '@vlmkit/models';

export const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

export interface Ran {
  /** The exit code, or null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** From spawn to exit. */
  ms: number;
}

export interface RunBinOptions {
  /** Written to stdin, which is then closed; without it stdin stays open (a reader would wait). */
  input?: string | Buffer | undefined;
  /** Killed (SIGKILL) after this long: a hang fails the test instead of holding the suite. */
  timeoutMs?: number | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  /** A file descriptor to give the child as its stdout instead of a pipe. */
  stdoutFd?: number | undefined;
  /** Sees each stdout chunk with the child, e.g. to close the pipe or send a signal. */
  onStdout?: ((chunk: Buffer, child: ReturnType<typeof spawn>) => void) | undefined;
}

/** Runs `node dist/bin.js ...args`. */
export function runBin(args: readonly string[], o: RunBinOptions = {}): Promise<Ran> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, ...args], { env: o.env ?? process.env, stdio: ['pipe', o.stdoutFd ?? 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
    o.onStdout?.(c, child);
  });
  // The test may close stdout early (a reader that leaves); the parent's end then reports EPIPE-like errors.
  child.stdout?.on('error', () => undefined);
  child.stdin?.on('error', () => undefined);
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  if (o.input !== undefined) child.stdin?.end(o.input);
  const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - t0 });
    });
  });
}

/** A node.js stack trace line, which no error the command reports may show. */
export const STACK_LINE = /^\s+at .+[:(]/m;

/** A copy of test-fixtures/<name> in a fresh temporary directory (tests never write into test-fixtures). */
export async function copyFixture(name: string): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'vlmkit-hostile-')), name);
  await cp(join(FIXTURE_DIR, name), dir, { recursive: true });
  return dir;
}

/** Every file under `dir` by relative path, with the sha256 of its bytes. */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const p = join(e.parentPath, e.name);
    out[relative(dir, p)] = createHash('sha256')
      .update(await readFile(p))
      .digest('hex');
  }
  return out;
}
