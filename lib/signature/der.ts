// An ECDSA signature as cosign writes it (ASN.1 DER: SEQUENCE { INTEGER r, INTEGER s }) turned
// into the fixed-width r || s that WebCrypto's ECDSA verify takes (IEEE P1363). This is encoding,
// not cryptography: a few lines of DER reading instead of an ASN.1 library, strict about what it
// accepts (definite short or one-byte lengths, no trailing bytes, integers that fit the curve).

/** r || s, each left-padded to `size` bytes (32 for P-256); undefined when `der` is not one. */
export function ecdsaDerToRaw(der: Uint8Array<ArrayBuffer>, size = 32): Uint8Array<ArrayBuffer> | undefined {
  const seq = readTlv(der, 0, 0x30);
  if (!seq || seq.end !== der.length) return undefined;
  const r = readTlv(der, seq.start, 0x02);
  const s = r && readTlv(der, r.end, 0x02);
  if (!r || !s || s.end !== seq.end) return undefined;
  const out = new Uint8Array(size * 2);
  for (const [i, part] of [r, s].entries()) {
    const value = integerBytes(der.subarray(part.start, part.end), size);
    if (!value) return undefined;
    out.set(value, size * (i + 1) - value.length);
  }
  return out;
}

type Tlv = { start: number; end: number };

/** One tag-length-value at `at` with the expected tag: where its value starts and ends. */
function readTlv(der: Uint8Array<ArrayBuffer>, at: number, tag: number): Tlv | undefined {
  if (der[at] !== tag) return undefined;
  const first = der[at + 1];
  if (first === undefined) return undefined;
  let start = at + 2;
  let length = first;
  if (first === 0x81) {
    length = der[at + 2] ?? -1;
    start = at + 3;
    if (length < 0x80) return undefined; // not the shortest form: not DER
  } else if (first > 0x80) return undefined;
  const end = start + length;
  return length > 0 && end <= der.length ? { start, end } : undefined;
}

/** A positive INTEGER's magnitude without its sign byte; undefined if negative or too wide. */
function integerBytes(value: Uint8Array<ArrayBuffer>, size: number): Uint8Array<ArrayBuffer> | undefined {
  if ((value[0] as number) & 0x80) return undefined;
  let i = 0;
  while (i < value.length - 1 && value[i] === 0) i++;
  const magnitude = value.subarray(i);
  return magnitude.length <= size ? magnitude : undefined;
}
