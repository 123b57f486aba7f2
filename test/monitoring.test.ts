import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { eq, inArray, sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import {
  serverIncidents,
  serverMetricsHour,
  serverMetricsMinute,
  servers,
  serverSamples,
  serverStatus,
} from "../src/db/schema";
import { addRawSamplesToBuckets } from "../src/monitoring/history";
import { ping } from "../src/monitoring/ping";
import { MonitoringService } from "../src/monitoring/service";
import { sha256 } from "../src/lib/secrets";
import { startStatusResponder, type Responder } from "../scripts/demo-mc-server";
import { literalAddress, OutboundRefused, refusal, resolveAllowed } from "../src/lib/address-guard";
import { devIdp, freePort, productionEnv, sharedServer, startTestServer } from "./harness";
import { api, expectError, newTeam, newUser } from "./helpers";
import { newServer, pastOutage } from "./servers-fixture";

let server: RunningServer;
const responders: Responder[] = [];
beforeAll(async () => {
  server = await sharedServer();
});
afterAll(async () => {
  await Promise.all(responders.map((r) => r.close()));
  for (const socket of held) socket.destroy();
  await Promise.all(listeners.map((l) => new Promise((resolve) => l.close(resolve))));
});

const listeners: NetServer[] = [];
const held: Socket[] = [];
/**
 * A loopback TCP port that counts the connections it receives; with `hold`, it keeps them open
 * and never answers, like a server that hangs.
 */
async function countingListener(hold = false): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  const l = createServer((socket) => {
    n++;
    if (hold) held.push(socket);
    else socket.destroy();
  });
  listeners.push(l);
  await new Promise<void>((resolve) => l.listen(0, "127.0.0.1", resolve));
  return { port: (l.address() as { port: number }).port, connections: () => n };
}

async function responder(opts: Parameters<typeof startStatusResponder>[0] = {}) {
  const r = await startStatusResponder(opts);
  responders.push(r);
  return r;
}

/**
 * A server row written straight to the database with its first check far in the future, so
 * the running pinger never adds a sample and the figures below are exact.
 */
async function quietServer(): Promise<{ serverId: string; token: string }> {
  const owner = await newUser(server);
  const teamId = await newTeam(server, owner);
  const [row] = await server.services.database.db
    .insert(servers)
    .values({
      teamId,
      name: "History",
      host: "127.0.0.1",
      port: 9,
      kind: "single",
      agentTokenHash: sha256(crypto.randomUUID()),
      agentTokenPrefix: "x",
      nextCheckAt: new Date("2999-01-01T00:00:00Z"),
    })
    .returning();
  return { serverId: row!.id, token: owner.token };
}

const stats = (serverId: string, token: string, window?: string) =>
  api(server, "GET", `/server/uptime-stats${window ? `?window=${window}` : ""}`, {
    token,
    headers: { "x-server-id": serverId },
  });

