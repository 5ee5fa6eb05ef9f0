// The parts of the `yaml` package the diagnostics use: required (never imported) by lib/yaml.ts,
// so the bundle puts them in a chunk of their own, loaded on the first diagnosis. Requiring
// `yaml` itself would bring the whole package into the start-up chunks.
export type { Node } from "yaml";
export { isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
