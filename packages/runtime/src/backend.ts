// What a platform's onnxruntime does for a session (platform.node.ts: onnxruntime-node; platform.browser.ts:
// onnxruntime-web): the device rule and ORT's Tensor class. session.ts does the rest, the same everywhere.
import type { OrtSession, OrtSessionOptions, Tensor } from '#platform';
import type { Device, DeviceRequest } from './device.js';
import type { Logger } from './log.js';
import type { SessionOptions } from './session.js';

export interface OpenContext {
  name: string;
  opts: SessionOptions;
  /** ORT's options for `opts`, all but the execution providers (session.ts `ortSessionOptions`). */
  base: OrtSessionOptions;
  log: Logger | undefined;
}

/** Runs one `session.run` and fails it when the device reports what ORT did not (see web-session.ts). */
export type RunGuard = <T>(run: () => Promise<T>) => Promise<T>;

export interface OpenedSession {
  session: OrtSession;
  device: Device;
  /** Why `device`, for `VlmSession.deviceReason` and the log line. */
  reason: string;
  guard?: RunGuard;
}

export interface SessionBackend {
  /** The `device` requests this platform takes. */
  readonly devices: readonly DeviceRequest[];
  /** ORT's Tensor class: feeds are made with it. */
  readonly Tensor: typeof Tensor;
  /** Creates the ORT session on the device `ctx.opts.device` asks for. Throws RuntimeError. */
  open(model: string | Uint8Array, ctx: OpenContext): Promise<OpenedSession>;
}
