// Signatures written into a simulated registry's repository as the signers' tools push them: a
// MapRegistry (what tests/support/signing.ts signs into) that also stores each blob and manifest
// in the simulator, so the compiled binary finds them over HTTP.
import type { SimRegistry } from "../../sim/registry.ts";
import { bytes, MapRegistry } from "./signing.ts";

export class SimSink extends MapRegistry {
  constructor(
    readonly sim: SimRegistry,
    readonly repository: string,
  ) {
    super();
  }
  override put(path: string, body: Uint8Array<ArrayBuffer> | string, status = 200): void {
    super.put(path, body, status);
    const data = typeof body === "string" ? bytes(body) : body;
    const [kind, ref] = [path.slice(0, path.indexOf("/")), path.slice(path.indexOf("/") + 1)];
    if (kind === "blobs") this.sim.putBlob(this.repository, data);
    if (kind === "manifests") {
      const mediaType = (JSON.parse(new TextDecoder().decode(data)) as { mediaType: string }).mediaType;
      this.sim.putManifest(this.repository, data, mediaType, ref.startsWith("sha256:") ? undefined : ref);
    }
  }
}
