// fastify's schema errors (ajv's) as OpenAI's 400: the field as a path (`messages[0].content`), what it must be.
import type { FastifyError } from 'fastify';
import { ApiError } from './errors.js';

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: { additionalProperty?: string; missingProperty?: string; allowedValues?: unknown[] };
}

/** `/messages/0/content` -> `messages[0].content`. */
function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : path === '' ? s : `${path}.${s}`), '');
}

export function validationError(error: FastifyError & { validation?: unknown[] }): ApiError {
  const v = (error.validation?.[0] ?? {}) as AjvError;
  const base = fieldPath(v.instancePath ?? '');
  const join = (name: string) => (base === '' ? name : `${base}.${name}`);
  if (v.keyword === 'additionalProperties' && v.params.additionalProperty !== undefined) {
    const field = join(v.params.additionalProperty);
    return new ApiError(400, 'invalid_request_error', 'unknown_parameter', `unrecognized request field: ${field}`, field);
  }
  if (v.keyword === 'required' && v.params.missingProperty !== undefined) {
    const field = join(v.params.missingProperty);
    return new ApiError(400, 'invalid_request_error', 'missing_required_parameter', `${field} is required`, field);
  }
  const field = base === '' ? null : base;
  const what = v.keyword === 'anyOf' ? 'has the wrong type or value' : (v.message ?? 'is invalid');
  return new ApiError(400, 'invalid_request_error', 'invalid_value', `${field ?? 'the body'} ${what}`, field);
}
