import { describe, expect, it } from 'vitest';
import { isBlockedAddress } from './media.js';
import { StopMatcher } from './stop.js';

/** The text sent for `pieces`, and whether a stop string ended it. */
function run(stops: string[], pieces: string[]): { sent: string[]; stopped: boolean } {
  const m = new StopMatcher(stops);
  const sent = pieces.map((p) => m.push(p));
  sent.push(m.flush());
  return { sent, stopped: m.stopped };
}

describe('StopMatcher', () => {
  it('holds back a piece that may begin a stop string until the next piece tells', () => {
    expect(run(['END'], ['abc E', 'N', 'D more'])).toEqual({ sent: ['abc ', '', '', ''], stopped: true });
    expect(run(['END'], ['abc E', 'N', 'o'])).toEqual({ sent: ['abc ', '', 'ENo', ''], stopped: false });
  });

  it('cuts at the earliest of several stop strings and sends nothing after', () => {
    expect(run(['xyz', 'b'], ['a', 'bxyz', 'c'])).toEqual({ sent: ['a', '', '', ''], stopped: true });
  });

  it('sends the held tail when the answer ends without a stop string', () => {
    expect(run(['\n\n'], ['line\n'])).toEqual({ sent: ['line', '\n'], stopped: false });
  });
});

describe('isBlockedAddress', () => {
  it('refuses loopback, private, link-local, reserved and IPv4-mapped forms of them', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:a00:1',
      'not an ip',
    ])
      expect(isBlockedAddress(a), a).toBe(true);
  });

  it('lets public addresses through', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1']) expect(isBlockedAddress(a), a).toBe(false);
  });
});
