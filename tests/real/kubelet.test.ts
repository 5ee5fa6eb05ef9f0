// The fake kubelet's pure piece against what the real node showed on the same stories: a crash
// restarts at once and is Ready again before CrashLoopBackOff; a pull failure starts as
// ContainerCreating.
import { describe, expect, test } from "bun:test";
import { readiness } from "./kubelet.ts";

const t = { startMs: 300, slowMs: 5000, upMs: 1000, downMs: 1000 };
const at = (build: Parameters<typeof readiness>[0], ms: number[]) =>
  ms.map((m) => {
    const s = readiness(build, m, t);
    return `${s.ready ? "Ready" : "NotReady"} ${s.restarts}${s.waiting ? ` ${s.waiting}` : ""}`;
  });

describe("the fake kubelet's pod states", () => {
  test("crashing after warm-up: restarted at once, Ready again with one restart, then CrashLoopBackOff on a doubling back-off", () => {
    // Ready at 300, crash at 2300, Ready again at 2600, second crash at 3600; back-off 1 s, 2 s, 4 s.
    expect(at({ crashAfterMs: 2000 }, [100, 400, 2400, 2700, 3700, 4700, 6700, 10_700])).toEqual([
      "NotReady 0",
      "Ready 0",
      "NotReady 0",
      "Ready 1",
      "NotReady 1 CrashLoopBackOff",
      "NotReady 2 CrashLoopBackOff",
      "NotReady 3 CrashLoopBackOff",
      "NotReady 4 CrashLoopBackOff",
    ]);
  });

  test("an image that cannot be pulled: ContainerCreating, then ErrImagePull and ImagePullBackOff in turn", () => {
    expect(at("pull", [100, 400, 1400, 2400])).toEqual([
      "NotReady 0 ContainerCreating",
      "NotReady 0 ErrImagePull",
      "NotReady 0 ImagePullBackOff",
      "NotReady 0 ErrImagePull",
    ]);
  });
});
