// A minimal protobuf wire-format reader for the OTLP export requests, turning them into the
// same shape as OTLP/JSON so the collector normalizes one format. Written by hand because the
// SDK ships encoders only, and a protobuf library would be a dependency for tests alone.
// Field numbers are those of opentelemetry-proto (trace.proto, metrics.proto, common.proto).

type Json = Record<string, unknown>;
/** Decoded fields by number; varints as bigint, everything else as raw bytes. */
type Fields = Map<number, Array<bigint | Uint8Array>>;

function readVarint(buf: Uint8Array, at: { pos: number }): bigint {
  let result = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (at.pos >= buf.length) throw new Error("protobuf: truncated varint");
    const b = buf[at.pos++] as number;
    result |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) return result;
  }
}

export function fields(buf: Uint8Array): Fields {
  const out: Fields = new Map();
  const at = { pos: 0 };
  while (at.pos < buf.length) {
    const tag = Number(readVarint(buf, at));
    const [no, wire] = [tag >>> 3, tag & 7];
    let value: bigint | Uint8Array;
    if (wire === 0) value = readVarint(buf, at);
    else {
      const len = wire === 1 ? 8 : wire === 5 ? 4 : wire === 2 ? Number(readVarint(buf, at)) : -1;
      if (len < 0 || at.pos + len > buf.length) throw new Error(`protobuf: bad wire type ${wire} or length`);
      value = buf.subarray(at.pos, at.pos + len);
      at.pos += len;
    }
    out.set(no, [...(out.get(no) ?? []), value]);
  }
  return out;
}

const bytesOf = (f: Fields, no: number) =>
  f.get(no)?.filter((v): v is Uint8Array => v instanceof Uint8Array) ?? [];
const msgs = (f: Fields, no: number) => bytesOf(f, no).map(fields);
const first = (f: Fields, no: number) => f.get(no)?.[0];
const str = (f: Fields, no: number) => new TextDecoder().decode(bytesOf(f, no)[0] ?? new Uint8Array());
const hex = (f: Fields, no: number) => Buffer.from(bytesOf(f, no)[0] ?? new Uint8Array()).toString("hex");
const varint = (f: Fields, no: number) => Number((first(f, no) as bigint | undefined) ?? 0n);
const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const double = (f: Fields, no: number) => {
  const b = bytesOf(f, no)[0];
  return b ? view(b).getFloat64(0, true) : undefined;
};
const fixed64 = (b: Uint8Array) => Number(view(b).getBigUint64(0, true));

/** Repeated fixed64/double: packed (one length-delimited run) or not, as proto3 allows both. */
function packed(f: Fields, no: number, read: (v: DataView, at: number) => number): number[] {
  return bytesOf(f, no).flatMap((b) => Array.from({ length: b.length / 8 }, (_, i) => read(view(b), i * 8)));
}

function anyValue(f: Fields): Json {
  if (f.has(1)) return { stringValue: str(f, 1) };
  if (f.has(2)) return { boolValue: varint(f, 2) !== 0 };
  if (f.has(3)) return { intValue: BigInt.asIntN(64, first(f, 3) as bigint).toString() };
  if (f.has(4)) return { doubleValue: double(f, 4) };
  if (f.has(5)) return { arrayValue: { values: msgs(msgs(f, 5)[0] ?? new Map(), 1).map(anyValue) } };
  if (f.has(6)) return { kvlistValue: { values: attributes(msgs(f, 6)[0] ?? new Map(), 1) } };
  return {};
}

function attributes(f: Fields, no: number): Json[] {
  return msgs(f, no).map((kv) => ({ key: str(kv, 1), value: anyValue(msgs(kv, 2)[0] ?? new Map()) }));
}

const resource = (f: Fields) => ({ attributes: attributes(f, 1) });

function span(s: Fields): Json {
  const status = msgs(s, 15)[0] ?? new Map();
  return {
    traceId: hex(s, 1),
    spanId: hex(s, 2),
    parentSpanId: hex(s, 4),
    name: str(s, 5),
    kind: varint(s, 6),
    attributes: attributes(s, 9),
    events: msgs(s, 11).map((e) => ({ name: str(e, 2), attributes: attributes(e, 3) })),
    links: msgs(s, 13).map((l) => ({ traceId: hex(l, 1), spanId: hex(l, 2), attributes: attributes(l, 4) })),
    status: { code: varint(status, 3), message: str(status, 2) },
  };
}

export function decodeTraces(body: Uint8Array): Json {
  return {
    resourceSpans: msgs(fields(body), 1).map((rs) => ({
      resource: resource(msgs(rs, 1)[0] ?? new Map()),
      scopeSpans: msgs(rs, 2).map((ss) => ({ spans: msgs(ss, 2).map(span) })),
    })),
  };
}

function numberPoint(p: Fields): Json {
  const asInt = first(p, 6);
  return {
    attributes: attributes(p, 7),
    ...(asInt instanceof Uint8Array
      ? { asInt: view(asInt).getBigInt64(0, true).toString() }
      : { asDouble: double(p, 4) }),
  };
}

function histogramPoint(p: Fields): Json {
  return {
    attributes: attributes(p, 9),
    count: fixed64((bytesOf(p, 4)[0] as Uint8Array | undefined) ?? new Uint8Array(8)),
    sum: double(p, 5),
    bucketCounts: packed(p, 6, (v, at) => Number(v.getBigUint64(at, true))),
    explicitBounds: packed(p, 7, (v, at) => v.getFloat64(at, true)),
  };
}

function metric(m: Fields): Json {
  const out: Json = { name: str(m, 1), unit: str(m, 3) };
  const gauge = msgs(m, 5)[0];
  const sum = msgs(m, 7)[0];
  const histogram = msgs(m, 9)[0];
  if (gauge) out.gauge = { dataPoints: msgs(gauge, 1).map(numberPoint) };
  if (sum)
    out.sum = {
      dataPoints: msgs(sum, 1).map(numberPoint),
      aggregationTemporality: varint(sum, 2),
      isMonotonic: varint(sum, 3) !== 0,
    };
  if (histogram)
    out.histogram = {
      dataPoints: msgs(histogram, 1).map(histogramPoint),
      aggregationTemporality: varint(histogram, 2),
    };
  return out;
}

export function decodeMetrics(body: Uint8Array): Json {
  return {
    resourceMetrics: msgs(fields(body), 1).map((rm) => ({
      resource: resource(msgs(rm, 1)[0] ?? new Map()),
      scopeMetrics: msgs(rm, 2).map((sm) => ({ metrics: msgs(sm, 2).map(metric) })),
    })),
  };
}
