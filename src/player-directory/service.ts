import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { playerNotes, servers } from "../db/schema";
import { rowsOf } from "../db/rows";
import { audit, actorName } from "../audit/entry";
import type { AuditActor } from "../audit/scope";
import { type Principal, type Role, roleAtLeast } from "../auth/principal";
import { requireTeamRole } from "../teams/access";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { type DirectorySort, DIRECTORY_SORTS } from "./schemas";
import { editionOf, resolveName } from "./resolve";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RECENT_SESSIONS = 10;
const CURSOR_VERSION = "d1";
const SESSION_CURSOR = "ps1.";

/**
 * How each sort orders the directory: the indexed expression, the same value as text for the
 * cursor (a time to the microsecond, as stored), how the cursor's text is read back, and its
 * shape (anything else is not a cursor we issued).
 */
const SORTS: Record<DirectorySort, { key: SQL; text: SQL; back: (v: string) => SQL; shape: RegExp }> = {
  last_seen: {
    key: sql`tp.last_seen`,
    text: sql`to_char(tp.last_seen at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    back: (v) => sql`${v}::timestamptz`,
    shape: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/,
  },
  playtime: {
    key: sql`tp.play_seconds`,
    text: sql`tp.play_seconds::text`,
    back: (v) => sql`${v}::bigint`,
    shape: /^\d{1,18}$/,
  },
  sessions: { key: sql`tp.sessions`, text: sql`tp.sessions::text`, back: (v) => sql`${v}::int`, shape: /^\d{1,10}$/ },
  name: {
    key: sql`lower(tp.name) collate "C"`,
    text: sql`lower(tp.name)`,
    back: (v) => sql`(${v}::text collate "C")`,
    // No control characters (PostgreSQL text holds no NUL) and no lone surrogates.
    shape: /^[^\u0000-\u001f\ud800-\udfff]{1,200}$/u,
  },
};

interface DirectoryCursor {
  sort: DirectorySort;
  order: "asc" | "desc";
  value: string;
  uuid: string;
}

/** Opaque to callers: the sort, the order and the last row's sort value and UUID, base64url JSON. */
const encodeCursor = (c: DirectoryCursor) =>
  Buffer.from(JSON.stringify([CURSOR_VERSION, c.sort, c.order, c.value, c.uuid])).toString("base64url");

const badCursor = (why = "it is not one this endpoint issued") =>
  new AppError("bad_request", `cursor: ${why}; start again without it.`, { details: { field: "cursor" } });

function decodeCursor(text: string): DirectoryCursor {
  let parsed: unknown;
  try {
    parsed = /^[A-Za-z0-9_-]+$/.test(text) ? JSON.parse(Buffer.from(text, "base64url").toString("utf8")) : null;
  } catch {
    throw badCursor();
  }
  if (!Array.isArray(parsed) || parsed.length !== 5 || parsed[0] !== CURSOR_VERSION) throw badCursor();
  const [, sort, order, value, uuid] = parsed;
  if (!(DIRECTORY_SORTS as readonly unknown[]).includes(sort) || (order !== "asc" && order !== "desc"))
    throw badCursor();
  if (typeof value !== "string" || !SORTS[sort as DirectorySort].shape.test(value)) throw badCursor();
  // A time must be one: the shape alone lets 2026-13-45 through.
  if (sort === "last_seen") {
    const t = new Date(value);
    if (Number.isNaN(t.getTime()) || t.toISOString().slice(0, 23) !== value.slice(0, 23)) throw badCursor();
  }
  if (typeof uuid !== "string" || !UUID.test(uuid)) throw badCursor();
  return { sort, order, value, uuid };
}

type Time = string | Date;
type Num = string | number;
/** Rows as the drivers return raw SQL (snake_case; numbers may come as text). */
interface DirRow {
  team_id: string;
  uuid: string;
  name: string;
  first_seen: Time;
  last_seen: Time;
  play_seconds: Num;
  sessions: Num;
  cursor_value?: string;
  open_sessions: Num;
  running: Num;
  banned: boolean;
}
interface SessionRow {
  id: string;
  server_id: string;
  server_name: string;
  uuid: string;
  name: string | null;
  joined_at: Time;
  left_at: Time | null;
  source: "agent" | "ping";
  end_reason: "leave" | "rejoin" | "agent_silent" | "not_seen" | "server_offline" | null;
  running: Num;
}
interface NameRow {
  name: string;
  first_used: Time;
  last_used: Time;
}
interface ServerPlayRow {
  server_id: string;
  server_name: string;
  first_seen: Time;
  last_seen: Time;
  play_seconds: Num;
  sessions: Num;
  running: Num | null;
}
interface BanInForceRow {
  server_id: string;
  server_name: string;
  uuid: string;
  name: string;
  reason: string;
  source: string;
  origin: "dashboard" | "game";
  created_at: Time;
  expires_at: Time | null;
}
interface ModerationRow {
  id: string;
  action: "ban" | "unban" | "kick";
  server_id: string | null;
  server_name: string;
  name: string | null;
  origin: "dashboard" | "game";
  actor_kind: "user" | "api_key" | "agent" | "system";
  actor_id: string | null;
  actor_name: string;
  reason: string | null;
  source: string | null;
  expires_at: Time | null;
  at: Time;
}
interface NoteRow {
  id: string;
  text: string;
  author_kind: "user" | "api_key" | "agent" | "system";
  author_id: string | null;
  author_name: string;
  created_at: Time;
}

const when = (v: Time) => iso(new Date(v));
const seconds = (v: unknown) => Math.max(0, Math.round(Number(v ?? 0)));

const actorOf = (principal: Principal): AuditActor =>
  principal.kind === "user" ? { kind: "user", id: principal.userId } : { kind: "api_key", id: principal.keyId };

const inForce = sql`b.lifted_at is null and (b.expires_at is null or b.expires_at > now())`;

/**
 * The team's player directory and player pages (docs/players.md): read from `team_players`,
 * `player_names`, `moderation_events` and `player_notes`, which the ingest keeps
 * (./ingest.ts), and from the per-server tables for what is live (who is online, bans in force).
 */
export class PlayerDirectoryService {
  constructor(private readonly db: Db) {}

  /** A team read: the role, and a key limited to some servers is refused (this is every server's data). */
  private async gate(principal: Principal, teamId: string, min: Role): Promise<Role> {
    const role = await requireTeamRole(this.db, principal, teamId, min);
    if (principal.kind === "api_key" && principal.serverIds)
      throw new AppError(
        "forbidden",
        "This API key is limited to some servers; the team's players span all of them. Use /server/players.",
      );
    return role;
  }

  /** Live columns of a directory row (`alias` names it): online now, time of the open sessions, a ban in force. */
  private live(alias: string) {
    const tp = sql.raw(alias);
    return sql`
      (select count(*) from player_sessions ps join servers sv on sv.id = ps.server_id
        where sv.team_id = ${tp}.team_id and ps.uuid = ${tp}.uuid and ps.left_at is null)::int as open_sessions,
      (select coalesce(sum(extract(epoch from now() - ps.joined_at)), 0) from player_sessions ps join servers sv on sv.id = ps.server_id
        where sv.team_id = ${tp}.team_id and ps.uuid = ${tp}.uuid and ps.left_at is null)::float8 as running,
      exists (select 1 from bans b join servers sv on sv.id = b.server_id
               where sv.team_id = ${tp}.team_id and b.uuid = ${tp}.uuid and ${inForce}) as banned`;
  }

  private rowOut(r: DirRow) {
    return {
      uuid: r.uuid,
      name: r.name,
      edition: editionOf(r.uuid),
      first_seen: when(r.first_seen),
      last_seen: when(r.last_seen),
      online: Number(r.open_sessions) > 0,
      playtime_seconds: Number(r.play_seconds) + seconds(r.running),
      sessions: Number(r.sessions),
      banned: Boolean(r.banned),
    };
  }

  private async requireServerOfTeam(teamId: string, serverId: string) {
    const [row] = await this.db
      .select({ id: servers.id })
      .from(servers)
      .where(and(eq(servers.id, serverId), eq(servers.teamId, teamId)));
    if (!row) throw new AppError("not_found", "Server not found.", { details: { field: "server_id" } });
  }

  async list(
    principal: Principal,
    teamId: string,
    q: { q?: string; sort: DirectorySort; order?: "asc" | "desc"; limit: number; cursor?: string; server_id?: string },
  ) {
    await this.gate(principal, teamId, "viewer");
    if (q.server_id) await this.requireServerOfTeam(teamId, q.server_id);
    const order = q.order ?? (q.sort === "name" ? "asc" : "desc");
    const sort = SORTS[q.sort];
    const where: SQL[] = [sql`tp.team_id = ${teamId}::uuid`];
    const search = q.q?.trim().toLowerCase();
    if (search && UUID.test(search)) where.push(sql`tp.uuid = ${search}::uuid`);
    else if (search) {
      // A range of the name index (byte order), then the exact test.
      where.push(
        sql`lower(tp.name) collate "C" >= (${search}::text collate "C")`,
        sql`lower(tp.name) collate "C" < ((${search} || chr(1114111))::text collate "C")`,
        sql`starts_with(lower(tp.name), ${search})`,
      );
    }
    if (q.server_id)
      where.push(sql`exists (select 1 from players p where p.server_id = ${q.server_id}::uuid and p.uuid = tp.uuid)`);
    if (q.cursor) {
      const c = decodeCursor(q.cursor);
      if (c.sort !== q.sort || c.order !== order) throw badCursor(`it was issued for sort=${c.sort}&order=${c.order}`);
      where.push(
        order === "asc"
          ? sql`(${sort.key}, tp.uuid) > (${sort.back(c.value)}, ${c.uuid}::uuid)`
          : sql`(${sort.key}, tp.uuid) < (${sort.back(c.value)}, ${c.uuid}::uuid)`,
      );
    }
    const dir = sql.raw(order);
    const outerKey = sql.raw(
      {
        name: `lower(page.name) collate "C"`,
        playtime: "page.play_seconds",
        sessions: "page.sessions",
        last_seen: "page.last_seen",
      }[q.sort],
    );
    // The page first (an index range scan of the sort's index), then the live columns for its rows only.
    const rows = rowsOf<DirRow>(
      await this.db.execute(sql`
        select page.*, ${this.live("page")}
          from (select tp.team_id, tp.uuid, tp.name, tp.first_seen, tp.last_seen, tp.play_seconds, tp.sessions,
                       ${sort.text} as cursor_value
                  from team_players tp
                 where ${sql.join(where, sql` and `)}
                 order by ${sort.key} ${dir}, tp.uuid ${dir}
                 limit ${q.limit + 1}) page
         order by ${outerKey} ${dir}, page.uuid ${dir}`),
    );
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      players: page.map((r) => this.rowOut(r)),
      next_cursor:
        rows.length > q.limit && last
          ? encodeCursor({ sort: q.sort, order, value: String(last.cursor_value), uuid: last.uuid })
          : null,
    };
  }

  async resolve(principal: Principal, teamId: string, name: string) {
    await this.gate(principal, teamId, "viewer");
    const found = await resolveName(this.db, teamId, name);
    if (found.players.length === 0)
      throw new AppError("not_found", `No player named ${JSON.stringify(name)} has been seen on this team's servers.`);
    return { name, ...found };
  }

  private sessionsSql(teamId: string, uuid: string, extra: SQL | undefined, limit: number) {
    return sql`
      select ps.id::text as id, ps.server_id::text as server_id, sv.name as server_name, ps.uuid::text as uuid, p.name,
             ps.joined_at, ps.left_at, ps.source, ps.end_reason,
             extract(epoch from coalesce(ps.left_at, now()) - ps.joined_at)::float8 as running
        from player_sessions ps
        join servers sv on sv.id = ps.server_id
        left join players p on p.server_id = ps.server_id and p.uuid = ps.uuid
       where sv.team_id = ${teamId}::uuid and ps.uuid = ${uuid}::uuid ${extra ? sql`and ${extra}` : sql``}
       order by ps.joined_at desc, ps.id desc
       limit ${limit}`;
  }

  private sessionOut(r: SessionRow) {
    return {
      session_id: r.id,
      server_id: r.server_id,
      server_name: r.server_name,
      uuid: r.uuid,
      name: r.name ?? null,
      joined_at: when(r.joined_at),
      left_at: r.left_at ? when(r.left_at) : null,
      duration_seconds: seconds(r.running),
      online: !r.left_at,
      source: r.source,
      end_reason: r.end_reason ?? null,
    };
  }

  async sessions(principal: Principal, teamId: string, q: { uuid: string; limit: number; cursor?: string }) {
    await this.gate(principal, teamId, "viewer");
    let position: SQL | undefined;
    if (q.cursor) {
      const text = /^[A-Za-z0-9_-]+$/.test(q.cursor) ? Buffer.from(q.cursor, "base64url").toString("utf8") : "";
      const id = text.startsWith(SESSION_CURSOR) ? text.slice(SESSION_CURSOR.length) : "";
      if (!UUID.test(id)) throw badCursor();
      // The row comparison runs on the stored value, so microseconds a JavaScript Date would drop still order.
      const [found] = rowsOf<{ n: number }>(
        await this.db.execute(
          sql`select 1 as n from player_sessions where id = ${id}::uuid and uuid = ${q.uuid}::uuid`,
        ),
      );
      if (!found) throw badCursor();
      position = sql`(ps.joined_at, ps.id) < (select joined_at, id from player_sessions where id = ${id}::uuid)`;
    }
    const rows = rowsOf<SessionRow>(await this.db.execute(this.sessionsSql(teamId, q.uuid, position, q.limit + 1)));
    const page = rows.slice(0, q.limit);
    return {
      sessions: page.map((r) => this.sessionOut(r)),
      next_cursor: rows.length > q.limit ? Buffer.from(SESSION_CURSOR + page.at(-1)!.id).toString("base64url") : null,
    };
  }

  async page(principal: Principal, teamId: string, uuid: string) {
    await this.gate(principal, teamId, "viewer");
    const [player] = rowsOf<DirRow>(
      await this.db.execute(sql`
        select tp.team_id, tp.uuid, tp.name, tp.first_seen, tp.last_seen, tp.play_seconds, tp.sessions, ${this.live("tp")}
          from team_players tp where tp.team_id = ${teamId}::uuid and tp.uuid = ${uuid}::uuid`),
    );
    if (!player) throw new AppError("not_found", "No player with this UUID has been seen on this team's servers.");
    const [names, perServer, recent, banRows, moderation, notes] = await Promise.all([
      this.db.execute(sql`
        select name, first_used, last_used from player_names
         where team_id = ${teamId}::uuid and uuid = ${uuid}::uuid
         order by last_used desc, name limit ${LIMITS.namesListed}`),
      this.db.execute(sql`
        select sv.id::text as server_id, sv.name as server_name, p.first_seen, p.last_seen, p.play_seconds,
               (select count(*) from player_sessions ps where ps.server_id = p.server_id and ps.uuid = p.uuid)::int as sessions,
               (select extract(epoch from now() - ps.joined_at) from player_sessions ps
                 where ps.server_id = p.server_id and ps.uuid = p.uuid and ps.left_at is null)::float8 as running
          from players p join servers sv on sv.id = p.server_id
         where sv.team_id = ${teamId}::uuid and p.uuid = ${uuid}::uuid`),
      this.db.execute(this.sessionsSql(teamId, uuid, undefined, RECENT_SESSIONS)),
      this.db.execute(sql`
        select b.*, sv.name as server_name from bans b join servers sv on sv.id = b.server_id
         where sv.team_id = ${teamId}::uuid and b.uuid = ${uuid}::uuid and ${inForce}
         order by b.created_at desc`),
      this.db.execute(sql`
        select * from moderation_events where team_id = ${teamId}::uuid and uuid = ${uuid}::uuid
         order by at desc, id limit ${LIMITS.moderationListed}`),
      this.db.execute(sql`
        select * from player_notes where team_id = ${teamId}::uuid and uuid = ${uuid}::uuid
         order by created_at desc, id limit ${LIMITS.notesPerPlayer}`),
    ]);
    const servers_ = rowsOf<ServerPlayRow>(perServer)
      .map((r) => ({
        server_id: r.server_id,
        server_name: r.server_name,
        online: r.running !== null,
        first_seen: when(r.first_seen),
        last_seen: when(r.last_seen),
        playtime_seconds: Number(r.play_seconds) + (r.running === null ? 0 : seconds(r.running)),
        sessions: Number(r.sessions),
      }))
      .sort((a, b) => b.playtime_seconds - a.playtime_seconds || a.server_name.localeCompare(b.server_name));
    return {
      ...this.rowOut(player),
      names: rowsOf<NameRow>(names).map((n) => ({
        name: n.name,
        first_used: when(n.first_used),
        last_used: when(n.last_used),
        current: n.name === player.name,
      })),
      servers: servers_,
      recent_sessions: rowsOf<SessionRow>(recent).map((r) => this.sessionOut(r)),
      bans_in_force: rowsOf<BanInForceRow>(banRows).map((b) => ({
        server_id: b.server_id,
        server_name: b.server_name,
        uuid: b.uuid,
        name: b.name,
        reason: b.reason,
        source: b.source,
        origin: b.origin,
        created: when(b.created_at),
        expires: b.expires_at ? when(b.expires_at) : ("forever" as const),
      })),
      moderation: rowsOf<ModerationRow>(moderation).map((m) => ({
        event_id: m.id,
        action: m.action,
        server_id: m.server_id ?? null,
        server_name: m.server_name,
        name: m.name ?? null,
        origin: m.origin,
        actor: { kind: m.actor_kind, id: m.actor_id ?? null, name: m.actor_name },
        reason: m.reason ?? null,
        source: m.source ?? null,
        expires: m.action !== "ban" ? null : m.expires_at ? when(m.expires_at) : ("forever" as const),
        at: when(m.at),
      })),
      notes: rowsOf<NoteRow>(notes).map(noteOut),
    };
  }

  async addNote(principal: Principal, teamId: string, uuid: string, text: string) {
    await this.gate(principal, teamId, "moderator");
    const actor = actorOf(principal);
    const note = await this.db.transaction(async (tx) => {
      // The player's row, locked: two notes at once cannot both squeeze under the cap.
      const [seen] = rowsOf<{ n: number }>(
        await tx.execute(
          sql`select 1 as n from team_players where team_id = ${teamId}::uuid and uuid = ${uuid}::uuid for update`,
        ),
      );
      if (!seen) throw new AppError("not_found", "No player with this UUID has been seen on this team's servers.");
      const [held] = rowsOf<{ n: number }>(
        await tx.execute(
          sql`select count(*)::int as n from player_notes where team_id = ${teamId}::uuid and uuid = ${uuid}::uuid`,
        ),
      );
      if (held!.n >= LIMITS.notesPerPlayer) throw overLimit("notes on one player", LIMITS.notesPerPlayer);
      const [row] = await tx
        .insert(playerNotes)
        .values({
          teamId,
          uuid,
          authorKind: actor.kind,
          authorId: actor.kind === "system" ? null : actor.id,
          authorName: actorName(actor),
          text: text.toWellFormed(),
        })
        .returning();
      await audit(tx, {
        teamId,
        target: { type: "player", id: uuid, name: null },
        after: { note_id: row!.id, text: row!.text },
      });
      return row!;
    });
    return noteOut({
      id: note.id,
      text: note.text,
      author_kind: note.authorKind,
      author_id: note.authorId,
      author_name: note.authorName,
      created_at: note.createdAt,
    });
  }

  async deleteNote(principal: Principal, teamId: string, uuid: string, noteId: string) {
    const role = await this.gate(principal, teamId, "moderator");
    await this.db.transaction(async (tx) => {
      const [note] = await tx
        .select()
        .from(playerNotes)
        .where(and(eq(playerNotes.id, noteId), eq(playerNotes.teamId, teamId), eq(playerNotes.uuid, uuid)))
        .for("update");
      if (!note) throw new AppError("not_found", "No such note on this player.");
      const actor = actorOf(principal);
      const mine = actor.kind !== "system" && note.authorKind === actor.kind && note.authorId === actor.id;
      if (!mine && !roleAtLeast(role, "admin"))
        throw new AppError("forbidden", "Only the note's author or an admin of the team may delete it.");
      await tx.delete(playerNotes).where(eq(playerNotes.id, noteId));
      await audit(tx, {
        teamId,
        target: { type: "player", id: uuid, name: null },
        before: { note_id: note.id, text: note.text },
      });
    });
    return { ok: true as const };
  }
}

function noteOut(n: NoteRow) {
  return {
    note_id: n.id,
    text: n.text,
    author: { kind: n.author_kind, id: n.author_id ?? null, name: n.author_name },
    created_at: when(n.created_at),
  };
}
