import { describe, expect, test } from "bun:test";
import { ecdsaDerToRaw } from "./der.ts";

const hex = (s: string) => Uint8Array.fromHex(s.replace(/\s+/g, ""));
const r32 = "11".repeat(32);
const s32 = "22".repeat(32);

describe("ecdsaDerToRaw", () => {
  const cases: [string, string, string | undefined][] = [
    ["plain 32-byte r and s", `3044 0220${r32} 0220${s32}`, r32 + s32],
    [
      "a high bit gets a 0x00 sign byte, dropped",
      `3046 022100${"aa".repeat(32)} 022100${"bb".repeat(32)}`,
      "aa".repeat(32) + "bb".repeat(32),
    ],
    ["short integers are left-padded", "3006 020101 020102", `${"00".repeat(31)}01${"00".repeat(31)}02`],
    ["trailing bytes", `3044 0220${r32} 0220${s32} 00`, undefined],
    ["sequence length too long", `3045 0220${r32} 0220${s32}`, undefined],
    ["not a sequence", `3144 0220${r32} 0220${s32}`, undefined],
    ["negative integer", "3006 020181 020102", undefined],
    ["integer wider than the curve", `3047 022101${"11".repeat(32)} 0220${s32}`, undefined],
    ["one integer only", `3022 0220${r32}`, undefined],
    ["empty", "", undefined],
    ["long-form length that is not minimal", "308106 020101 020102", undefined],
  ];
  for (const [name, der, raw] of cases)
    test(name, () => {
      const out = ecdsaDerToRaw(hex(der));
      expect(out === undefined ? undefined : out.toHex()).toBe(raw);
    });
});
