// SHA-256 (FIPS 180-4) in plain JavaScript, incremental, for the browser: WebCrypto's digest() is one-shot and
// async, while cache keys are hashed piece by piece. Node uses node:crypto instead (platform.node.ts); both
// give the same hex for the same bytes (sha256.test.ts). Strings are hashed as their UTF-8 bytes, as Node's
// `hash.update(string)` does.

/** An incremental SHA-256: `update` any number of times, then `hex` once. */
export interface Sha256 {
  update(data: Uint8Array | string): Sha256;
  /** The digest as 64 lowercase hex digits; the hash cannot be updated afterwards. */
  hex(): string;
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const utf8 = new TextEncoder();

class JsSha256 implements Sha256 {
  readonly #h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  readonly #w = new Uint32Array(64);
  /** The bytes of a block not yet complete. */
  readonly #block = new Uint8Array(64);
  #filled = 0;
  #length = 0;
  #done = false;

  update(data: Uint8Array | string): Sha256 {
    if (this.#done) throw new Error('sha256: update() after hex()');
    const bytes = typeof data === 'string' ? utf8.encode(data) : data;
    this.#length += bytes.byteLength;
    let at = 0;
    if (this.#filled > 0) {
      const n = Math.min(64 - this.#filled, bytes.byteLength);
      this.#block.set(bytes.subarray(0, n), this.#filled);
      this.#filled += n;
      at = n;
      if (this.#filled < 64) return this;
      this.#compress(this.#block, 0);
      this.#filled = 0;
    }
    for (; at + 64 <= bytes.byteLength; at += 64) this.#compress(bytes, at);
    this.#block.set(bytes.subarray(at), 0);
    this.#filled = bytes.byteLength - at;
    return this;
  }

  hex(): string {
    if (this.#done) throw new Error('sha256: hex() called twice');
    const bits = this.#length * 8;
    // Padding: 0x80, zeros to 56 mod 64, then the bit length as a 64-bit big-endian integer.
    const pad = new Uint8Array((this.#filled < 56 ? 56 : 120) - this.#filled + 8);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(pad.length - 4, bits >>> 0);
    this.update(pad);
    this.#done = true;
    let out = '';
    for (const v of this.#h) out += v.toString(16).padStart(8, '0');
    return out;
  }

  #compress(bytes: Uint8Array, at: number): void {
    const w = this.#w;
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4;
      w[i] = (bytes[j]! << 24) | (bytes[j + 1]! << 16) | (bytes[j + 2]! << 8) | bytes[j + 3]!;
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
    }
    const h = this.#h;
    let a = h[0]!;
    let b = h[1]!;
    let c = h[2]!;
    let d = h[3]!;
    let e = h[4]!;
    let f = h[5]!;
    let g = h[6]!;
    let hh = h[7]!;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + K[i]! + w[i]!) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0]! + a) | 0;
    h[1] = (h[1]! + b) | 0;
    h[2] = (h[2]! + c) | 0;
    h[3] = (h[3]! + d) | 0;
    h[4] = (h[4]! + e) | 0;
    h[5] = (h[5]! + f) | 0;
    h[6] = (h[6]! + g) | 0;
    h[7] = (h[7]! + hh) | 0;
  }
}

/** A SHA-256 in plain JavaScript (what the browser's `createSha256` is). */
export function jsSha256(): Sha256 {
  return new JsSha256();
}