describe("monitoring with Server List Ping", () => {
  test("a real status responder: up with latency, players, version and MOTD; taken down, the status flips and uptime shows it", async () => {
    const mc = await responder({ motd: "§aWelcome to §lSkyblock", maxPlayers: 100, version: "1.20.4", players: 7 });
    const s = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const monitoring = server.services.monitoring;

    const up = await monitoring.checkNow(s.serverId);
    expect(up).toMatchObject({
      online: true,
      playersOnline: 7,
      playersMax: 100,
      version: "1.20.4",
      motd: "Welcome to Skyblock",
    });
    const first = (await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token })).body;
    expect(first.status).toMatchObject({
      online: true,
      players_online: 7,
      players_max: 100,
      version: "1.20.4",
      motd: "Welcome to Skyblock",
    });
    expect(first.status.latency_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(first.status.changed_at)).toBeLessThanOrEqual(Date.parse(first.status.checked_at));

    mc.players = 9;
    await monitoring.checkNow(s.serverId);
    const second = (await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token })).body.status;
    expect(second.players_online).toBe(9);
    expect(second.changed_at).toBe(first.status.changed_at); // still up: no status change

    await mc.close();
    const down = await monitoring.checkNow(s.serverId);
    expect(down).toMatchObject({ online: false, latencyMs: null });
    const third = (await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token })).body.status;
    expect(third).toMatchObject({
      online: false,
      players_online: null,
      version: "1.20.4",
      motd: "Welcome to Skyblock",
    });
    expect(Date.parse(third.changed_at)).toBeGreaterThan(Date.parse(first.status.changed_at));
    expect(third.changed_at).toBe(third.checked_at);
    // The port no longer listens: refused, down since this check.
    expect(third).toMatchObject({ down_reason: "connection_refused", down_since: third.changed_at });
    expect(first.status).toMatchObject({ down_reason: null, down_since: null });

    // Figures agree with the samples stored (the background pinger may have added its own).
    const rows = await server.services.database.db
      .select()
      .from(serverSamples)
      .where(eq(serverSamples.serverId, s.serverId));
    const upCount = rows.filter((r) => r.online).length;
    const res = await stats(s.serverId, s.owner.token, "1h");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      window: "1h",
      bucket_seconds: 60,
      samples: rows.length,
      up: upCount,
      down: rows.length - upCount,
    });
    expect(upCount).toBeGreaterThanOrEqual(2);
    expect(rows.length - upCount).toBeGreaterThanOrEqual(1);
    expect(res.body.uptime).toBeCloseTo(upCount / rows.length, 5);
    expect(res.body.buckets.reduce((n: number, b: any) => n + b.up + b.down, 0)).toBe(rows.length);
  });

  test("pingDue checks every due server at once; a dead server does not hold up the live ones", async () => {
    const live = await Promise.all([1, 2, 3].map((n) => responder({ players: n })));
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const register = async (host: string, port: number) =>
      (
        await api(server, "POST", "/server/servers", {
          token: owner.token,
          body: { team_id: teamId, name: `${host}:${port}`, host, port, kind: "single" },
        })
      ).body.server_id as string;
    const liveIds = await Promise.all(live.map((r) => register("127.0.0.1", r.port)));
    // Accepts and never answers: the check hangs until the ping timeout.
    const hung = await countingListener(true);
    const deadId = await register("127.0.0.1", hung.port);

    const started = performance.now();
    await server.services.monitoring.pingDue();
    const elapsed = performance.now() - started;
    const db = server.services.database.db;
    for (const [i, id] of liveIds.entries()) {
      const [st] = await db.select().from(serverStatus).where(eq(serverStatus.serverId, id));
      expect(st).toMatchObject({ online: true, playersOnline: i + 1 });
    }
    const [dead] = await db.select().from(serverStatus).where(eq(serverStatus.serverId, deadId));
    expect(dead?.online).toBe(false);
    // The dead one costs one timeout, run beside the others rather than before them.
    expect(elapsed).toBeLessThan(server.services.config.PING_TIMEOUT_MS + 3000);

    // Checked servers are leased to this instance: each row is due for anyone again a lease
    // ahead (±10%), and this instance checks them every interval meanwhile.
    const { PING_LEASE_SECONDS, PING_INTERVAL_SECONDS } = server.services.config;
    const lease = Math.max(PING_LEASE_SECONDS, PING_INTERVAL_SECONDS) * 1000;
    const rows = await db.select({ next: servers.nextCheckAt }).from(servers).where(eq(servers.teamId, teamId));
    for (const r of rows) {
      const ahead = r.next.getTime() - Date.now();
      expect(ahead).toBeGreaterThan(lease * 0.9 - elapsed - 2000);
      expect(ahead).toBeLessThanOrEqual(lease * 1.1 + 1000);
    }
  }, 30_000);

  test("concurrent results are stored in batches: one sample and status each, changed flags right, and a server deleted mid-round costs only its own row", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const db = server.services.database.db;
    // Inserted not due (far ahead), so no pinger loop of another instance on a shared database
    // claims them: only the checks below touch them.
    const register = async (port: number) => {
      const [row] = await db
        .insert(servers)
        .values({
          teamId,
          name: `b${port}`,
          host: "127.0.0.1",
          port,
          kind: "single" as const,
          agentTokenHash: sha256(crypto.randomUUID()),
          agentTokenPrefix: "x",
          nextCheckAt: new Date(Date.now() + 3600_000),
        })
        .returning({ id: servers.id });
      return row!.id;
    };
    const live = await Promise.all(Array.from({ length: 8 }, (_, n) => responder({ players: n })));
    const liveIds = await Promise.all(live.map((r) => register(r.port)));
    // Three hung servers time out together, so their results reach the database at once.
    const hung = await Promise.all([1, 2, 3].map(() => countingListener(true)));
    const hungIds = await Promise.all(hung.map((h) => register(h.port)));
    const mine = new Set([...liveIds, ...hungIds]);
    const flips = new Map<string, boolean>();
    const off = server.services.monitoring.onSample((id, _r, changed) => {
      if (mine.has(id)) flips.set(id, changed);
    });
    const checkAll = (ids: string[]) => Promise.all(ids.map((id) => server.services.monitoring.checkNow(id)));
    try {
      const round = checkAll([...liveIds, ...hungIds]);
      await Bun.sleep(300);
      await db.delete(servers).where(eq(servers.id, hungIds[0]!));
      await round;
      for (const [i, id] of liveIds.entries()) {
        const [st] = await db.select().from(serverStatus).where(eq(serverStatus.serverId, id));
        expect(st).toMatchObject({ online: true, playersOnline: i });
        expect(flips.get(id)).toBe(true);
      }
      for (const id of hungIds.slice(1)) {
        const [st] = await db.select().from(serverStatus).where(eq(serverStatus.serverId, id));
        expect(st?.online).toBe(false);
        expect(flips.get(id)).toBe(true);
      }
      expect(flips.has(hungIds[0]!)).toBe(false);
      const samples = await db
        .select({ id: serverSamples.serverId, n: sql<number>`count(*)::int` })
        .from(serverSamples)
        .where(sql`${serverSamples.serverId} in ${[...mine]}`)
        .groupBy(serverSamples.serverId);
      expect(samples.length).toBe(mine.size - 1);
      for (const r of samples) expect(r.n).toBe(1);

      // A second round of the live ones: stored again, nothing flipped.
      flips.clear();
      await checkAll(liveIds);
      for (const id of liveIds) expect(flips.get(id)).toBe(false);
    } finally {
      off();
    }
  }, 30_000);

  test("claims never overlap: concurrent claimers (as several instances would) each get different servers", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const db = server.services.database.db;
    const ids = (
      await db
        .insert(servers)
        .values(
          Array.from({ length: 20 }, (_, i) => ({
            teamId,
            name: `c${i}`,
            host: "127.0.0.1",
            port: 9,
            kind: "single" as const,
            agentTokenHash: sha256(crypto.randomUUID()),
            agentTokenPrefix: "x",
            nextCheckAt: new Date(Date.now() - 3600_000),
          })),
        )
        .returning({ id: servers.id })
    ).map((r) => r.id);
    const monitoring = server.services.monitoring;
    const claims = await Promise.all(Array.from({ length: 8 }, () => monitoring.claim(5)));
    const claimed = claims
      .flat()
      .map((t) => t.id)
      .filter((id) => ids.includes(id));
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.length).toBe(20);
    const again = (await monitoring.claim(100)).filter((t) => ids.includes(t.id));
    expect(again).toEqual([]);
  });
});

