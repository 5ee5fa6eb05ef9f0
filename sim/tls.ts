// Per-run X.509 material for the simulators, written by hand in DER so that the compiled
// binary (`image-refresh demo`) needs neither openssl nor an npm package. Only node:crypto.
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from "node:crypto";
import { isIP } from "node:net";

export interface TlsMaterial {
  caPem: string;
  certPem: string;
  keyPem: string;
}

// --- minimal DER writer -------------------------------------------------------------------

function tlv(tag: number, body: Uint8Array): Buffer {
  const n = body.length;
  let len: number[];
  if (n < 0x80) len = [n];
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
    len = [0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from([tag, ...len]), body]);
}

const seq = (...items: Uint8Array[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Uint8Array[]): Buffer => tlv(0x31, Buffer.concat(items));
const octets = (b: Uint8Array): Buffer => tlv(0x04, b);
const bitString = (b: Uint8Array, unusedBits = 0): Buffer =>
  tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), b]));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, "utf8"));
const explicit = (n: number, inner: Uint8Array): Buffer => tlv(0xa0 + n, inner);

function integer(b: Uint8Array): Buffer {
  // DER integers are signed: a leading 1 bit needs a 0x00 pad to stay positive.
  const body = (b[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : Buffer.from(b);
  return tlv(0x02, body);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split(".").map(Number);
  const out: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  // RFC 5280: UTCTime up to 2049, GeneralizedTime from 2050; both in Z with seconds.
  const iso = d.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${iso}Z`));
}

// --- minimal DER reader: just enough to lift the subject out of a CA certificate ----------

function readTlv(buf: Buffer, at: number): { start: number; end: number; next: number } {
  const first = buf[at + 1] ?? 0;
  let len = first;
  let head = 2;
  if (first & 0x80) {
    len = 0;
    for (let i = 0; i < (first & 0x7f); i++) len = len * 256 + (buf[at + 2 + i] ?? 0);
    head += first & 0x7f;
  }
  return { start: at, end: at + head + len, next: at + head };
}

function subjectOf(certDer: Buffer): Buffer {
  const tbs = readTlv(certDer, readTlv(certDer, 0).next);
  let at = tbs.next;
  if (certDer[at] === 0xa0) at = readTlv(certDer, at).end; // [0] version
  for (let i = 0; i < 4; i++) at = readTlv(certDer, at).end; // serial, sigAlg, issuer, validity
  const subject = readTlv(certDer, at);
  return certDer.subarray(subject.start, subject.end);
}

// --- certificate assembly -------------------------------------------------------------------

const ECDSA_SHA256 = seq(oid("1.2.840.10045.4.3.2"));
const name = (cn: string): Buffer => seq(set(seq(oid("2.5.4.3"), utf8(cn))));
const ext = (id: string, critical: boolean, value: Buffer): Buffer =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
const spkiDer = (key: KeyObject): Buffer => key.export({ type: "spki", format: "der" });
// Key identifiers only need to be stable per key; a SHA-1 of the SPKI is what most tools do.
const keyId = (key: KeyObject): Buffer => createHash("sha1").update(spkiDer(key)).digest();
const toPem = (label: string, der: Buffer): string =>
  `-----BEGIN ${label}-----\n${der
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .replace(/\n$/, "")}\n-----END ${label}-----\n`;

interface CertSpec {
  subject: Buffer;
  issuer: Buffer;
  publicKey: KeyObject;
  signingKey: KeyObject;
  extensions: Buffer[];
}

function buildCert(spec: CertSpec): string {
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive and non-zero: Go rejects negative serials
  const now = Date.now();
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(serial),
    ECDSA_SHA256,
    spec.issuer,
    seq(time(new Date(now - 3600_000)), time(new Date(now + 86_400_000))),
    spec.subject,
    spkiDer(spec.publicKey),
    explicit(3, seq(...spec.extensions)),
  );
  const signature = sign("sha256", tbs, spec.signingKey); // DER-encoded ECDSA signature
  return toPem("CERTIFICATE", seq(tbs, ECDSA_SHA256, bitString(signature)));
}

const newKey = () => generateKeyPairSync("ec", { namedCurve: "P-256" });
const keyPem = (k: KeyObject): string => k.export({ type: "pkcs8", format: "pem" }).toString();

function sanEntry(host: string): Buffer {
  const family = isIP(host);
  if (family === 4) return tlv(0x87, Buffer.from(host.split(".").map(Number)));
  if (family === 6) return tlv(0x87, ipv6Bytes(host));
  return tlv(0x82, Buffer.from(host, "ascii"));
}

function ipv6Bytes(host: string): Buffer {
  const [head = "", tail = ""] = host.split("::");
  const h = head ? head.split(":") : [];
  const t = host.includes("::") && tail ? tail.split(":") : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

function newCa(): { caPem: string; caKeyPem: string } {
  const { publicKey, privateKey } = newKey();
  const subject = name(`image-refresh simulator CA ${randomBytes(4).toString("hex")}`);
  const caPem = buildCert({
    subject,
    issuer: subject,
    publicKey,
    signingKey: privateKey,
    extensions: [
      ext("2.5.29.19", true, seq(bool(true))), // basicConstraints CA:true
      ext("2.5.29.15", true, bitString(Buffer.from([0x06]), 1)), // keyCertSign | cRLSign
      ext("2.5.29.14", false, octets(keyId(publicKey))),
    ],
  });
  return { caPem, caKeyPem: keyPem(privateKey) };
}

function issueLeaf(
  ca: { caPem: string; caKeyPem: string },
  cn: string,
  opts: { hosts: string[]; usage: "server" | "client" },
): { certPem: string; keyPem: string } {
  const caCert = new X509Certificate(ca.caPem);
  const { publicKey, privateKey } = newKey();
  const usageOid = opts.usage === "server" ? "1.3.6.1.5.5.7.3.1" : "1.3.6.1.5.5.7.3.2";
  const extensions = [
    ext("2.5.29.19", true, seq()), // basicConstraints CA:false
    ext("2.5.29.15", true, bitString(Buffer.from([0x80]), 7)), // digitalSignature
    ext("2.5.29.37", false, seq(oid(usageOid))),
    ext("2.5.29.35", false, seq(tlv(0x80, keyId(caCert.publicKey)))),
  ];
  if (opts.hosts.length > 0) extensions.push(ext("2.5.29.17", false, seq(...opts.hosts.map(sanEntry))));
  const certPem = buildCert({
    subject: name(cn),
    issuer: subjectOf(caCert.raw),
    publicKey,
    signingKey: createPrivateKey(ca.caKeyPem),
    extensions,
  });
  return { certPem, keyPem: keyPem(privateKey) };
}

/** A CA (new, or the one given) and a server certificate for `hosts`, valid from an hour ago for a day. */
export function generateTls(opts?: {
  hosts?: string[];
  ca?: { certPem: string; keyPem: string };
}): TlsMaterial & { caKeyPem: string } {
  const ca = opts?.ca ? { caPem: opts.ca.certPem, caKeyPem: opts.ca.keyPem } : newCa();
  const leaf = issueLeaf(ca, "image-refresh-simulator", {
    hosts: opts?.hosts ?? ["127.0.0.1", "localhost"],
    usage: "server",
  });
  return { caPem: ca.caPem, caKeyPem: ca.caKeyPem, certPem: leaf.certPem, keyPem: leaf.keyPem };
}

/** A client certificate (extKeyUsage clientAuth) signed by `ca`, for mutual-TLS kubeconfigs. */
export function generateClientCert(
  ca: { caPem: string; caKeyPem: string },
  commonName: string,
): { certPem: string; keyPem: string } {
  return issueLeaf(ca, commonName, { hosts: [], usage: "client" });
}
