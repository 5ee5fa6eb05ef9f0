// DSSE (github.com/secure-systems-lab/dsse, protocol.md): a signature is over the
// pre-authentication encoding of the payload type and the payload, never over the payload alone,
// so a signed payload cannot be read as one of another type.
const encoder = new TextEncoder();

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body; LEN in ASCII decimal bytes. */
export function pae(payloadType: string, payload: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  const type = encoder.encode(payloadType);
  const head = encoder.encode(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `);
  const out = new Uint8Array(head.length + payload.length);
  out.set(head);
  out.set(payload, head.length);
  return out;
}