describe("down reasons", () => {
  const lan = { allowPrivate: true };

  test("a failed ping says why, as one of a fixed set: refused, timed out, bad answer, name not found, refused by policy", async () => {
    const closed = freePort();
    expect(await ping("127.0.0.1", closed, 2000, lan)).toMatchObject({
      online: false,
      reason: "connection_refused",
      error: expect.stringContaining("ECONNREFUSED"),
    });
    const hangs = await countingListener(true);
    expect(await ping("127.0.0.1", hangs.port, 300, lan)).toMatchObject({ online: false, reason: "timed_out" });
    expect(hangs.connections()).toBe(1);
    // Accepts and hangs up at once, and one that answers HTTP: both reachable, neither a Minecraft status.
    const hangsUp = await countingListener(false);
    expect(await ping("127.0.0.1", hangsUp.port, 2000, lan)).toMatchObject({ online: false, reason: "bad_answer" });
    const http = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("not minecraft") });
    try {
      expect(await ping("127.0.0.1", http.port!, 2000, lan)).toMatchObject({ online: false, reason: "bad_answer" });
    } finally {
      http.stop(true);
    }
    // RFC 6761: a .invalid name never resolves.
    expect(await ping("nothing-here.invalid", 25565, 2000, lan)).toMatchObject({
      online: false,
      reason: "name_not_found",
    });
    expect(await ping("127.0.0.1", closed, 2000, { allowPrivate: false })).toMatchObject({
      online: false,
      reason: "refused_by_policy",
      error: expect.stringContaining("OUTBOUND_ALLOW_PRIVATE=true"),
    });
    expect(await ping("169.254.169.254", 80, 2000, lan)).toMatchObject({ reason: "refused_by_policy" });
    // A name refused by policy is not followed by what it resolves to inside the service's network.
    const named = await ping("localhost", closed, 2000, { allowPrivate: false });
    expect(named).toMatchObject({
      reason: "refused_by_policy",
      error: "refused by policy: localhost may not be reached from this service",
    });
    expect(named.error).not.toMatch(/127\.0\.0\.1|::1/);
    const up = await responder({ players: 1 });
    expect(await ping("127.0.0.1", up.port, 2000, lan)).toMatchObject({ online: true, reason: null, error: null });
  });

  test("the server record carries the reason and the time it went down, kept through the outage and cleared when it is back", async () => {
    const mc = await responder({ players: 2 });
    const s = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const read = async () =>
      (await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token })).body.status;
    await server.services.monitoring.checkNow(s.serverId);
    expect(await read()).toMatchObject({ online: true, down_reason: null, down_since: null });
    await mc.close();
    await server.services.monitoring.checkNow(s.serverId);
    const down = await read();
    expect(down).toMatchObject({ online: false, down_reason: "connection_refused", down_since: down.checked_at });
    await Bun.sleep(5);
    await server.services.monitoring.checkNow(s.serverId);
    const still = await read();
    expect(still.down_since).toBe(down.down_since);
    expect(Date.parse(still.checked_at)).toBeGreaterThan(Date.parse(down.checked_at));
    const listed = await api(server, "GET", "/server/servers", {
      token: s.owner.token,
      headers: { "x-team-id": s.teamId },
    });
    expect(listed.body.servers[0].status).toMatchObject({
      down_reason: "connection_refused",
      down_since: down.down_since,
    });
    const back = await startStatusResponder({ port: mc.port });
    responders.push(back);
    await server.services.monitoring.checkNow(s.serverId);
    expect(await read()).toMatchObject({ online: true, down_reason: null, down_since: null });
  });
});

