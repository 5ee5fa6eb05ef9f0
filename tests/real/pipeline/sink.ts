// Reads the trace sink's output: the Collector's debug exporter (verbosity detailed) prints each
// span it received over OTLP/gRPC as text (exporter/debugexporter/internal/otlptext). Only what
// the trace checks need: ids, name, the resource's instance id, event names, links.

export interface SinkSpan {
  traceId: string;
  spanId: string;
  parentId: string;
  name: string;
  instance: string;
  attributes: Record<string, string>;
  events: string[];
  links: Array<{ traceId: string; spanId: string }>;
}

const field = (block: string, name: string) =>
  new RegExp(`^\\s*${name}\\s*: (.*)$`, "m").exec(block)?.[1]?.trim() ?? "";

/** `-> key: Str(value)` / `Int(3)` lines of a section, up to the next section header. */
function attributes(section: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of section.matchAll(/^\s*-> ([\w.-]+): \w+\((.*)\)$/gm)) out[m[1] as string] = m[2] as string;
  return out;
}

/** A span's text cut at its section headers: the fields, then Attributes, Events, Links. */
function sections(block: string): Record<string, string> {
  const parts = block.split(/^(Attributes|Events|Links):$/m);
  const out: Record<string, string> = { fields: parts[0] ?? "" };
  for (let i = 1; i < parts.length; i += 2) out[parts[i] as string] = parts[i + 1] ?? "";
  return out;
}

function span(block: string, instance: string): SinkSpan {
  const s = sections(block);
  return {
    traceId: field(s.fields ?? "", "Trace ID"),
    spanId: field(s.fields ?? "", "ID"),
    parentId: field(s.fields ?? "", "Parent ID"),
    name: field(s.fields ?? "", "Name"),
    instance,
    attributes: attributes(s.Attributes ?? ""),
    events: [...(s.Events ?? "").matchAll(/^\s*-> Name: (.*)$/gm)].map((m) => (m[1] as string).trim()),
    links: [...(s.Links ?? "").matchAll(/-> Trace ID: (\w+)\s*\n\s*-> ID: (\w+)/g)].map((m) => ({
      traceId: m[1] as string,
      spanId: m[2] as string,
    })),
  };
}

/** Every span the sink printed, with the service.instance.id of its resource. */
export function sinkSpans(text: string): SinkSpan[] {
  const out: SinkSpan[] = [];
  for (const rs of text.split(/^ResourceSpans #\d+$/m).slice(1)) {
    const instance = /-> service\.instance\.id: Str\((.*)\)/.exec(rs)?.[1] ?? "";
    for (const block of rs.split(/^Span #\d+$/m).slice(1)) out.push(span(block, instance));
  }
  return out;
}
