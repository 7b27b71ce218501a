// Where a request's images and videos come from: a data URL, a file under --media-dir, or (with
// --allow-remote-media) an http(s) URL. Nothing outside the media directory is ever read, and no request
// goes to a private, loopback or link-local address: every address the name resolves to is checked, and
// the connection is made to the checked address (a second DNS answer cannot redirect it).
import { lookup as dnsLookup } from 'node:dns/promises';
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { isAbsolute, join, sep } from 'node:path';
import { badRequest } from './errors.js';

export interface RemoteMediaLimits {
  /** Largest body fetched (default 20 MiB). */
  maxBytes?: number;
  /** From the request to the last byte (default 10 s). */
  timeoutMs?: number;
}

export interface MediaOptions {
  /** Local paths are read only under this directory (its real path); without it, local paths are refused. */
  mediaDir?: string | undefined;
  /** http(s) URLs are fetched only when set. */
  remote?: Required<RemoteMediaLimits> | undefined;
  /** Largest media file read from the media directory or a data URL (default 64 MiB). */
  maxFileBytes: number;
}

/** One image's or video's bytes, or the checked real path of a media-dir file left for the processor to read. */
export type Media = { bytes: Uint8Array } | { path: string };

/**
 * Reads the media a part's `url` names; `param` is the field's path for the error. With `pathOnly` a media-dir
 * file is checked (inside the directory, a regular file, within the size limit) but not read: a video's decoder
 * reads the file itself.
 */
export async function readMedia(url: string, param: string, o: MediaOptions): Promise<{ bytes: Uint8Array }>;
export async function readMedia(url: string, param: string, o: MediaOptions, pathOnly: true): Promise<Media>;
export async function readMedia(url: string, param: string, o: MediaOptions, pathOnly = false): Promise<Media> {
  if (url.startsWith('data:')) return { bytes: dataUrl(url, param, o.maxFileBytes) };
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') {
    if (!o.remote) {
      throw badRequest(
        param,
        'remote_media_disabled',
        `${param}: remote URLs are refused; start the server with --allow-remote-media to fetch them`,
      );
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw badRequest(param, 'invalid_url', `${param}: not a valid URL`);
    }
    return { bytes: await fetchRemote(parsed, param, o.remote) };
  }
  if (scheme !== undefined && scheme !== 'file' && !/^[a-z]:[\\/]/i.test(url)) {
    throw badRequest(
      param,
      'unsupported_url',
      `${param}: the URL scheme '${scheme}:' is not supported (data:, a path under --media-dir, http(s) with --allow-remote-media)`,
    );
  }
  return mediaFile(scheme === 'file' ? fileUrlPath(url, param) : url, param, o, pathOnly);
}

/** `data:[<type>][;base64],<data>`: base64 only (media are binary). */
function dataUrl(url: string, param: string, maxBytes: number): Uint8Array {
  const comma = url.indexOf(',');
  const meta = comma < 0 ? '' : url.slice(5, comma);
  if (comma < 0 || !/;base64$/i.test(meta)) {
    throw badRequest(param, 'invalid_data_url', `${param}: a data URL must be 'data:<type>;base64,<data>'`);
  }
  const data = url.slice(comma + 1);
  if (data.length === 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 === 1) {
    throw badRequest(param, 'invalid_data_url', `${param}: the data URL's payload is not valid base64`);
  }
  if ((data.length * 3) / 4 > maxBytes) throw badRequest(param, 'media_too_large', `${param}: the data is over ${maxBytes} bytes`);
  return Buffer.from(data, 'base64');
}

function fileUrlPath(url: string, param: string): string {
  try {
    const u = new URL(url);
    if (u.host !== '') throw new Error('a file URL with a host');
    return decodeURIComponent(u.pathname);
  } catch {
    throw badRequest(param, 'invalid_path', `${param}: not a file URL this server reads (file:///path under --media-dir)`);
  }
}

/**
 * A regular file under the media directory: relative paths are taken from it, absolute ones must lie in it,
 * `..` is refused outright, and the file's real path (symbolic links followed) must still lie in it.
 */
