// onnxruntime-node crashes (SIGSEGV, no message) while it initializes when the command line is long, whichever
// argument holds it (the measured threshold is in the README); the limit here leaves a wide margin. bin.ts checks
// the command line with this module before anything imports onnxruntime-node, so it must import nothing that does.

/** The longest command line taken, in bytes (each argument's UTF-8 bytes and its NUL, as the kernel counts). */
export const MAX_ARGV_BYTES = 16 * 1024;

/** Why `argv` (process.argv) is refused, naming the longest argument's flag; undefined when it is short enough. */
export function argvTooLong(argv: readonly string[]): string | undefined {
  const bytes = (a: string) => Buffer.byteLength(a) + 1;
  const total = argv.reduce((n, a) => n + bytes(a), 0);
  if (total <= MAX_ARGV_BYTES) return undefined;
  let longest = 2;
  for (let i = 2; i < argv.length; i++) if (bytes(argv[i]!) > bytes(argv[longest] ?? '')) longest = i;
  const arg = argv[longest] ?? '';
  const before = argv[longest - 1];
  const inline = arg.startsWith('--') ? arg.indexOf('=') : -1;
  const flag = inline > 0 ? arg.slice(0, inline) : longest > 2 && before?.startsWith('--') ? before : `argument ${longest - 1}`;
  const value = inline > 0 ? arg.slice(inline + 1) : arg;
  return (
    `${flag} is ${Buffer.byteLength(value)} bytes: command lines over ${MAX_ARGV_BYTES} bytes are refused (onnxruntime-node ` +
    `crashes on them). Pass a long prompt with --prompt-file PATH, or with --prompt - to read it from stdin`
  );
}
