import { basename } from 'node:path';
import type { LoadProgress, StepDetail } from '@vlmkit/models';
import type { Out } from './commands.js';

const WIDTH = 24;
/** How often a terminal's bar is redrawn: the step's seconds tick, and the reads that arrived since are shown. */
const REDRAW_MS = 200;

function label(p: LoadProgress): string {
  if (p.done === p.total) return 'loaded';
  if (p.stage === 'weights') return 'reading and mapping weights';
  return p.stage === 'build' ? `building graph ${p.name} (or verifying the cached one)` : `creating session ${p.name}`;
}

/** `bytes` of `total` in the total's unit: '12.5 of 40.0 MB'. */
export function bytesOf(bytes: number, total: number): string {
  const [unit, size] = total >= 2 ** 30 ? ['GB', 2 ** 30] : total >= 2 ** 20 ? ['MB', 2 ** 20] : ['KB', 2 ** 10];
  return `${(bytes / (size as number)).toFixed(1)} of ${(total / (size as number)).toFixed(1)} ${unit}`;
}

type Read = Extract<StepDetail, { kind: 'read' }>;
type Layer = Extract<StepDetail, { kind: 'quantize' }>;

/** The step's work so far: the file being read, and in a quantizing build the layer. */
function details(read: Read | undefined, layer: Layer | undefined): string {
  const parts: string[] = [];
  if (read) parts.push(`reading ${basename(read.file)} ${bytesOf(Math.min(read.bytes, read.totalBytes), read.totalBytes)}`);
  if (layer) parts.push(`quantizing ${layer.stack} layer ${layer.layer + 1}/${layer.layers}`);
  return parts.length > 0 ? `: ${parts.join(', ')}` : '';
}

export interface ProgressBarOptions {
  /**
   * The stream is a terminal: one line redrawn in place. Otherwise (a log file, a pipe) one line per step as it
   * starts, and no detail within a step.
   */
  redraw: boolean;
}

/**
 * Progress of a model load on stderr. On a terminal, one line redrawn in place (`\r`, erase line) at each
 * step and each layer quantized, and every 200 ms with the seconds the step has taken and how far its work is
 * (the checkpoint file being read, the layer being quantized), erased when the load is done; elsewhere one
 * plain line per step.
 * `stop()` erases the bar early (a failed load).
 */
export function loadProgressBar(
  write: Out,
  options: ProgressBarOptions = { redraw: true },
): { onProgress: (p: LoadProgress) => void; stop: () => void } {
  if (!options.redraw) {
    let step = '';
    return {
      onProgress: (p) => {
        // A step reports its start and its end with the same stage and name: printed once, as it starts.
        if (p.detail !== undefined || p.done === p.total || `${p.stage} ${p.name}` === step) return;
        step = `${p.stage} ${p.name}`;
        write(`vlmkit: ${p.done}/${p.total} ${label(p)}\n`);
      },
      stop: () => {},
    };
  }
  let last: LoadProgress | undefined;
  let read: Read | undefined;
  let layer: Layer | undefined;
  let stepStart = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const draw = () => {
    if (!last) return;
    const filled = Math.round((last.done / last.total) * WIDTH);
    const seconds = ((performance.now() - stepStart) / 1000).toFixed(1);
    write(
      `\r\x1b[2K[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${last.done}/${last.total} ${label(last)} ${seconds} s${details(read, layer)}`,
    );
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
      if (p.detail !== undefined) {
        // A new layer is drawn at once (a few dozen per load); reads, one per tensor, at the next tick.
        if (p.detail.kind === 'read') read = p.detail;
        else {
          layer = p.detail;
          draw();
        }
        return;
      }
      if (last?.done !== p.done || last.name !== p.name || last.stage !== p.stage) {
        stepStart = performance.now();
        read = undefined;
        layer = undefined;
      }
      last = p;
      draw();
      if (!timer) {
        timer = setInterval(draw, REDRAW_MS);
        timer.unref();
      }
    },
    stop,
  };
}