async function mediaFile(path: string, param: string, o: MediaOptions, pathOnly: boolean): Promise<Media> {
  if (o.mediaDir === undefined) {
    throw badRequest(
      param,
      'local_media_disabled',
      `${param}: local paths are refused; start the server with --media-dir DIR to serve files under DIR`,
    );
  }
  const refuse = (why: string) => badRequest(param, 'invalid_path', `${param}: ${why}`);
  if (path.includes('\0')) throw refuse('the path holds a NUL character');
  if (path.split(/[\\/]/).includes('..')) throw refuse("'..' is not allowed in a media path");
  const root = await realpath(o.mediaDir);
  let real: string;
  try {
    real = await realpath(isAbsolute(path) ? path : join(root, path));
  } catch {
    throw refuse('no such file under --media-dir');
  }
  if (!real.startsWith(root + sep)) throw refuse('the path is outside --media-dir (after following symbolic links)');
  // O_NONBLOCK: a FIFO is opened without waiting for a writer, then refused as not a regular file.
  const file = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => {
    throw refuse('the file cannot be opened');
  });
  try {
    const s = await file.stat();
    if (!s.isFile()) throw refuse('not a regular file');
    if (s.size > o.maxFileBytes) throw badRequest(param, 'media_too_large', `${param}: the file is over ${o.maxFileBytes} bytes`);
    return pathOnly ? { path: real } : { bytes: await file.readFile() };
  } finally {
    await file.close();
  }
}

/**
 * Addresses no remote media request may reach (IANA special-purpose registries, RFC 6890 and its successors).
 * Two lists: node's BlockList checks an IPv4 address against IPv6 rules as IPv4-mapped, so `::ffff:0:0/96` in
 * a shared list would block every IPv4 address.
 */
const BLOCKED_V4 = new BlockList();
const BLOCKED_V6 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED_V4.addSubnet(net, bits, 'ipv4');
// IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses name IPv4 hosts: refused whole.
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  BLOCKED_V6.addSubnet(net, bits, 'ipv6');

/** Whether `address` is private, loopback, link-local, reserved, or an IPv6 form of an IPv4 host. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED_V4.check(address, 'ipv4');
  if (family !== 6) return true;
  // The deprecated IPv4-compatible form (::10.0.0.1) is not under ::ffff:0:0/96: check the IPv4 address it holds.
  const compatible = /^::(\d+\.\d+\.\d+\.\d+)$/.exec(address)?.[1];
  if (compatible !== undefined && BLOCKED_V4.check(compatible, 'ipv4')) return true;
  return BLOCKED_V6.check(address, 'ipv6');
}

/** GET `url` at an address checked first, without redirects, within the size and time limits. */
async function fetchRemote(url: URL, param: string, limits: Required<RemoteMediaLimits>): Promise<Uint8Array> {
  const refuse = (code: string, why: string) => badRequest(param, code, `${param}: ${why}`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await dnsLookup(host, { all: true, verbatim: true }).catch(() => []);
  if (addresses.length === 0) throw refuse('remote_media_unreachable', `cannot resolve the host '${host}'`);
  const blocked = addresses.find((a) => isBlockedAddress(a.address));
  if (blocked)
    throw refuse('remote_media_forbidden', `the host '${host}' resolves to ${blocked.address}, a private, loopback or reserved address`);
  const target = addresses[0]!;
  const get = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Uint8Array>((resolve, reject) => {
    const fail = (e: Error) => {
      req.destroy();
      reject(e);
    };
    const timer = setTimeout(
      () => fail(refuse('remote_media_timeout', `no complete answer from ${url.origin} within ${limits.timeoutMs} ms`)),
      limits.timeoutMs,
    );
    const req = get(
      url,
      {
        // The connection goes to the address checked above, whatever DNS answers next (rebinding).
        lookup: (_host, _o, cb) => cb(null, target.address, target.family),
        headers: { accept: 'image/*,video/*' },
      },
      (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          res.resume();
          clearTimeout(timer);
          return fail(refuse('remote_media_failed', `${url.origin} answered HTTP ${res.statusCode} (redirects are not followed)`));
        }
        const declared = Number(res.headers['content-length']);
        if (declared > limits.maxBytes) {
          clearTimeout(timer);
          return fail(refuse('media_too_large', `the remote file is over ${limits.maxBytes} bytes`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > limits.maxBytes) {
            clearTimeout(timer);
            fail(refuse('media_too_large', `the remote file is over ${limits.maxBytes} bytes`));
          } else chunks.push(c);
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve(Buffer.concat(chunks));
        });
        res.on('error', (e) => {
          clearTimeout(timer);
          fail(refuse('remote_media_failed', e.message));
        });
      },
    );
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(refuse('remote_media_failed', `${url.origin}: ${e.message}`));
    });
    req.end();
  });
}
