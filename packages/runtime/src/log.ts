/**
 * Logging: silent unless the caller passes a logger, or the VLMKIT_LOG
 * environment variable (a `debug`-style comma list) names this package:
 * `VLMKIT_LOG=runtime`, `VLMKIT_LOG=vlmkit:*`, `VLMKIT_LOG=*` or `VLMKIT_LOG=1`.
 * In the browser, `globalThis.VLMKIT_LOG` plays the variable.
 */
import { logSetting } from '#platform';

export type Logger = (msg: string) => void;

export function logEnabledByEnv(value: string | undefined = logSetting()): boolean {
  if (!value) return false;
  return value
    .split(',')
    .map((s) => s.trim())
    .some((s) => ['1', 'true', '*', 'vlmkit:*', 'runtime', 'vlmkit:runtime'].includes(s));
}

export function resolveLogger(logger: Logger | undefined): Logger | undefined {
  if (logger) return logger;
  if (logEnabledByEnv()) return (msg) => console.error(`[vlmkit:runtime] ${msg}`);
  return undefined;
}
