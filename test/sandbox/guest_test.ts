// The sandbox's pure parts, in-thread: the import check, value formatting, global stripping,
// the wire codec for the Deno subprocess, UTF-8 cutting, and the browser Worker's source.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  deleteEverywhere,
  findDynamicImport,
  formatArgs,
  GUEST_FUNCTIONS,
  sandboxStripList,
} from "../../src/sandbox/guest.ts";
import { workerSource } from "../../src/sandbox/host_browser.ts";
import { utf8Length, utf8Prefix } from "../../src/sandbox/run.ts";
import { decodeWire, encodeWire } from "../../src/sandbox/wire.ts";

Deno.test("findDynamicImport: finds import( and import.meta however written, ignores look-alikes", () => {
  const hits: [string, number][] = [
    ['import("x")', 1],
    ["a;\nb;\nawait import ('x')", 3],
    ["import/* c */(u)", 1],
    ["import // c\n(u)", 1],
    ["x = import.meta.url", 1],
    ["f(import\n\t(u))", 1],
  ];
  for (const [code, line] of hits) assertEquals(findDynamicImport(code), line, code);
  for (
    const code of [
      "important(1)",
      "obj.import(1)",
      "reimport(x)",
      "const imports = 1",
      "x.import.meta",
    ]
  ) {
    assertEquals(findDynamicImport(code), 0, code);
  }
});

Deno.test("formatArgs: Node-like, single line, deterministic", () => {
  assertEquals(formatArgs(["s", 1, [1, "a"], { b: [] }]), "s 1 [ 1, 'a' ] { b: [] }");
  assertEquals(formatArgs(["%s=%i%%", "x", 4.9]), "x=4%");
  assertEquals(formatArgs(["it's\n"]), "it's\n");
  assertEquals(formatArgs([["it's"]]), "[ 'it\\'s' ]");
  assertEquals(formatArgs([Object.create(null)]), "[Object: null prototype] {}");
  assertEquals(formatArgs([new Date(0)]), "1970-01-01T00:00:00.000Z");
  assertEquals(
    formatArgs([Array.from({ length: 102 }, () => 0)]).endsWith("0, ... 2 more items ]"),
    true,
  );
  assertEquals(formatArgs([() => 1]), "[Function (anonymous)]");
  assertEquals(formatArgs([]), "");
});

Deno.test("deleteEverywhere: removes names from the object and its whole prototype chain", () => {
  const proto = { fetch: () => 1, keep: 1 };
  const obj = Object.create(proto) as Record<string, unknown>;
  obj.fetch = () => 2;
  Object.defineProperty(obj, "fixed", { value: () => 3, writable: true, configurable: false });
  deleteEverywhere(obj, ["fetch", "fixed"]);
  assert(!("fetch" in obj), "own and inherited fetch must be gone");
  assertEquals(obj.fixed, undefined, "a non-configurable property must be neutralised");
  assertEquals(obj.keep, 1);
  const list = sandboxStripList();
  for (
    const name of [
      "fetch",
      "WebSocket",
      "Worker",
      "Deno",
      "importScripts",
      "postMessage",
      "indexedDB",
    ]
  ) {
    assert(list.globals.includes(name), `${name} must be stripped`);
  }
  assert(list.navigator.includes("gpu"), "navigator.gpu must be stripped");
});

Deno.test("wire: structured-clone data survives the trip to the subprocess", () => {
  const value = {
    n: [1, -0, NaN, Infinity, -Infinity, 1e-300],
    big: 2n ** 70n,
    u: undefined,
    s: "é\u0000\n",
    d: new Date(12345),
    re: /a+b/gi,
    m: new Map<unknown, unknown>([[1, { x: [2] }], ["k", new Set([3])]]),
    f32: new Float32Array([1.5, -2]),
    u8: new Uint8Array([0, 255]).subarray(1),
    ab: new Uint8Array([7, 8]).buffer,
    tagged: { $w: "undef", v: 1 },
    ["__proto__"]: 5,
  };
  const back = decodeWire(encodeWire(value)) as typeof value;
  assertEquals(
    Object.is(back.n[1], -0) && Number.isNaN(back.n[2]) && back.n[4] === -Infinity,
    true,
  );
  assert(back.big === 2n ** 70n, "bigint");
  assert("u" in back && back.u === undefined, "undefined must survive");
  assertEquals(back.s, "é\u0000\n");
  assertEquals(back.d.getTime(), 12345);
  assertEquals(String(back.re), "/a+b/gi");
  assertEquals([...back.m.keys()], [1, "k"]);
  assert((back.m.get("k") as Set<number>).has(3), "nested Set");
  assert(
    back.f32 instanceof Float32Array && back.f32[0] === 1.5 && back.f32[1] === -2,
    "Float32Array",
  );
  assert(
    back.u8 instanceof Uint8Array && back.u8.length === 1 && back.u8[0] === 255,
    "view offsets",
  );
  assertEquals([...new Uint8Array(back.ab)], [7, 8]);
  assertEquals(back.tagged, { $w: "undef", v: 1 });
  assert(
    Object.getPrototypeOf(back) === Object.prototype,
    "a __proto__ key must not set the prototype",
  );
  assertEquals(Object.getOwnPropertyDescriptor(back, "__proto__")?.value, 5);
  assertThrows(() => encodeWire({ f: () => 1 }, "globals"), "WireError", 'globals["f"]');
  const cyc: Record<string, unknown> = {};
  cyc.self = cyc;
  assertThrows(() => encodeWire(cyc), "WireError", "cycles");
});

Deno.test("utf8Length/utf8Prefix: count and cut by UTF-8 bytes, never inside a character", () => {
  assertEquals(utf8Length("aé€😀"), 1 + 2 + 3 + 4);
  assertEquals(utf8Length(new TextDecoder().decode(new TextEncoder().encode("x😀y"))), 6);
  assertEquals(utf8Prefix("aé€😀", 6), "aé€");
  assertEquals(utf8Prefix("aé€😀", 9), "aé€");
  assertEquals(utf8Prefix("aé€😀", 10), "aé€😀");
  assertEquals(utf8Prefix("éé", 3), "é");
});

Deno.test("workerSource: the browser Worker's source compiles and defines every guest function", () => {
  const src = workerSource();
  new Function(src); // compiles only: running it would strip this very host
  for (const f of GUEST_FUNCTIONS) assert(src.includes(`var ${f.name} = (`), `${f.name} missing`);
  assert(
    !/:\s*GuestGlobal|interface |as unknown/.test(src),
    "TypeScript syntax left in the source",
  );
  assert(src.trimEnd().endsWith("workerBootstrap(self);"), "the bootstrap must run last");
});
