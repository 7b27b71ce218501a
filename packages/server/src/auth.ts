import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether an Authorization header carries `Bearer <key>`. Both sides are hashed first, so the comparison takes
 * the same time whatever the header's length or how much of it matches.
 */
export function bearerMatches(header: string | undefined, key: string): boolean {
  const m = /^Bearer +(.+)$/i.exec(header ?? '');
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(m?.[1] ?? ''), digest(key)) && m !== null;
}
