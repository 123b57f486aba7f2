import { expect, test } from "bun:test";
import { backoffMs } from "../src/api";
import { parseList, parseLogLine, parsePaperTps, parseTickQuery, parseXmx, tellraw } from "../src/parse";

test("log lines in vanilla's and Paper's formats; chat that looks like a leave is not one", () => {
  const now = new Date(2025, 0, 31, 18, 30, 0);
  expect(parseLogLine("[18:04:05] [Server thread/INFO]: Steve joined the game", now)?.fact).toEqual({
    kind: "join",
    name: "Steve",
  });
  expect(parseLogLine("[18:04:05 INFO]: Steve left the game", now)?.fact).toEqual({ kind: "leave", name: "Steve" });
  expect(parseLogLine("[18:04:05] [Server thread/INFO]: <Alex> Steve left the game", now)).toBeNull();
  expect(parseLogLine("[18:04:05] [Server thread/WARN]: Steve joined the game", now)).toBeNull();
  // A time later than now is yesterday's.
  expect(parseLogLine("[23:59:00] [Server thread/INFO]: Steve joined the game", now)?.at.getDate()).toBe(30);
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
