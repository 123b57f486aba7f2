import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rebuildAggregates } from "../src/analytics/aggregates";
import { rowsOf } from "../src/db/rows";
import { dumpAggregates } from "./aggregates-dump";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { agentApi, eventId, newServer } from "./servers-fixture";

describe("agent batches at the same time", () => {
  test("concurrent batches about the same players never fail and keep one open session each", async () => {
    const server = await sharedServer();
    const f = await newServer(server);
    const players = Array.from({ length: 5 }, (_, i) => ({
      uuid: `55555555-5555-4555-8555-00000000000${i}`,
      name: `Racer${i}`,
    }));
    // Twenty batches at once, each joining every player (a plugin that missed its leaves).
    const batches = Array.from({ length: 20 }, () => ({
      events: players.map((p) => ({ event_id: eventId(), type: "join", ...p })),
    }));
    const results = await Promise.all(batches.map((b) => agentApi(server, f.agentToken, "POST", "/agent/events", b)));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(results.reduce((n, r) => n + r.body.accepted, 0)).toBe(100);
    const listed = await api(server, "GET", "/server/players?limit=50", {
      token: f.owner.token,
      headers: { "x-server-id": f.serverId },
    });
    expect(listed.body.players.filter((p: { online: boolean }) => p.online).length).toBe(5);
  }, 30_000);

  test("batches of a network's servers at once, about shared and separate players, never fail; every session is one hop and the aggregates equal a rebuild", async () => {
    const server = await sharedServer();
    const db = server.services.database.db;
    const q = async (text: ReturnType<typeof sql>) => rowsOf<Record<string, unknown>>(await db.execute(text));
    const { a, b } = await twoServerNetwork(server, "Racenet");
    const uuid = (i: number) => `66666666-6666-4666-8666-${i.toString(16).padStart(12, "0")}`;
    const base = Date.parse("2026-05-04T10:00:00Z");
    const at = (s: number) => new Date(base + s * 1000).toISOString();
    // Round r, an hour apart: the first server sees players 0-5, the second 3-8 (3-5 on both,
    // overlapping), each joining and leaving in one batch.
    const batch = (r: number, from: number, offset: number) => ({
      events: Array.from({ length: 6 }, (_, i) => from + i).flatMap((p) => [
        { event_id: eventId(), type: "join", uuid: uuid(p), name: `Hop${p}`, at: at(r * 3600 + offset + p) },
        { event_id: eventId(), type: "leave", uuid: uuid(p), at: at(r * 3600 + offset + 900 + p * 7) },
      ]),
    });
    const sends = Array.from({ length: 6 }, (_, r) => [
      agentApi(server, a.agentToken, "POST", "/agent/events", batch(r, 0, 0)),
      agentApi(server, b.body.agent_token, "POST", "/agent/events", batch(r, 3, 300)),
    ]).flat();
    const results = await Promise.all(sends);
    expect(results.map((r) => `${r.status}`)).toEqual(results.map(() => "200"));
    const [counts] = await q(sql`
      select (select count(*) from player_sessions s join servers sv on sv.id = s.server_id
               where sv.team_id = ${a.teamId})::int as sessions,
             (select count(*) from player_sessions s join servers sv on sv.id = s.server_id
               where sv.team_id = ${a.teamId} and s.left_at is null)::int as open,
             (select count(*) from network_session_hops h join player_sessions s on s.id = h.session_id
                join servers sv on sv.id = s.server_id where sv.team_id = ${a.teamId})::int as hops,
             (select count(distinct h.session_id) from network_session_hops h join player_sessions s on s.id = h.session_id
                join servers sv on sv.id = s.server_id where sv.team_id = ${a.teamId})::int as hopped,
             (select count(*) from network_sessions where team_id = ${a.teamId} and left_at is null)::int as net_open,
             (select sum(sessions) from team_players where team_id = ${a.teamId})::int as directory_sessions`);
    expect(counts).toEqual({ sessions: 72, open: 0, hops: 72, hopped: 72, net_open: 0, directory_sessions: 72 });
    const dump = () => dumpAggregates(db, a.teamId);
    const kept = await dump();
    expect(kept.slots.length).toBeGreaterThan(0);
    expect(kept.activity.length).toBeGreaterThan(0);
    expect(kept.totals.length).toBeGreaterThan(0);
    expect(kept.weeks.length).toBeGreaterThan(0);
    await db.transaction((tx) => rebuildAggregates(tx, a.teamId));
    expect(await dump()).toEqual(kept);
  }, 60_000);

  test("erasing a player while a network's agents send batches about them: every request succeeds and the aggregates equal a rebuild", async () => {
    const server = await sharedServer();
    const db = server.services.database.db;
    const { a, b } = await twoServerNetwork(server, "Erasenet");
    const target = "77777777-7777-4777-8777-000000000001";
    const others = [2, 3, 4].map((i) => `77777777-7777-4777-8777-00000000000${i}`);
    const base = Date.parse("2026-06-01T18:00:00Z");
    const at = (s: number) => new Date(base + s * 1000).toISOString();
    // Round r on one server: the target and the others join and leave, a quarter of an hour each.
    const batch = (r: number, offset: number) => ({
      events: [target, ...others].flatMap((uuid, i) => [
        { event_id: eventId(), type: "join", uuid, name: `Erase${i}`, at: at(r * 3600 + offset + i) },
        { event_id: eventId(), type: "leave", uuid, at: at(r * 3600 + offset + 900 + i) },
      ]),
    });
    const send = (token: string, r: number, offset: number) =>
      agentApi(server, token, "POST", "/agent/events", batch(r, offset));
    // The erasure takes the team's server rows (in id order) before anything else, and each batch
    // holds its server's row: they take turns, in whatever order they arrive, and the erasure's
    // network and player locks come after. Whatever the order, nothing fails and the kept
    // aggregates equal a rebuild from the sessions left.
    // History first, then three times: both servers' batches at once with an erasure among them.
    for (let r = 0; r < 3; r++) {
      expect((await send(a.agentToken, r, 0)).status).toBe(200);
      expect((await send(b.body.agent_token, r, 1200)).status).toBe(200);
    }
    for (let round = 0; round < 3; round++) {
      const r0 = 3 + round * 4;
      const results = await Promise.all([
        ...[0, 1, 2, 3].flatMap((k) => [send(a.agentToken, r0 + k, 0), send(b.body.agent_token, r0 + k, 1200)]),
        api(server, "POST", `/players/${target}/erase`, { token: a.owner.token, headers: { "x-team-id": a.teamId } }),
      ]);
      expect(results.map((r) => `${r.status} ${r.status === 200 ? "" : r.text}`)).toEqual(results.map(() => "200 "));
    }
    const kept = await dumpAggregates(db, a.teamId);
    expect(kept.hours.length).toBeGreaterThan(0);
    await db.transaction((tx) => rebuildAggregates(tx, a.teamId));
    expect(await dumpAggregates(db, a.teamId)).toEqual(kept);
  }, 120_000);
});

/** A network of two servers in a new team: `a` (the fixture, with the owner) and `b` (its agent token). */
async function twoServerNetwork(server: Awaited<ReturnType<typeof sharedServer>>, name: string) {
  const network = `${name} ${crypto.randomUUID().slice(0, 8)}`;
  const a = await newServer(server, { kind: "network", network_name: network });
  const b = await api(server, "POST", "/server/servers", {
    token: a.owner.token,
    body: { team_id: a.teamId, name: "Second", host: "127.0.0.1", port: 9, kind: "network", network_name: network },
  });
  expect(`${b.status} ${b.text}`).toStartWith("201");
  return { a, b };
}
