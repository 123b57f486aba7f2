import { describe, expect, test } from "bun:test";
import { backoffMs } from "../src/api";
import {
  type LogFact,
  parseCrashReport,
  parseList,
  parseLogLine,
  parsePaperTps,
  parseTickQuery,
  parseXmx,
  splitLogLine,
  tellraw,
} from "../src/parse";
import { offlineUuid } from "../src/profiles";
import fixture from "./fixtures/log-lines.json";

interface FixtureLine {
  line: string;
  expect: LogFact | null | "unrecognised";
  at?: string;
}
const groups = fixture.groups as { family: string; source: string; constructed?: boolean; lines: FixtureLine[] }[];
// Late enough that no time of day in the fixture lies ahead of it: undated lines fall on this day.
const NOW = new Date(2026, 10, 25, 23, 59, 59);
const p2 = (n: number) => String(n).padStart(2, "0");
const local = (d: Date, withDay: boolean) =>
  `${withDay ? `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ` : ""}${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;

describe("real log lines of every family (test/fixtures/log-lines.json)", () => {
  for (const g of groups) {
    test(`${g.family}${g.constructed ? " (constructed)" : ""}: ${g.source}`, () => {
      for (const l of g.lines) {
        const parsed = parseLogLine(l.line, NOW);
        if (l.expect === "unrecognised") {
          expect({ line: l.line, parsed }).toEqual({ line: l.line, parsed: null });
          continue;
        }
        expect({ line: l.line, fact: parsed?.fact }).toEqual({ line: l.line, fact: l.expect });
        if (parsed?.at && l.at)
          expect({ line: l.line, at: local(parsed.at, l.at.length > 8) }).toEqual({ line: l.line, at: l.at });
        if (!parsed?.at) expect(l.at).toBeUndefined();
      }
    });
  }

  test("the fixture is broad: 60+ captured lines, joins, leaves and UUIDs from servers and proxies of every family", () => {
    const real = groups.filter((g) => !g.constructed);
    expect(real.flatMap((g) => g.lines).length).toBeGreaterThanOrEqual(60);
    const families = new Set(real.map((g) => g.family));
    for (const f of [
      "vanilla",
      "paper",
      "purpur",
      "folia",
      "spigot",
      "fabric",
      "forge",
      "neoforge",
      "mohist",
      "arclight",
    ])
      expect(families).toContain(f);
    for (const f of ["velocity", "bungeecord", "waterfall"]) expect(families).toContain(f);
    const kinds = (family: string) =>
      new Set(
        real
          .filter((g) => g.family === family)
          .flatMap((g) => g.lines.map((l) => (typeof l.expect === "object" && l.expect ? l.expect.kind : null))),
      );
    for (const f of ["forge", "neoforge", "folia", "spigot", "fabric"]) {
      expect(kinds(f)).toContain("join");
      expect(kinds(f)).toContain("leave");
    }
    for (const f of ["forge", "neoforge", "folia", "spigot", "paper"]) expect(kinds(f)).toContain("uuid");
    for (const f of ["velocity", "bungeecord", "waterfall"]) expect(kinds(f)).toContain("server");
  });

  test("chat never passes for an event: every fact line, typed by a player in each chat layout, gives nothing", () => {
    const factLines = groups.flatMap((g) => g.lines).filter((l) => typeof l.expect === "object" && l.expect !== null);
    let checked = 0;
    for (const { line } of factLines) {
      const { msg } = splitLogLine(line)!;
      const head = line.slice(0, line.length - msg.length);
      for (const chat of [
        `<Griefer> ${msg}`,
        `[Not Secure] <Griefer> ${msg}`,
        `[world]<Griefer> ${msg}`,
        `* Griefer ${msg}`,
        `[Griefer] ${msg}`,
      ]) {
        expect({ chat: head + chat, parsed: parseLogLine(head + chat, NOW) }).toEqual({
          chat: head + chat,
          parsed: { fact: null, at: null },
        });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(300);
  });
});

test("log lines in vanilla's and Paper's formats; chat that looks like a leave is not one", () => {
  const now = new Date(2025, 0, 31, 18, 30, 0);
  expect(parseLogLine("[18:04:05] [Server thread/INFO]: Steve joined the game", now)?.fact).toEqual({
    kind: "join",
    name: "Steve",
  });
  expect(parseLogLine("[18:04:05 INFO]: Steve left the game", now)?.fact).toEqual({ kind: "leave", name: "Steve" });
  expect(parseLogLine("[18:04:05] [Server thread/INFO]: <Alex> Steve left the game", now)?.fact).toBeNull();
  expect(parseLogLine("[18:04:05] [Server thread/WARN]: Steve joined the game", now)?.fact).toBeNull();
  // A time later than now is yesterday's.
  expect(parseLogLine("[23:59:00] [Server thread/INFO]: Steve joined the game", now)?.at?.getDate()).toBe(30);
});

test("the layouts the issue names, a rename, a day in another language, and what is not a log line", () => {
  const now = new Date(2026, 10, 25, 18, 0, 0);
  const fact = (line: string) => parseLogLine(line, now)?.fact;
  expect(fact("[12:34:56] [Server thread/INFO] [minecraft/MinecraftServer]: Steve joined the game")).toEqual({
    kind: "join",
    name: "Steve",
  });
  const dated = parseLogLine(
    "[25Nov2026 12:34:56.789] [Server thread/INFO] [net.minecraft.server.dedicated.DedicatedServer/]: Steve joined the game",
    new Date(2026, 10, 27),
  );
  expect(dated?.at?.getDate()).toBe(25);
  expect(fact("[12:34:56] [Server thread/INFO]: Alex (formerly known as Steve) joined the game")).toEqual({
    kind: "join",
    name: "Alex",
    formerly: "Steve",
  });
  expect(fact("[12:34:56 INFO]: [connected player] Steve (/1.2.3.4:5678) has connected")).toEqual({
    kind: "join",
    name: "Steve",
    address: "/1.2.3.4:5678",
    proxy: "velocity",
  });
  expect(fact("[12:34:56 INFO]: [server connection] Steve -> lobby has connected")).toEqual({
    kind: "server",
    name: "Steve",
    server: "lobby",
    proxy: "velocity",
  });
  expect(fact("[12:34:56 INFO]: [connected player] Steve (/1.2.3.4:5678) has disconnected")).toEqual({
    kind: "leave",
    name: "Steve",
    address: "/1.2.3.4:5678",
    proxy: "velocity",
  });
  expect(fact("12:34:56 [INFO] [Steve,/1.2.3.4:5678] <-> ServerConnector [lobby] has connected")).toEqual({
    kind: "server",
    name: "Steve",
    server: "lobby",
    proxy: "bungeecord",
  });
  expect(fact("12:34:56 [INFO] [Steve,/[::1]:5678] <-> ServerConnector [lobby] has connected")).toEqual({
    kind: "server",
    name: "Steve",
    server: "lobby",
    proxy: "bungeecord",
  });
  expect(fact("12:34:56 [INFO] [Steve] disconnected with: Kicked")).toBeNull();
  expect(fact("12:34:56 [INFO] [/1.2.3.4:5678|Steve] <-> InitialHandler has connected")).toBeNull();
  // Forge prints the month in the JVM's language: a day it cannot read falls back to the time of day.
  const localised = parseLogLine(
    "[12toukok.2026 03:58:42.378] [Server thread/INFO] [net.minecraft.server.MinecraftServer/]: Steve left the game",
    now,
  );
  expect(localised?.fact).toEqual({ kind: "leave", name: "Steve" });
  expect(localised?.at?.getDate()).toBe(25);
  expect(parseLogLine("\u001b[32m[15:30:31 INFO]: Steve joined the game\u001b[0m", now)?.fact?.kind).toBe("join");
  expect(fact("[12:34:56] [Server thread/INFO]: UUID of player Steve is not-a-uuid")).toBeNull();
  expect(fact("[12:34:56] [Server thread/INFO]: St eve joined the game")).toBeNull();
  for (const line of [
    "\tat java.lang.Thread.run(Thread.java:833)",
    "",
    "Caused by: x",
    "[not a time] [x/INFO]: Steve joined the game",
  ])
    expect(parseLogLine(line, now)).toBeNull();
});

test("tps figures: Paper's 1 minute TPS, vanilla's achieved rate; unknown answers give nothing", () => {
  expect(parsePaperTps("§6TPS from last 1m, 5m, 15m: §a*20.0, §a19.9, §a19.8")).toBe(20);
  expect(parseTickQuery("Target tick rate: 20.0 per second.\nAverage time per tick: 3.2ms (Target: 50.0ms)")).toEqual({
    tps: 20,
    mspt: 3.2,
  });
  expect(parsePaperTps("Unknown or incomplete command, see below for error")).toBeNull();
  expect(parseTickQuery("Unknown or incomplete command, see below for error")).toBeNull();
});

test("offline-mode UUIDs are the ones Java's UUID.nameUUIDFromBytes gives a proxy", () => {
  expect(offlineUuid("Notch")).toBe("b50ad385-829d-3141-a216-7e7d7539ba7f");
  expect(offlineUuid("Steve")).toBe("5627dd98-e6be-3c21-b8a8-e92344183641");
});

test("list uuids, -Xmx, tellraw colours and backoff bounds", () => {
  expect(
    parseList("There are 1 of a max of 20 players online: Steve (069a79f4-44e9-4726-a5be-fca90e38aaf5)")?.players,
  ).toEqual([{ name: "Steve", uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5" }]);
  expect(parseXmx(["java", "-Xms1G", "-Xmx4G", "-jar", "server.jar"])).toBe(4096);
  expect(parseXmx(["java", "-jar", "server.jar"])).toBeNull();
  expect(tellraw('&aVote "now"')).toBe('tellraw @a {"text":"§aVote \\"now\\""}');
  expect(backoffMs(20, 1000, 60_000, () => 0.999)).toBeLessThanOrEqual(60_000);
  expect(backoffMs(0, 1000, 60_000, () => 0)).toBe(500);
});

describe("crash or restart", () => {
  test("`/stop`'s line is a planned stop; a crash's `Stopping server` is not; the Done line is a start", () => {
    expect(parseLogLine("[04:00:01] [Server thread/INFO]: Stopping the server")?.fact).toEqual({ kind: "stopping" });
    expect(parseLogLine("[04:00:01 INFO]: Stopping the server")?.fact).toEqual({ kind: "stopping" });
    expect(parseLogLine("[04:00:01] [Server thread/INFO]: Stopping server")?.fact).toBeNull();
    expect(parseLogLine("[04:00:01] [Server thread/INFO]: <Steve> Stopping the server")?.fact).toBeNull();
    expect(parseLogLine('[04:01:12] [Server thread/INFO]: Done (3.104s)! For help, type "help"')?.fact).toEqual({
      kind: "started",
    });
  });

  test("a crash report: its description and the exception with the top of its stack, up to the blank line", () => {
    const report = [
      "---- Minecraft Crash Report ----",
      "// Why did you do that?",
      "",
      "Time: 2026-11-27 11:40:00",
      "Description: Watching Server",
      "",
      "java.lang.Error: Watchdog",
      "\tat java.base/java.lang.Thread.sleep0(Native Method)",
      "\tat net.minecraft.server.MinecraftServer.waitUntilNextTick(MinecraftServer.java:1021)",
      "",
      "",
      "A detailed walkthrough of the error, its code path and all known details is as follows:",
      "-- System Details --",
    ].join("\r\n");
    expect(parseCrashReport(report)).toEqual({
      description: "Watching Server",
      lines: [
        "java.lang.Error: Watchdog",
        "    at java.base/java.lang.Thread.sleep0(Native Method)",
        "    at net.minecraft.server.MinecraftServer.waitUntilNextTick(MinecraftServer.java:1021)",
      ],
    });
    expect(parseCrashReport("---- Minecraft Crash Report ----\n// half written")).toBeNull();
    expect(parseCrashReport("not a report\nDescription: x")).toBeNull();
  });
});
