// Base64 of UTF-8 text without Node's Buffer: in Bun, the first use of Buffer costs a tick about
// 0.2 ms (it builds the node:buffer module), on its way to its first request when the kubeconfig
// carries certificate-authority-data. The results are Buffer's (lib/base64.test.ts holds them to
// it); text that Buffer would decode leniently (characters outside the alphabet, a pad in the
// middle) is decoded by Buffer itself, so nothing it accepted is refused here.

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const encoder = new TextEncoder();

/** `Buffer.from(data, "base64").toString("utf8")`. */
export function decodeBase64Utf8(data: string): string {
  try {
    return decoder.decode(Uint8Array.fromBase64(data));
  } catch {
    return Buffer.from(data, "base64").toString("utf8");
  }
}

/** `Buffer.from(text, "utf8").toString("base64")`. */
export function encodeBase64Utf8(text: string): string {
  return encoder.encode(text).toBase64();
}
