import { describe, expect, test } from "bun:test";
import { checkHostAndOrigin } from "./check-host.ts";

const check = (headers: Record<string, string>, listen = "127.0.0.1") =>
  checkHostAndOrigin(new Headers(headers), listen);

describe("checkHostAndOrigin", () => {
  test("loopback names and the listen host pass, with or without a port", () => {
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787", "LOCALHOST", "127.0.0.1"])
      expect(check({ host })).toBeUndefined();
    expect(check({ host: "10.1.2.3:8787" }, "10.1.2.3")).toBeUndefined();
    expect(check({ host: "robot-sidecar:8787" }, "robot-sidecar")).toBeUndefined();
  });

  test("other names and a missing Host are refused (DNS rebinding)", () => {
    expect(check({ host: "evil.example:8787" })).toContain("DNS rebinding");
    expect(check({ host: "127.0.0.1.nip.io:8787" })).toContain("Host");
    expect(check({})).toContain("Host");
    expect(check({ host: "10.1.2.3:8787" })).toContain("Host");
  });

  test("a wildcard listen address accepts IP literals but not DNS names", () => {
    expect(check({ host: "10.1.2.3:8787" }, "0.0.0.0")).toBeUndefined();
    expect(check({ host: "[fd00::1]:8787" }, "::")).toBeUndefined();
    expect(check({ host: "attacker.example:8787" }, "0.0.0.0")).toContain("Host");
  });

  test("an Origin, when present, must name this machine too", () => {
    expect(check({ host: "127.0.0.1:1", origin: "http://localhost:3000" })).toBeUndefined();
    expect(check({ host: "127.0.0.1:1", origin: "https://evil.example" })).toContain("Origin");
    expect(check({ host: "127.0.0.1:1", origin: "null" })).toContain("Origin");
  });
});
