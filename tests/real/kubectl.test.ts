// The filter the real tier's helm runs are judged by: the one line client-go logs when --wait's
// own watch is cancelled is dropped; any other line on stderr is a problem and stays.
import { describe, expect, test } from "bun:test";
import { stderrProblems } from "./kubectl.ts";

// The line Helm 4 printed after an install that exited 0 (CI, client-go v0.37.2).
const CANCELLED =
  'I1202 21:25:33.412086   23412 reflector.go:664] "Warning: watch ended with error" ' +
  'reflector="k8s.io/client-go@v0.37.2/tools/cache/reflector.go:343" type="batch/v1, Kind=CronJob" ' +
  'err="an error on the server (\\"unable to decode an event from the watch stream: context canceled\\") ' +
  'has prevented the request from succeeding"';

describe("stderrProblems", () => {
  test("nothing, or only the cancelled watch, is no problem", () => {
    expect(stderrProblems("")).toEqual([]);
    expect(stderrProblems(`${CANCELLED}\n`)).toEqual([]);
  });

  test("every other line stays, beside the cancelled watch or alone", () => {
    const failed = "Error: INSTALLATION FAILED: context deadline exceeded";
    expect(stderrProblems(`${CANCELLED}\n${failed}\n`)).toEqual([failed]);
    // The same reflector warning for another cause is a problem: only a cancelled watch is expected.
    const forbidden = CANCELLED.replace("context canceled", "forbidden");
    expect(stderrProblems(forbidden)).toEqual([forbidden]);
    // A klog line of another kind, and a warning from the API server, are kept.
    const other = 'E1202 21:25:33.412086   23412 reflector.go:664] "Unhandled Error" err="context canceled"';
    expect(stderrProblems(other)).toEqual([other]);
    const warning = "Warning: spec.template.spec.containers[0].image: unknown field";
    expect(stderrProblems(warning)).toEqual([warning]);
  });
});
