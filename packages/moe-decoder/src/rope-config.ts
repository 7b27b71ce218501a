// The default-rope fields both decoders read from a text config: one reader for HF 5.17's `rope_parameters`
// and the older flat `rope_theta` / `rope_scaling` layout.
import type { ConfigObject } from '@vlmkit/config';

export interface RopeFields {
  /** The rope_parameters (or rope_scaling) object when the config has one: ERNIE reads mrope_section from it. */
  readonly parameters: ConfigObject | undefined;
  readonly theta: number;
}

/**
 * Reads the rotary settings of a decoder that supports only the default rope: rope_type must be 'default',
 * theta comes from rope_parameters.rope_theta, else the top-level rope_theta, else `defaultTheta` (whose source
 * `from` names, as every default does).
 */
export function defaultRope(j: ConfigObject, model: string, defaultTheta: { default: number; from: string }): RopeFields {
  const rp = j.optionalObj('rope_parameters') ?? j.optionalObj('rope_scaling');
  if (rp !== undefined) {
    rp.oneOf(rp.has('rope_type') || !rp.has('type') ? 'rope_type' : 'type', ['default'], {
      default: 'default',
      from: 'HF rope_parameters',
      code: 'UNSUPPORTED_CONFIG',
      why: `${model} uses the default rope.`,
    });
  }
  return { parameters: rp, theta: rp?.optionalPositive('rope_theta') ?? j.positive('rope_theta', defaultTheta) };
}
