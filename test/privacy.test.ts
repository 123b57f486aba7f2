import { beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rebuildAggregates } from "../src/analytics/aggregates";
import { dumpAggregates } from "./aggregates-dump";
import type { RunningServer } from "../src/app";
import { rowsOf } from "../src/db/rows";
import { playerSummary } from "../src/player-history/summary";
import { sharedServer } from "./harness";
import { addMember, api, expectError, newApiKey, newUser } from "./helpers";
import { agentApi, eventId, newServer, type ServerFixture } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});
const db = () => server.services.database.db;

type Ev =
  | { type: "join"; uuid: string; name: string; at: number }
  | { type: "leave"; uuid: string; at: number }
  | { type: "ban"; uuid: string; name: string; reason?: string; at: number };
const send = async (s: { agentToken: string }, events: (Ev & Record<string, unknown>)[]) => {
  const res = await agentApi(server, s.agentToken, "POST", "/agent/events", {
    events: events.map((e) => ({ event_id: eventId(), ...e, at: new Date(e.at).toISOString() })),
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
  return res.body as { accepted: number; duplicates: number; opted_out?: number };
};
const session = (uuid: string, name: string, from: number, to: number): Ev[] => [
  { type: "join", uuid, name, at: from },
  { type: "leave", uuid, at: to },
];
const asTeam = (s: ServerFixture, token = s.owner.token) => ({ token, headers: { "x-team-id": s.teamId } });

/**
 * The month rows' counts of `analytics_month_counts` rows, without the slots' milliseconds: the
 * player retention job leaves the slots' time online (it names nobody), a rebuild does not.
 */
const monthCounts = (rows: Record<string, unknown>[]) =>
  rows.filter((r) => r.players !== 0 || r.firsts !== 0).map(({ ms: _, ...r }) => r);

/** A second server in the fixture's team. */
async function sibling(s: ServerFixture, name = "Lobby", body: Record<string, unknown> = { kind: "single" }) {
  const res = await api(server, "POST", "/server/servers", {
    token: s.owner.token,
    body: { team_id: s.teamId, name, host: "127.0.0.1", port: 9, ...body },
  });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return { serverId: res.body.server_id as string, agentToken: res.body.agent_token as string };
}

/**
 * Every column of every table in the database that could hold a UUID (uuid, text, varchar,
 * json, jsonb and arrays, read as text), searched for `uuid` with and without dashes: the
 * tables and columns holding it, with how many rows. Generic on purpose: a table added later
 * that keeps a player's UUID is found without anyone listing it.
 */
async function whereHeld(uuid: string): Promise<Record<string, number>> {
  const columns = rowsOf<{ table_name: string; column_name: string }>(
    await db().execute(sql`
      select c.table_name, c.column_name from information_schema.columns c
        join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
       where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
         and c.data_type in ('uuid', 'text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea')
       order by c.table_name, c.column_name`),
  );
  expect(columns.length).toBeGreaterThan(50);
  const found: Record<string, number> = {};
  const needles = [uuid.toLowerCase(), uuid.toLowerCase().replaceAll("-", "")];
  for (const { table_name, column_name } of columns) {
    const col = sql.identifier(column_name);
    const [{ n }] = rowsOf<{ n: number }>(
      await db().execute(
        sql`select count(*)::int as n from ${sql.identifier(table_name)}
             where strpos(lower(${col}::text), ${needles[0]}) > 0 or strpos(lower(${col}::text), ${needles[1]}) > 0`,
      ),
    ) as [{ n: number }];
    if (n > 0) found[`${table_name}.${column_name}`] = n;
  }
  return found;
}

describe("export and erasure", () => {
  test("the export holds what was stored; after erasure only the ban's tombstone holds the UUID, and the ban still holds", async () => {
    const s = await newServer(server);
    const lobby = await sibling(s);
    const steve = crypto.randomUUID();
    const alex = crypto.randomUUID();
    // 10:00 UTC three days ago: every session below stays inside its UTC day (from 21:00 on, the
    // day's sessions crossed midnight and made a fifth player-day).
    const t0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 3 * 86_400_000 + 10 * 3_600_000;
    await send(s, [
      ...session(steve, "Steve", t0, t0 + 3600_000),
      ...session(alex, "Alex", t0 + 600_000, t0 + 1800_000),
      ...session(steve, "Steve", t0 + 86_400_000, t0 + 86_400_000 + 600_000),
    ]);
    await send(lobby, session(steve, "Steve", t0 + 7200_000, t0 + 9000_000));
    // A server of a network (network sessions), a network ban and a moderator's note.
    const realm = await api(server, "POST", "/server/servers", {
      token: s.owner.token,
      body: { team_id: s.teamId, name: "Realm", host: "127.0.0.1", port: 9, kind: "network", network_name: "Realm" },
    });
    expect(`${realm.status} ${realm.text}`).toStartWith("201");
    await send({ agentToken: realm.body.agent_token }, session(steve, "Steve", t0 + 10_000_000, t0 + 10_600_000));
    const networkBan = await api(server, "POST", "/server/networks/Realm/bans", {
      ...asTeam(s),
      body: { uuid: steve, name: "Steve", reason: "Griefing the realm" },
    });
    expect(`${networkBan.status} ${networkBan.text}`).toStartWith("201");
    const note = await api(server, "POST", `/players/${steve}/notes`, {
      ...asTeam(s),
      body: { text: "Steve asked about the spawn rules" },
    });
    expect(`${note.status} ${note.text}`).toStartWith("201");
    // A webhook endpoint, so ban events are stored as messages naming the player.
    const hook = await api(server, "POST", `/teams/${s.teamId}/webhooks`, {
      token: s.owner.token,
      body: { url: "http://127.0.0.1:9/hook" },
    });
    expect(`${hook.status} ${hook.text}`).toStartWith("201");
    // A ban with an Idempotency-Key: its sealed answer names the player.
    const ban = await api(server, "POST", "/server/bans", {
      ...s.as(),
      headers: { ...s.as().headers, "idempotency-key": `ban-${steve}` },
      body: { uuid: steve, name: "Steve", reason: "Griefing the spawn" },
    });
    expect(`${ban.status} ${ban.text}`).toStartWith("201");
    const kick = await api(server, "POST", "/server/kicks", { ...s.as(), body: { uuid: steve, name: "Steve" } });
    expect(kick.status).toBe(201);
    await server.services.webhooks.flush();
    expect(Object.keys(await whereHeld(steve))).toEqual(
      expect.arrayContaining([
        "player_sessions.uuid",
        "player_days.uuid",
        "players.uuid",
        "bans.uuid",
        "kicks.uuid",
        "audit_log.target_id",
        "webhook_messages.payload",
        "team_players.uuid",
        "player_names.uuid",
        "moderation_events.uuid",
        "player_notes.uuid",
        "network_sessions.uuid",
        "network_bans.uuid",
        "analytics_player_hours.uuid",
      ]),
    );

    const exported = await api(server, "GET", `/players/${steve.toUpperCase()}/export`, asTeam(s));
    expect(`${exported.status} ${exported.text}`).toStartWith("200");
    const h = exported.body.holders;
    expect(exported.body.uuid).toBe(steve);
    expect(h.player_sessions).toHaveLength(4);
    expect(h.player_notes).toMatchObject([{ text: "Steve asked about the spawn rules" }]);
    expect(h.network_bans).toMatchObject([{ network_name: "Realm", name: "Steve", reason: "Griefing the realm" }]);
    expect(h.network_sessions).toHaveLength(1);
    expect(h.player_names).toMatchObject([{ name: "Steve" }]);
    expect(h.players.map((p: any) => [p.name, p.play_seconds]).sort()).toEqual(
      [
        ["Steve", 1800],
        ["Steve", 4200],
        ["Steve", 600],
      ].sort(),
    );
    expect(h.player_days.length).toBe(4);
    expect(h.bans).toMatchObject([{ name: "Steve", reason: "Griefing the spawn", origin: "dashboard" }]);
    expect(h.kicks).toHaveLength(1);
    expect(h.audit_log.map((e: any) => e.action).sort()).toEqual([
      "network.ban",
      "player.ban",
      "player.kick",
      "player.note_add",
    ]);
    expect(h.webhook_messages.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(h)).not.toContain(alex);

    const erased = await api(server, "POST", `/players/${steve}/erase`, asTeam(s));
    expect(`${erased.status} ${erased.text}`).toStartWith("200");
    expect(erased.body.player_ref).toBe(exported.body.player_ref);
    expect(erased.text).not.toContain(steve);
    expect(erased.body.erased).toMatchObject({
      player_sessions: 4,
      player_days: 4,
      players: 3,
      network_bans: 1,
      player_notes: 1,
      kicks: 1,
      bans: 1,
      idempotency_keys: 1,
    });
    expect(erased.body.erased.audit_log).toBeGreaterThanOrEqual(2);

    await server.services.webhooks.flush();
    // The proof: nothing in any table holds the UUID but the bans' tombstones.
    expect(await whereHeld(steve)).toEqual({ "bans.uuid": 1, "network_bans.uuid": 1 });
    // The other player is untouched.
    expect(await whereHeld(alex)).toMatchObject({ "players.uuid": 1, "player_sessions.uuid": 1 });

    // The ban still holds: the agent's config carries it, under a placeholder name.
    const config = await agentApi(server, s.agentToken, "GET", "/agent/config");
    expect(config.body.bans).toMatchObject([{ uuid: steve, name: "(erased)", reason: "(erased)" }]);

    // Recorded, under the reference: the export and the erasure.
    const audit = await api(server, "GET", `/teams/${s.teamId}/audit?target_id=${erased.body.player_ref}`, {
      token: s.owner.token,
    });
    const actions = audit.body.entries.map((e: any) => e.action);
    expect(actions.slice(0, 2)).toEqual(["player.erase", "player.export"]);
    expect(actions).toEqual(expect.arrayContaining(["player.kick", "player.ban"]));
    expect(audit.body.entries[0].changes.player_sessions).toEqual({ before: 4, after: 0 });
    expect(audit.text).not.toContain(steve);

    // Erasing again is fine and finds nothing left to change.
    const again = await api(server, "POST", `/players/${steve}/erase`, asTeam(s));
    expect(again.status).toBe(200);
    expect(Object.values(again.body.erased).every((n) => n === 0)).toBe(true);
    expect(await whereHeld(steve)).toEqual({ "bans.uuid": 1, "network_bans.uuid": 1 });
  });

  test("the aggregates after erasure equal those of a server that never had the player", async () => {
    const a = await newServer(server);
    const b = await newServer(server);
    const gone = crypto.randomUUID();
    const [x, y] = [crypto.randomUUID(), crypto.randomUUID()];
    const day = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 2 * 86_400_000;
    const shared: Ev[] = [
      ...session(x, "Xavier", day + 3600_000, day + 7200_000),
      ...session(y, "Yara", day + 5400_000, day + 9000_000),
      // Across midnight into the next day.
      ...session(x, "Xavier", day + 86_400_000 - 1800_000, day + 86_400_000 + 1800_000),
    ];
    // The erased player made the peak of the first day (3 at once) and is the only one on the third.
    const extra: Ev[] = [
      ...session(gone, "Gone", day + 6000_000, day + 6600_000),
      ...session(gone, "Gone", day + 2 * 86_400_000 + 60_000, day + 2 * 86_400_000 + 120_000),
    ];
    await send(
      a,
      [...shared, ...extra].sort((p, q) => p.at - q.at),
    );
    await send(b, shared);
    const days = async (serverId: string) =>
      rowsOf<Record<string, unknown>>(
        await db().execute(
          sql`select day::text as day, players, playtime_us::text as us, peak from server_days where server_id = ${serverId} order by day`,
        ),
      );
    const before = await days(a.serverId);
    expect(before.find((d) => d.peak === 3)).toBeDefined();
    expect(before.length).toBe(3);

    const erased = await api(server, "POST", `/players/${gone}/erase`, asTeam(a));
    expect(erased.status).toBe(200);
    expect(erased.body.erased.server_days).toBe(2);
    expect(await days(a.serverId)).toEqual(await days(b.serverId));

    // The player summary (as GET /server/players/summary answers it) over the same window.
    const now = new Date();
    const from = new Date(now.getTime() - 7 * 86_400_000);
    const summary = (f: ServerFixture) => playerSummary(db(), f.serverId, from, now);
    expect(await summary(a)).toEqual(await summary(b));
  });

  test("an erased player's open session is gone, and a later join starts them afresh", async () => {
    const s = await newServer(server);
    const p = crypto.randomUUID();
    await send(s, [{ type: "join", uuid: p, name: "Online", at: Date.now() - 60_000 }]);
    expect((await api(server, "POST", `/players/${p}/erase`, asTeam(s))).body.erased.player_sessions).toBe(1);
    expect(await whereHeld(p)).toEqual({});
    // The leave of the erased session finds nothing to close and keeps nothing.
    await send(s, [{ type: "leave", uuid: p, at: Date.now() }]);
    expect(await whereHeld(p)).toEqual({});
  });

  test("an erasure under a steady stream of webhook events returns, and the events emitted before it that name the player are scrubbed", async () => {
    const s = await newServer(server);
    const hook = await api(server, "POST", `/teams/${s.teamId}/webhooks`, {
      token: s.owner.token,
      body: { url: "http://127.0.0.1:9/hook" },
    });
    expect(`${hook.status} ${hook.text}`).toStartWith("201");
    const p = crypto.randomUUID();
    const ban = await api(server, "POST", "/server/bans", { ...s.as(), body: { uuid: p, name: "Streamed" } });
    expect(`${ban.status} ${ban.text}`).toStartWith("201");
    // Events of the team keep coming while the erasure runs: it waits for those emitted before it
    // (the ban's), not for a queue that is never empty.
    let streaming = true;
    let emitted = 0;
    const stream = (async () => {
      while (streaming) {
        for (let i = 0; i < 5; i++)
          server.services.webhooks.emit({ teamId: s.teamId }, "player.banned", {
            uuid: crypto.randomUUID(),
            n: emitted++,
          });
        await Bun.sleep(1);
      }
    })();
    const erased = await Promise.race([
      api(server, "POST", `/players/${p}/erase`, asTeam(s)),
      Bun.sleep(20_000).then(() => null),
    ]);
    streaming = false;
    await stream;
    expect(erased && `${erased.status} ${erased.text}`).toStartWith("200");
    expect(emitted).toBeGreaterThan(0);
    await server.services.webhooks.flush();
    expect(await whereHeld(p)).toEqual({ "bans.uuid": 1 });
  }, 60_000);

  test("export and erase are for admins: a moderator and a viewer get 403, another team's admin 403", async () => {
    const s = await newServer(server);
    const p = crypto.randomUUID();
    const moderator = await newUser(server, "mod");
    await addMember(server, s.owner, s.teamId, moderator, "moderator");
    const stranger = await newServer(server);
    for (const token of [moderator.token, stranger.owner.token]) {
      expectError(await api(server, "GET", `/players/${p}/export`, asTeam(s, token)), 403, "forbidden");
      expectError(await api(server, "POST", `/players/${p}/erase`, asTeam(s, token)), 403, "forbidden");
    }
    const scoped = await newApiKey(server, s.owner, s.teamId, { scopes: ["players:export"] });
    expect((await api(server, "GET", `/players/${p}/export`, asTeam(s, scoped.key))).status).toBe(200);
    expectError(await api(server, "POST", `/players/${p}/erase`, asTeam(s, scoped.key)), 403, "forbidden");
    expectError(await api(server, "GET", "/players/not-a-uuid/export", asTeam(s)), 400);
    expectError(await api(server, "POST", `/players/${p}/erase`, { token: s.owner.token }), 400);
  });
});

describe("opt-outs", () => {
  test("the ingest drops an opted-out player's joins and leaves and their ping samples; bans still apply; the agent is told", async () => {
    const s = await newServer(server);
    const quiet = crypto.randomUUID();
    const other = crypto.randomUUID();
    const moderator = await newUser(server, "mod");
    await addMember(server, s.owner, s.teamId, moderator, "moderator");
    // Online when the opt-out is made: the session is closed then.
    await send(s, [{ type: "join", uuid: quiet, name: "Quiet", at: Date.now() - 120_000 }]);
    const add = await api(server, "POST", `/teams/${s.teamId}/opt-outs`, {
      token: moderator.token,
      body: { uuid: quiet.toUpperCase(), name: "Quiet" },
    });
    expect(`${add.status} ${add.text}`).toStartWith("201");
    expect(add.body).toMatchObject({ uuid: quiet, name: "Quiet" });
    const open = rowsOf<{ n: number }>(
      await db().execute(sql`select count(*)::int as n from player_sessions where uuid = ${quiet} and left_at is null`),
    );
    expect(open[0]!.n).toBe(0);
    const sessionsBefore = (await whereHeld(quiet))["player_sessions.uuid"];

    const now = Date.now();
    const result = await send(s, [
      ...session(quiet, "Quiet", now - 50_000, now - 40_000),
      ...session(other, "Other", now - 50_000, now - 40_000),
      { type: "ban", uuid: quiet, name: "Quiet", reason: "Spam", at: now - 30_000 },
    ]);
    expect(result).toEqual({ accepted: 3, duplicates: 0, opted_out: 2 });
    expect((await whereHeld(quiet))["player_sessions.uuid"]).toBe(sessionsBefore);
    expect((await whereHeld(other))["player_sessions.uuid"]).toBe(1);
    const bans = await api(server, "GET", "/server/players", s.as());
    expect(bans.body.bans.map((b: any) => b.uuid)).toEqual([quiet]);

    // A ping sample that lists both: only the other player becomes a session.
    const lobby = await sibling(s, "Ping only");
    await server.services.playerHistory.fromSamples([
      {
        serverId: lobby.serverId,
        result: {
          online: true,
          playersOnline: 2,
          sample: [
            { uuid: quiet, name: "Quiet" },
            { uuid: other, name: "Other" },
          ],
        },
      },
    ]);
    const onLobby = rowsOf<{ uuid: string }>(
      await db().execute(sql`select uuid::text as uuid from player_sessions where server_id = ${lobby.serverId}`),
    );
    expect(onLobby.map((r) => r.uuid)).toEqual([other]);

    const config = await agentApi(server, s.agentToken, "GET", "/agent/config");
    expect(config.body.opt_outs).toEqual([quiet]);
    const list = await api(server, "GET", `/teams/${s.teamId}/opt-outs`, { token: moderator.token });
    expect(list.body.opt_outs).toMatchObject([{ uuid: quiet, name: "Quiet" }]);

    // Taking a player off the list is for admins; then their joins are kept again.
    expectError(
      await api(server, "DELETE", `/teams/${s.teamId}/opt-outs/${quiet}`, { token: moderator.token }),
      403,
      "forbidden",
    );
    const removed = await api(server, "DELETE", `/teams/${s.teamId}/opt-outs/${quiet}`, { token: s.owner.token });
    expect(removed.status).toBe(200);
    expectError(await api(server, "DELETE", `/teams/${s.teamId}/opt-outs/${quiet}`, { token: s.owner.token }), 404);
    expect((await send(s, session(quiet, "Quiet", now - 20_000, now - 10_000))).opted_out).toBeUndefined();
    const audit = await api(server, "GET", `/teams/${s.teamId}/audit?target_id=${quiet}`, { token: s.owner.token });
    expect(audit.body.entries.map((e: any) => e.action)).toContain("player.opt_out");
    expect(audit.body.entries.map((e: any) => e.action)).toContain("player.opt_in");
  });

  test("erasing an opted-out player keeps the opt-out (without its name) and the ban, nothing else", async () => {
    const s = await newServer(server);
    const p = crypto.randomUUID();
    await send(s, session(p, "Leaving", Date.now() - 600_000, Date.now() - 300_000));
    await api(server, "POST", `/teams/${s.teamId}/opt-outs`, {
      token: s.owner.token,
      body: { uuid: p, name: "Leaving" },
    });
    await api(server, "POST", "/server/bans", { ...s.as(), body: { uuid: p, name: "Leaving" } });
    expect((await api(server, "POST", `/players/${p}/erase`, asTeam(s))).status).toBe(200);
    expect(await whereHeld(p)).toEqual({ "bans.uuid": 1, "player_opt_outs.uuid": 1 });
    const list = await api(server, "GET", `/teams/${s.teamId}/opt-outs`, { token: s.owner.token });
    expect(list.body.opt_outs).toMatchObject([{ uuid: p, name: null }]);
  });
});

describe("retention", () => {
  test("a team's session retention removes older sessions; its player retention forgets players and rebuilds the days", async () => {
    const s = await newServer(server);
    const old = crypto.randomUUID();
    const recent = crypto.randomUUID();
    // Today's noon (UTC): no session below crosses a midnight, so each is one day's row whatever the
    // hour of the run (from 23:00 an hour's session did, and the days were four; seen at 23:50).
    const now = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 12 * 3_600_000;
    await send(s, [
      ...session(old, "Old", now - 20 * 86_400_000, now - 20 * 86_400_000 + 3600_000),
      ...session(recent, "Recent", now - 20 * 86_400_000, now - 20 * 86_400_000 + 600_000),
      ...session(recent, "Recent", now - 86_400_000, now - 86_400_000 + 600_000),
    ]);
    const get = await api(server, "GET", `/teams/${s.teamId}/privacy`, { token: s.owner.token });
    expect(get.body).toMatchObject({
      session_retention_days: null,
      player_retention_days: null,
      effective_player_retention_days: server.services.config.PLAYER_DATA_MAX_RETENTION_DAYS,
    });
    const tooLong = await api(server, "PUT", `/teams/${s.teamId}/privacy`, {
      token: s.owner.token,
      body: { player_retention_days: server.services.config.PLAYER_DATA_MAX_RETENTION_DAYS + 1 },
    });
    expect(expectError(tooLong, 400, "validation_failed").details.issues[0].path).toBe("player_retention_days");
    const put = await api(server, "PUT", `/teams/${s.teamId}/privacy`, {
      token: s.owner.token,
      body: { player_retention_days: 10 },
    });
    expect(`${put.status} ${put.text}`).toStartWith("200");
    expect(put.body).toMatchObject({ player_retention_days: 10, effective_player_retention_days: 10 });

    // The per-player aggregates (the month rows, the activity groups): after the job, what a rebuild
    // from the hours left makes. Old's hour puts them in a group (irregular) for three Mondays.
    const aggregates = async () => ({
      months: rowsOf(
        await db().execute(sql`select scope, month::text, uuid::text, ms::text, first_at::text, last_at::text, prev_at::text, prev_ms::text, pair_ms::text
          from analytics_player_months where team_id = ${s.teamId} order by 1, 2, 3`),
      ),
      totals: rowsOf(
        await db().execute(sql`select scope, uuid::text, ms::text from analytics_player_totals
          where team_id = ${s.teamId} order by 1, 2`),
      ),
      weeks: rowsOf(
        await db().execute(sql`select scope, week::text, uuid::text, ms::text, first_at::text, last_at::text, next_at::text, ms1::text, ms2::text, ms3::text, g0, g1, g2, g3 from analytics_player_weeks
          where team_id = ${s.teamId} order by 1, 2, 3`),
      ),
      activity: rowsOf(
        await db().execute(sql`select scope, week::text, very_active, active, regular, irregular from analytics_activity_weeks
          where team_id = ${s.teamId} and (very_active, active, regular, irregular) <> (0, 0, 0, 0) order by 1, 2`),
      ),
      // Retention's kept counts (two players first seen that day; one forgotten), and the month
      // rows' counts.
      cohorts: (await dumpAggregates(db(), s.teamId)).cohorts,
      counts: monthCounts((await dumpAggregates(db(), s.teamId)).counts),
    });
    expect((await aggregates()).activity.length).toBeGreaterThan(0);
    const cohortsBefore = JSON.stringify((await aggregates()).cohorts);
    const result = await server.services.monitoring.retention();
    expect(result.forgotten_players).toBeGreaterThanOrEqual(1);
    expect(await whereHeld(old)).toEqual({});
    const kept = await aggregates();
    expect(kept.months.length).toBeGreaterThan(0);
    expect(kept.totals.length).toBeGreaterThan(0);
    expect(kept.weeks.length).toBeGreaterThan(0);
    expect(kept.cohorts.length).toBeGreaterThan(0);
    expect(JSON.stringify(kept.cohorts)).not.toBe(cohortsBefore);
    expect(kept.counts.length).toBeGreaterThan(0);
    await db().transaction((tx) => rebuildAggregates(tx, s.teamId));
    expect(await aggregates()).toEqual(kept);
    expect((await whereHeld(recent))["player_sessions.uuid"]).toBe(2);
    const days = rowsOf<{ players: number }>(
      await db().execute(sql`select players from server_days where server_id = ${s.serverId} order by day`),
    );
    expect(days.map((d) => d.players)).toEqual([1, 1]);

    await api(server, "PUT", `/teams/${s.teamId}/privacy`, {
      token: s.owner.token,
      body: { session_retention_days: 5 },
    });
    await server.services.monitoring.retention();
    expect((await whereHeld(recent))["player_sessions.uuid"]).toBe(1);
    const left = rowsOf<{ n: number }>(
      await db().execute(sql`select count(*)::int as n from server_days where server_id = ${s.serverId}`),
    );
    expect(left[0]!.n).toBe(1);
    const audit = await api(server, "GET", `/teams/${s.teamId}/audit?action=team.privacy`, { token: s.owner.token });
    expect(audit.body.entries).toHaveLength(2);
  });

  test("a player forgotten on one server of a network keeps the other's rows: month rows and their counts as a rebuild makes them", async () => {
    const realm = { kind: "network", network_name: "Realm" };
    const s = await newServer(server, realm);
    const lobby = await sibling(s, "Lobby", realm);
    const p = crypto.randomUUID();
    // Today's noon (UTC), so yesterday's ten minutes on the lobby never cross a month's end (run
    // from 23:50 on a month's first day they would, and make two month rows).
    const now = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 12 * 3_600_000;
    // Seen on the first server 40 and 20 days ago, on the lobby yesterday: the job forgets them
    // on the first server only, and makes their network rows again from the lobby's hours.
    await send(s, [
      ...session(p, "Roamer", now - 40 * 86_400_000, now - 40 * 86_400_000 + 3_600_000),
      ...session(p, "Roamer", now - 20 * 86_400_000, now - 20 * 86_400_000 + 1_800_000),
    ]);
    await send(lobby, session(p, "Roamer", now - 86_400_000, now - 86_400_000 + 600_000));
    const counts = async () => monthCounts((await dumpAggregates(db(), s.teamId)).counts);
    const before = await counts();
    await api(server, "PUT", `/teams/${s.teamId}/privacy`, {
      token: s.owner.token,
      body: { player_retention_days: 10 },
    });
    expect((await server.services.monitoring.retention()).forgotten_players).toBeGreaterThanOrEqual(1);
    // The per-player rows (the slots keep the time online, which names nobody).
    const perPlayer = async () => {
      const { months, totals, weeks, counts } = await dumpAggregates(db(), s.teamId);
      return { months, totals, weeks, counts: monthCounts(counts) };
    };
    const kept = await perPlayer();
    // The network's rows now start yesterday: one month row (and one count) where there were more.
    expect(kept.counts.filter((c) => String(c.scope).startsWith("n:")).reduce((a, c) => a + Number(c.players), 0)).toBe(
      1,
    );
    expect(kept.counts).not.toEqual(before);
    await db().transaction((tx) => rebuildAggregates(tx, s.teamId));
    expect(await perPlayer()).toEqual(kept);
  });

  test("setting retention is for admins", async () => {
    const s = await newServer(server);
    const moderator = await newUser(server, "mod");
    await addMember(server, s.owner, s.teamId, moderator, "moderator");
    expectError(
      await api(server, "PUT", `/teams/${s.teamId}/privacy`, {
        token: moderator.token,
        body: { session_retention_days: 3 },
      }),
      403,
      "forbidden",
    );
    expect((await api(server, "GET", `/teams/${s.teamId}/privacy`, { token: moderator.token })).status).toBe(200);
  });
});

describe("no IP address is kept", () => {
  test("address fields an agent sends are dropped: nothing in the database holds them", async () => {
    const s = await newServer(server);
    const p = crypto.randomUUID();
    const ip = "203.0.113.77";
    const res = await send(s, [
      { type: "join", uuid: p, name: "Addr", at: Date.now() - 60_000, ip, address: `/${ip}:51234` },
      { type: "leave", uuid: p, at: Date.now() - 30_000, ip },
    ]);
    expect(res.accepted).toBe(2);
    expect(await whereHeld(ip)).toEqual({});
  });
});