describe("ping leases", () => {
  /**
   * Pingers as other instances would run them, on the shared server's database: a one-second
   * interval, so a held server is due again within the test. Not started: the tests drive them.
   */
  const pingers: MonitoringService[] = [];
  const pinger = (leaseSeconds: number, config: Partial<RunningServer["services"]["config"]> = {}) => {
    const p = new MonitoringService(
      server.services.database.db,
      { ...server.services.config, PING_INTERVAL_SECONDS: 1, PING_LEASE_SECONDS: leaseSeconds, ...config },
      server.services.log,
    );
    pingers.push(p);
    return p;
  };
  /** The ids of the servers each of `ps` stores a result for, from now on. */
  const watch = (...ps: MonitoringService[]) =>
    ps.map((p) => {
      const seen: string[] = [];
      p.onSample((id) => seen.push(id));
      return seen;
    });
  const nextCheckAt = async (id: string) =>
    (await server.services.database.db.select({ at: servers.nextCheckAt }).from(servers).where(eq(servers.id, id)))[0]!
      .at;
  const samples = async (id: string) =>
    (
      await server.services.database.db
        .select({ n: sql<number>`count(*)::int` })
        .from(serverSamples)
        .where(eq(serverSamples.serverId, id))
    )[0]!.n;
  // These pingers claim whatever is due: other tests' servers (on PostgreSQL, every earlier test
  // file's) are put an hour off, so only the servers below compete for their slots.
  beforeAll(async () => {
    await server.services.database.db.update(servers).set({ nextCheckAt: sql`now() + interval '1 hour'` });
  });
  afterAll(async () => {
    await Promise.all(pingers.map((p) => p.stop()));
  });

  test("a claim leases the server: the holder checks it every interval from memory, the row untouched, and no other instance claims it meanwhile", async () => {
    const mc = await responder({ players: 4 });
    const s = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const [a, b] = [pinger(30), pinger(30)];
    const [seenA, seenB] = watch(a, b) as [string[], string[]];
    await a.pingDue();
    expect(seenA).toContain(s.serverId);
    const leased = await nextCheckAt(s.serverId);
    const ahead = leased.getTime() - Date.now();
    expect(ahead).toBeGreaterThan(30_000 * 0.9 - 2000);
    expect(ahead).toBeLessThanOrEqual(30_000 * 1.1);

    await b.pingDue();
    expect(seenB).not.toContain(s.serverId);
    await Bun.sleep(1200);
    await a.pingDue();
    expect(seenA.filter((id) => id === s.serverId).length).toBe(2);
    // The second check found what the first stored: no sample, no status write (next test).
    expect(await samples(s.serverId)).toBe(1);
    expect((await nextCheckAt(s.serverId)).getTime()).toBe(leased.getTime());
    expect(seenB).not.toContain(s.serverId);
  }, 30_000);

  test("a check that finds what the status row shows writes neither the row nor a sample; a change writes at once, and checked_at is refreshed within PING_STATUS_REFRESH_SECONDS; every check is in the buckets", async () => {
    const mc = await responder({ players: 4 });
    const s = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const refreshMs = 2000;
    const p = pinger(30, { PING_STATUS_REFRESH_SECONDS: refreshMs / 1000 });
    const [seen] = watch(p) as [string[]];
    const { db } = server.services.database;
    const row = async () => (await db.select().from(serverStatus).where(eq(serverStatus.serverId, s.serverId)))[0]!;
    const shown = async () =>
      (await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token })).body.status;
    const checks = () => seen.filter((id) => id === s.serverId).length;
    const next = async () => {
      await Bun.sleep(1150); // the one-second interval (±10%) of the held server
      const before = checks();
      await p.pingDue();
      expect(checks()).toBe(before + 1);
    };

    await p.pingDue();
    const first = await row();
    expect(first).toMatchObject({ online: true, playersOnline: 4 });
    expect(await samples(s.serverId)).toBe(1);

    // The same answer within the bound: the row and the samples are left as they are.
    await next();
    expect((await row()).checkedAt!.getTime()).toBe(first.checkedAt!.getTime());
    expect(await samples(s.serverId)).toBe(1);

    // A shown field changed: written by that check.
    mc.players = 6;
    await next();
    const changed = await row();
    expect(changed.playersOnline).toBe(6);
    expect(changed.checkedAt!.getTime()).toBeGreaterThan(first.checkedAt!.getTime());
    expect(changed.changedAt!.getTime()).toBe(first.changedAt!.getTime()); // still up since the first
    expect(await samples(s.serverId)).toBe(2);
    expect((await shown()).players_online).toBe(6);

    // Nothing new, but the row is as old as the bound: the next check refreshes checked_at.
    while (Date.now() - changed.checkedAt!.getTime() < refreshMs) await next();
    const refreshed = await row();
    expect(refreshed.checkedAt!.getTime()).toBeGreaterThan(changed.checkedAt!.getTime());
    expect(await samples(s.serverId)).toBe(3);
    // What a reader sees: a checked_at never older than the bound plus an interval (and the write's wait).
    const read = Date.parse((await shown()).checked_at);
    expect(Date.now() - read).toBeLessThan(refreshMs + 1100 + 1000);

    // Every check, written or not, counts in the uptime buckets the readers use.
    const minute = await db
      .select({ up: sql<number>`coalesce(sum(up_n), 0)::int`, down: sql<number>`coalesce(sum(down_n), 0)::int` })
      .from(serverMetricsMinute)
      .where(eq(serverMetricsMinute.serverId, s.serverId));
    expect(minute[0]).toEqual({ up: checks(), down: 0 });
    expect(checks()).toBeGreaterThanOrEqual(4);
  }, 30_000);

  test("a stopped instance hands its servers back due at their next check; a crashed one's are taken over when the lease ends", async () => {
    const [one, two] = await Promise.all([responder(), responder()]);
    const handed = await newServer(server, { host: "127.0.0.1", port: one.port });
    const a = pinger(30);
    await a.pingDue();
    await a.stop();
    // Due again about an interval after its check, not a lease after.
    expect((await nextCheckAt(handed.serverId)).getTime() - Date.now()).toBeLessThan(1500);

    const crashed = pinger(2);
    const orphan = await newServer(server, { host: "127.0.0.1", port: two.port });
    await crashed.pingDue();
    expect(await samples(orphan.serverId)).toBe(1);
    // `crashed` is never stopped and never checks again: as if its process died.
    const b = pinger(30);
    const seenB = watch(b)[0]!;
    await b.pingDue();
    expect(seenB).not.toContain(orphan.serverId);
    await Bun.sleep(Math.max(0, (await nextCheckAt(handed.serverId)).getTime() - Date.now()) + 50);
    await b.pingDue();
    expect(seenB).toContain(handed.serverId);
    expect(seenB).not.toContain(orphan.serverId);
    await Bun.sleep(Math.max(0, (await nextCheckAt(orphan.serverId)).getTime() - Date.now()) + 50);
    await b.pingDue();
    expect(seenB).toContain(orphan.serverId);
    expect(await samples(orphan.serverId)).toBe(2);
    // The crashed instance's lease ran out: were it alive, it would not check the server again.
    await crashed.pingDue();
    expect(await samples(orphan.serverId)).toBe(2);
  }, 30_000);

  test("pause() keeps the leases: started again, the instance checks what it held without a new claim; stop() hands them back", async () => {
    const mc = await responder({ players: 1 });
    const s = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const p = pinger(30);
    const [seen] = watch(p) as [string[]];
    const waitFor = async (n: number) => {
      const deadline = Date.now() + 10_000;
      while (seen.filter((id) => id === s.serverId).length < n && Date.now() < deadline) await Bun.sleep(50);
      return seen.filter((id) => id === s.serverId).length;
    };
    p.start();
    expect(await waitFor(1)).toBeGreaterThanOrEqual(1);
    await p.pause();
    const leased = await nextCheckAt(s.serverId);
    expect(p.held).toBeGreaterThanOrEqual(1);
    const checked = seen.length;
    await Bun.sleep(1300);
    expect(seen.length).toBe(checked);
    p.start();
    expect(await waitFor(2)).toBeGreaterThanOrEqual(2);
    // Checked from memory: the row still carries the lease of the first claim.
    expect((await nextCheckAt(s.serverId)).getTime()).toBe(leased.getTime());
    await p.stop();
    expect(p.held).toBe(0);
    expect((await nextCheckAt(s.serverId)).getTime() - Date.now()).toBeLessThan(1500);
  }, 30_000);

  test("past capacity, a server the instance does not hold yet still gets a lease and a check within ticks, not after a lease", async () => {
    // Two slots, six servers that hang for the whole one-second timeout, checked every second:
    // three times what the slots can do.
    const p = pinger(60, { PING_CONCURRENCY: 2, PING_TIMEOUT_MS: 1000 });
    const hung = await Promise.all(Array.from({ length: 6 }, () => countingListener(true)));
    const hungIds: string[] = [];
    for (const h of hung) hungIds.push((await newServer(server, { host: "127.0.0.1", port: h.port })).serverId);
    p.start();
    await Bun.sleep(2500);
    const mc = await responder({ players: 2 });
    const late = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const [seen] = watch(p) as [string[]];
    const deadline = Date.now() + 10_000;
    while (!seen.includes(late.serverId) && Date.now() < deadline) await Bun.sleep(100);
    await p.stop();
    expect(seen).toContain(late.serverId);
    // Handed back due now: gone, so the next tests' rounds do not wait on them.
    await server.services.database.db.delete(servers).where(inArray(servers.id, hungIds));
  }, 30_000);

  test("a moved server: the new address is checked at once by another instance, and the holder's check of the old one is refused, not stored, and not repeated", async () => {
    const old = await countingListener();
    const s = await newServer(server, { host: "127.0.0.1", port: old.port });
    const [a, b] = [pinger(30), pinger(30)];
    await a.pingDue();
    expect(old.connections()).toBe(1);
    const mc = await responder({ players: 5 });
    const moved = await api(server, "PATCH", `/server/servers/${s.serverId}`, {
      token: s.owner.token,
      body: { port: mc.port },
    });
    expect(moved.status).toBe(200);
    await b.pingDue();
    const status = async () =>
      (await server.services.database.db.select().from(serverStatus).where(eq(serverStatus.serverId, s.serverId)))[0];
    expect(await status()).toMatchObject({ online: true, playersOnline: 5 });

    const seenA = watch(a)[0]!;
    await Bun.sleep(1200);
    await a.pingDue();
    expect(old.connections()).toBe(2);
    expect(seenA).not.toContain(s.serverId);
    expect(await status()).toMatchObject({ online: true, playersOnline: 5 });
    expect(await samples(s.serverId)).toBe(2);
    await Bun.sleep(1200);
    await a.pingDue();
    expect(old.connections()).toBe(2);
  }, 30_000);
});

