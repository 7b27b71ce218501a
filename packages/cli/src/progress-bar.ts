import type { LoadProgress } from '@vlmkit/models';
import type { Out } from './commands.js';

const WIDTH = 24;

function label(p: LoadProgress): string {
  if (p.done === p.total) return 'loaded';
  if (p.stage === 'weights') return 'reading and mapping weights';
  return p.stage === 'build' ? `building graph ${p.name} (or verifying the cached one)` : `creating session ${p.name}`;
}

/**
 * A one-line progress bar for a model load on a terminal: redrawn in place (`\r`, erase line) at
 * each step and every 200 ms with the seconds the step has taken, erased when the load is done.
 * `stop()` erases it early (a failed load).
 */
export function loadProgressBar(write: Out): { onProgress: (p: LoadProgress) => void; stop: () => void } {
  let last: LoadProgress | undefined;
  let stepStart = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const draw = () => {
    if (!last) return;
    const filled = Math.round((last.done / last.total) * WIDTH);
    const seconds = ((performance.now() - stepStart) / 1000).toFixed(1);
    write(`\r\x1b[2K[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${last.done}/${last.total} ${label(last)} ${seconds} s`);
  };
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    if (last) write('\r\x1b[2K');
    last = undefined;
  };
  return {
    onProgress: (p) => {
      if (p.done === p.total) {
        stop();
        return;
      }
      if (last?.done !== p.done || last.name !== p.name) stepStart = performance.now();
      last = p;
      draw();
      if (!timer) {
        timer = setInterval(draw, 200);
        timer.unref();
      }
    },
    stop,
  };
}
