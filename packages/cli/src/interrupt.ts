/** Ctrl-C ended a command before it had anything to show: `main` prints a line and exits with 130 (128 + SIGINT). */
export class Interrupted extends Error {
  readonly code = 'INTERRUPTED';
  constructor(during: string) {
    super(`interrupted (Ctrl-C) ${during}`);
    this.name = 'Interrupted';
  }
}

/** Rejects with Interrupted once `signal` aborts; never settles without one. Safe to leave unawaited. */
export function untilAborted(signal: AbortSignal | undefined, during = 'before the answer started'): Promise<never> {
  const p = new Promise<never>((_, reject) => {
    if (signal === undefined) return;
    if (signal.aborted) reject(new Interrupted(during));
    else signal.addEventListener('abort', () => reject(new Interrupted(during)), { once: true });
  });
  p.catch(() => undefined);
  return p;
}