describe("uptime statistics", () => {
  test("known samples: uptime, count, latency avg/min/max/p95 and buckets, per window", async () => {
    const { serverId, token } = await quietServer();
    const now = Date.now();
    const at = (msAgo: number) => new Date(now - msAgo);
    const min = 60_000;
    // Last hour: 10 samples, 8 up with latencies 10..80 ms, 2 down.
    const lastHour = Array.from({ length: 10 }, (_, i) => ({
      serverId,
      ts: at((i + 1) * 5 * min),
      online: i < 8,
      latencyMs: i < 8 ? (i + 1) * 10 : null,
      playersOnline: i < 8 ? 4 : null,
      playersMax: 20,
    }));
    // Three days ago: 5 up at 200 ms. Twenty days ago: 5 down.
    const older = [
      ...Array.from({ length: 5 }, (_, i) => ({
        serverId,
        ts: at(3 * 86_400_000 + i * min),
        online: true,
        latencyMs: 200,
        playersOnline: 10,
        playersMax: 20,
      })),
      ...Array.from({ length: 5 }, (_, i) => ({
        serverId,
        ts: at(20 * 86_400_000 + i * min),
        online: false,
        latencyMs: null,
        playersOnline: null,
        playersMax: null,
      })),
    ];
    // Beyond 30 days: outside every window.
    const ancient = [
      { serverId, ts: at(40 * 86_400_000), online: true, latencyMs: 5, playersOnline: 1, playersMax: 20 },
    ];
    await server.services.database.db.insert(serverSamples).values([...lastHour, ...older, ...ancient]);
    await addRawSamplesToBuckets(server.services.database.db, serverId);

    const h1 = (await stats(serverId, token, "1h")).body;
    expect(h1).toMatchObject({ window: "1h", bucket_seconds: 60, samples: 10, up: 8, down: 2, uptime: 0.8 });
    expect(h1.latency_ms).toEqual({ avg: 45, min: 10, max: 80, p95: 80 });
    expect(h1.buckets.length).toBeGreaterThanOrEqual(60);
    expect(h1.buckets.length).toBeLessThanOrEqual(62);
    expect(h1.buckets.filter((b: any) => b.up + b.down > 0).length).toBe(10);
    const upBucket = h1.buckets.find((b: any) => b.up === 1);
    expect(upBucket).toMatchObject({ uptime: 1, players_avg: 4 });
    expect(Date.parse(h1.buckets[1].start) - Date.parse(h1.buckets[0].start)).toBe(60_000);

    const d1 = (await stats(serverId, token)).body; // default window
    expect(d1).toMatchObject({ window: "24h", bucket_seconds: 600, samples: 10, uptime: 0.8 });

    const d7 = (await stats(serverId, token, "7d")).body;
    expect(d7).toMatchObject({ bucket_seconds: 3600, samples: 15, up: 13, down: 2 });
    expect(d7.uptime).toBeCloseTo(13 / 15, 6);
    expect(d7.latency_ms.avg).toBeCloseTo((360 + 1000) / 13, 2);
    expect(d7.latency_ms).toMatchObject({ min: 10, max: 200, p95: 200 });

    const d30 = (await stats(serverId, token, "30d")).body;
    expect(d30).toMatchObject({ bucket_seconds: 21_600, samples: 20, up: 13, down: 7 });
    expect(d30.uptime).toBeCloseTo(0.65, 6);
    expect(d30.buckets.length).toBeGreaterThanOrEqual(120);
    expect(d30.buckets.reduce((n: number, b: any) => n + b.up + b.down, 0)).toBe(20);
  });

  test("latency p95 is the nearest rank over every sample, ties included: 95 of 100 at or under 20 ms gives 20, 94 gives 30", async () => {
    const db = server.services.database.db;
    const now = Date.now();
    for (const [at20, p95] of [
      [45, 20],
      [44, 30],
    ] as const) {
      const { serverId, token } = await quietServer();
      // 100 pings, one a minute: 50 at 10 ms, then `at20` at 20 ms, the rest at 30 ms, in no order.
      const latencies = [...Array(50).fill(10), ...Array(at20).fill(20), ...Array(100 - 50 - at20).fill(30)].sort(
        (a, b) => ((a * 7919) % 13) - ((b * 7919) % 13),
      );
      await db.insert(serverSamples).values(
        latencies.map((latencyMs, i) => ({
          serverId,
          ts: new Date(now - (i + 1) * 60_000),
          online: true,
          latencyMs,
          playersOnline: 1,
          playersMax: 20,
        })),
      );
      await addRawSamplesToBuckets(db, serverId);
      const d1 = (await stats(serverId, token, "24h")).body;
      expect(d1).toMatchObject({ samples: 100, up: 100 });
      expect(d1.latency_ms).toMatchObject({ min: 10, max: 30, p95 });
    }
  });

  test("retention prunes raw samples and one-minute buckets past 48 h and hourly ones past 90 days; 7d and 30d figures do not change", async () => {
    const { serverId, token } = await quietServer();
    const db = server.services.database.db;
    const now = Date.now();
    // 30 days, one sample every 10 minutes; every 7th down, latency cycling 20..69 ms.
    const rows = Array.from({ length: 30 * 144 - 1 }, (_, i) => {
      const online = i % 7 !== 0;
      return {
        serverId,
        ts: new Date(now - (i + 1) * 600_000),
        online,
        latencyMs: online ? 20 + (i % 50) : null,
        playersOnline: online ? i % 13 : null,
        playersMax: 50,
      };
    });
    for (let i = 0; i < rows.length; i += 1000) await db.insert(serverSamples).values(rows.slice(i, i + 1000));
    await addRawSamplesToBuckets(db, serverId);
    const before = (await stats(serverId, token, "30d")).body;
    const before7 = (await stats(serverId, token, "7d")).body;
    expect(before.samples).toBe(rows.length);
    const up = rows.filter((r) => r.online);
    expect(before.up).toBe(up.length);
    expect(before.latency_ms.avg).toBeCloseTo(up.reduce((s, r) => s + r.latencyMs!, 0) / up.length, 2);
    expect(before.latency_ms).toMatchObject({ min: 20, max: 69 });

    const count = async (table: typeof serverSamples | typeof serverMetricsMinute | typeof serverMetricsHour) =>
      (
        (await db.select({ n: sql<number>`count(*)::int` }).from(table).where(eq(table.serverId, serverId))) as [
          { n: number },
        ]
      )[0].n;
    expect(await count(serverMetricsMinute)).toBe(rows.length);
    const result = await server.services.monitoring.retention();
    expect(result.pruned_raw).toBeGreaterThanOrEqual(rows.length - 48 * 6 - 1);
    expect(await count(serverSamples)).toBeLessThanOrEqual(48 * 6);
    expect(await count(serverMetricsMinute)).toBeLessThanOrEqual(48 * 6);
    expect(await count(serverMetricsHour)).toBeGreaterThanOrEqual(30 * 24 - 1);

    // Both windows read the hourly tier, which retention left alone: the same answer.
    const after = (await stats(serverId, token, "30d")).body;
    const after7 = (await stats(serverId, token, "7d")).body;
    const figures = (b: any) => ({ ...b, from: undefined, to: undefined, buckets: undefined });
    expect(figures(after)).toEqual(figures(before));
    expect(figures(after7)).toEqual(figures(before7));

    // Past the retention period, hourly buckets go too.
    const later = new Date(now + server.services.config.SAMPLE_RETENTION_DAYS * 86_400_000);
    await server.services.monitoring.retention(later);
    expect(await count(serverMetricsHour)).toBeLessThan(3 * 24);
  }, 60_000);

  test("incidents: every window lists the down periods it overlaps, whole, with reason and length, however coarse its buckets", async () => {
    const mc = await responder({ players: 1 });
    const s = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const past = await pastOutage(server, s.serverId, mc);
    responders.push(past.responder);
    const three = {
      started_at: past.startedAt,
      ended_at: past.endedAt,
      duration_seconds: Math.round((Date.parse(past.endedAt) - Date.parse(past.startedAt)) / 1000),
      ongoing: false,
      reason: "connection_refused",
    };
    expect(three.duration_seconds).toBeGreaterThanOrEqual(5 * 60);
    for (const w of ["7d", "30d"]) {
      const body = (await stats(s.serverId, s.owner.token, w)).body;
      expect(body).toMatchObject({ samples: 4, up: 2, down: 2, uptime: 0.5 });
      expect(body.incidents).toEqual([three]);
    }
    for (const w of ["1h", "24h"]) expect((await stats(s.serverId, s.owner.token, w)).body.incidents).toEqual([]);

    // Down now: an open incident in every window, the most recent first, its length up to now.
    await past.responder.close();
    const before = Date.now();
    await server.services.monitoring.checkNow(s.serverId);
    const status = (await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token })).body.status;
    const now = { started_at: status.down_since, ended_at: null, ongoing: true, reason: "connection_refused" };
    for (const w of ["1h", "24h"]) {
      const body = (await stats(s.serverId, s.owner.token, w)).body;
      expect(body.uptime).toBe(0);
      expect(body.incidents).toEqual([{ ...now, duration_seconds: expect.any(Number) }]);
    }
    for (const w of ["7d", "30d"]) {
      const body = (await stats(s.serverId, s.owner.token, w)).body;
      expect(body.uptime).toBeCloseTo(2 / 5, 6);
      expect(body.incidents).toEqual([{ ...now, duration_seconds: expect.any(Number) }, three]);
      expect(body.incidents[0].duration_seconds).toBeLessThanOrEqual(Math.ceil((Date.now() - before) / 1000) + 1);
    }

    // Past the retention period, an ended incident goes with the hourly buckets; the open one stays.
    const later = new Date(Date.now() + server.services.config.SAMPLE_RETENTION_DAYS * 86_400_000);
    await server.services.monitoring.retention(later);
    const left = await server.services.database.db
      .select()
      .from(serverIncidents)
      .where(eq(serverIncidents.serverId, s.serverId));
    expect(left.map((r) => r.endedAt)).toEqual([null]);
  });

  test("an unknown window is a 400; no samples yet gives nulls, not zeros", async () => {
    const { serverId, token } = await quietServer();
    for (const w of ["2h", "1d", "", "30D", "all"])
      expectError(await stats(serverId, token, w === "" ? "%20" : w), 400, "validation_failed");
    const empty = (await stats(serverId, token, "1h")).body;
    expect(empty).toMatchObject({
      samples: 0,
      up: 0,
      down: 0,
      uptime: null,
      latency_ms: { avg: null, min: null, max: null, p95: null },
    });
    expect(empty.buckets.every((b: any) => b.uptime === null && b.up === 0)).toBe(true);
  });
});

