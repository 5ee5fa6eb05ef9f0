// The API server's CPU as section 9 reads it from /proc/<pid>/stat: fields 14 and 15 counted
// after the command's closing parenthesis, since a command name may hold spaces and parentheses.
import { expect, test } from "bun:test";
import { cpuMsOf } from "./apiserver.ts";

const rest = (utime: number, stime: number) =>
  `S 1 1 1 0 -1 4194560 9 0 0 0 ${utime} ${stime} 7 9 20 0 12 0 100 0 0`;

test.each([
  { name: "a plain command", stat: `42 (kube-apiserver) ${rest(150, 30)}`, hz: 100, ms: 1800 },
  { name: "spaces and parentheses in the command", stat: `42 (a (b) c) ${rest(150, 30)}`, hz: 100, ms: 1800 },
  { name: "another clock rate", stat: `42 (kube-apiserver) ${rest(150, 30)}`, hz: 250, ms: 720 },
  { name: "children's time is not the server's", stat: `42 (x) ${rest(0, 0)}`, hz: 100, ms: 0 },
])("cpuMsOf: $name", ({ stat, hz, ms }) => {
  expect(cpuMsOf(stat, hz)).toBe(ms);
});
