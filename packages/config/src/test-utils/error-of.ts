import { expect } from 'vitest';
import { ConfigError } from '../errors.js';

/** Runs `read` and returns the ConfigError it threw (fails the test when it threw nothing or something else). */
export function errorOf(read: () => unknown): ConfigError {
  try {
    read();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}