describe("outbound address guard", () => {
  const strict = { allowPrivate: false };
  const lan = { allowPrivate: true };

  test("refuses every non-public class, in every numeric spelling, and allows public unicast", () => {
    const refused: [string, RegExp][] = [
      ["127.0.0.1", /loopback/],
      ["::1", /loopback/],
      ["2130706433", /127\.0\.0\.1 is a loopback/],
      ["127.1", /127\.0\.0\.1 is a loopback/],
      ["0x7f.1", /127\.0\.0\.1 is a loopback/],
      ["0177.0.0.1", /127\.0\.0\.1 is a loopback/],
      ["[::ffff:127.0.0.1]", /127\.0\.0\.1 is a loopback/],
      ["::ffff:7f00:1", /127\.0\.0\.1 is a loopback/],
      ["64:ff9b::7f00:1", /127\.0\.0\.1 is a loopback/],
      ["10.1.2.3", /private/],
      ["172.16.0.1", /private/],
      ["192.168.1.10", /private/],
      ["::ffff:192.168.1.10", /192\.168\.1\.10 is a private/],
      ["fd12:3456::1", /uniqueLocal/],
      ["169.254.1.1", /linkLocal/],
      ["fe80::1", /linkLocal/],
      ["100.64.0.1", /carrierGradeNat/],
      ["224.0.0.1", /multicast/],
      ["ff02::1", /multicast/],
      ["0.0.0.0", /unspecified/],
      ["::", /unspecified/],
      ["255.255.255.255", /broadcast/],
      ["240.0.0.1", /reserved/],
      ["192.0.2.1", /reserved/],
      ["169.254.169.254", /metadata/],
      ["::ffff:169.254.169.254", /metadata/],
      ["fd00:ec2::254", /metadata/],
    ];
    for (const [address, why] of refused) {
      expect(`${address}: ${refusal(address, strict)}`).toMatch(why);
    }
    for (const address of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect(`${address}: ${refusal(address, strict)}`).toBe(`${address}: null`);
    }
    expect(literalAddress("play.example.com")).toBeNull();
    expect(literalAddress("0x7f.1")).toBe("127.0.0.1");
  });

  test("OUTBOUND_ALLOW_PRIVATE allows LAN targets but never metadata, unspecified, multicast or broadcast", () => {
    for (const address of ["127.0.0.1", "127.1", "::1", "10.1.2.3", "192.168.1.10", "fd12:3456::1", "100.64.0.1"]) {
      expect(`${address}: ${refusal(address, lan)}`).toBe(`${address}: null`);
    }
    for (const address of ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254", "0.0.0.0", "224.0.0.1"]) {
      expect(refusal(address, lan)).not.toBeNull();
    }
  });

  test("a name is judged by what it resolves to, once: the address handed back is the checked one", async () => {
    // A rebinding resolver would answer differently the second time; there is no second time.
    let lookups = 0;
    const rebinding = async () => (++lookups === 1 ? ["10.0.0.7", "8.8.4.4"] : ["127.0.0.1"]);
    expect(await resolveAllowed("rebind.example", strict, rebinding)).toBe("8.8.4.4");
    expect(lookups).toBe(1);
    const onlyPrivate = async () => ["127.0.0.1", "10.0.0.7"];
    const refusedLookup = resolveAllowed("inside.example", strict, onlyPrivate);
    await expect(refusedLookup).rejects.toBeInstanceOf(OutboundRefused);
    await expect(resolveAllowed("inside.example", strict, onlyPrivate)).rejects.toThrow(
      "refused inside.example: 127.0.0.1 is a loopback address",
    );
  });

  describe("on a production server (NODE_ENV=production, OUTBOUND_ALLOW_PRIVATE unset)", () => {
    let guarded: RunningServer;
    beforeAll(async () => {
      const idp = await devIdp();
      guarded = await startTestServer(productionEnv({ DEV_IDP_URL: idp.url }));
      expect(guarded.services.config.OUTBOUND_ALLOW_PRIVATE).toBe(false);
    });

    test("registering or moving a server to a literal private or special address is a 400 naming host, and nothing is written", async () => {
      const owner = await newUser(guarded);
      const teamId = await newTeam(guarded, owner);
      for (const host of [
        "127.0.0.1",
        "2130706433",
        "127.1",
        "0x7f.1",
        "::ffff:127.0.0.1",
        "10.0.0.5",
        "169.254.169.254",
        "0.0.0.0",
        "fd00:ec2::254",
      ]) {
        const res = await api(guarded, "POST", "/server/servers", {
          token: owner.token,
          body: { team_id: teamId, name: "Inside", host, port: 5432, kind: "single" },
        });
        expectError(res, 400, "bad_request");
        expect(res.body.error.message).toStartWith("host: ");
        expect(res.body.error.details).toMatchObject({ field: "host" });
      }
      const db = guarded.services.database.db;
      expect(await db.select().from(servers).where(eq(servers.teamId, teamId))).toEqual([]);

      const created = await api(guarded, "POST", "/server/servers", {
        token: owner.token,
        body: { team_id: teamId, name: "Outside", host: "8.8.8.8", port: 25565, kind: "single" },
      });
      expect(created.status).toBe(201);
      const moved = await api(guarded, "PATCH", `/server/servers/${created.body.server_id}`, {
        token: owner.token,
        body: { host: "127.1" },
      });
      expectError(moved, 400, "bad_request");
      const [row] = await db.select().from(servers).where(eq(servers.id, created.body.server_id));
      expect(row!.host).toBe("8.8.8.8");
    });

    test("a name that resolves to loopback is refused at ping time with the reason recorded, and nothing connects", async () => {
      const target = await countingListener();
      const s = await newServer(guarded, { host: "localhost", port: target.port });
      const result = await guarded.services.monitoring.checkNow(s.serverId);
      expect(result).toMatchObject({ online: false });
      // The reason, not the address the name resolved to (that would map the service's network).
      expect(result!.error).toBe("refused by policy: localhost may not be reached from this service");
      const [status] = await guarded.services.database.db
        .select()
        .from(serverStatus)
        .where(eq(serverStatus.serverId, s.serverId));
      expect(status).toMatchObject({ online: false, downReason: "refused_by_policy" });
      expect(status!.error).toBe(result!.error);
      expect(target.connections()).toBe(0);
      const read = await api(guarded, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token });
      expect(read.body.status).toMatchObject({ online: false, down_reason: "refused_by_policy" });
    });
  });

  test("outside production (OUTBOUND_ALLOW_PRIVATE unset), loopback names and numeric forms are pinged", async () => {
    expect(server.services.config.OUTBOUND_ALLOW_PRIVATE).toBe(true);
    const mc = await responder({ players: 3 });
    const byName = await newServer(server, { host: "localhost", port: mc.port });
    expect(await server.services.monitoring.checkNow(byName.serverId)).toMatchObject({
      online: true,
      playersOnline: 3,
    });
    const numeric = await newServer(server, { host: "2130706433", port: mc.port });
    expect(await server.services.monitoring.checkNow(numeric.serverId)).toMatchObject({ online: true });
  });
});
