// Comparisons and the report of `pnpm test:browser`: one line per check, failures named with their numbers.

/** max |a - b| / max |ref| (0 when both are all zeros); keep(i) selects the entries compared. */
export function relMaxDiff(a, ref, keep = () => true) {
  if (a.length !== ref.length) return Number.POSITIVE_INFINITY;
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    if (!keep(i)) continue;
    const d = Math.abs(Number(a[i]) - Number(ref[i]));
    diff = Number.isNaN(d) ? Number.POSITIVE_INFINITY : Math.max(diff, d);
    scale = Math.max(scale, Math.abs(Number(ref[i])));
  }
  return diff === 0 ? 0 : diff / scale;
}

/** max |a - b| over the entries keep(i) selects. */
export function maxAbsDiff(a, b, keep = () => true) {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let diff = 0;
  for (let i = 0; i < a.length; i++) {
    if (!keep(i)) continue;
    const d = Math.abs(Number(a[i]) - Number(b[i]));
    diff = Number.isNaN(d) ? Number.POSITIVE_INFINITY : Math.max(diff, d);
  }
  return diff;
}

/** Index of the first difference of two sequences, or -1 when they are equal (lengths included). */
export function firstDifference(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** A failed step (a build, a launch) whose message names what failed and what to do: printed without a stack. */
export class StepError extends Error {}

export const fmt = (x) => (x === 0 ? '0' : Number.isFinite(x) ? x.toExponential(2) : String(x));

/** Collects check results and prints them as they come. */
export class Report {
  results = [];
  notes = [];

  /** One check: ok decides pass/fail; detail is the line's numbers. */
  check(name, ok, detail = '') {
    this.results.push({ name, status: ok ? 'pass' : 'fail', detail });
    console.log(`${ok ? 'ok  ' : 'FAIL'}  ${name}${detail ? `: ${detail}` : ''}`);
  }

  skip(name, why) {
    this.results.push({ name, status: 'skip', detail: why });
    console.log(`skip  ${name}: ${why}`);
  }

  /**
   * A check that threw (an error in the page arrives as its message: the page's stack is minified code), or with
   * `stack`, an unexpected exception of the runner itself (a StepError's message says it all).
   */
  error(name, err, { stack = false } = {}) {
    const full = stack && !(err instanceof StepError) && err instanceof Error ? err.stack : undefined;
    // Playwright puts the page's stack into the message.
    const message = (err instanceof Error ? err.message : String(err))
      .split('\n')
      .filter((line) => !/^\s+at /.test(line))
      .join('\n');
    this.check(name, false, full ?? message);
  }

  info(line) {
    this.notes.push(line);
    console.log(`      ${line}`);
  }

  count(status) {
    return this.results.filter((r) => r.status === status).length;
  }

  get failed() {
    return this.count('fail');
  }
}
