import { and, eq, inArray, lte, sql } from "drizzle-orm";
import {
  applyLoginEvent,
  FINAL_STATUSES,
  type LoginContext,
  type LoginEvent,
  type LoginState,
  type LoginStatus,
} from "../../machines/login-request";
import type { Db } from "../db/client";
import { loginRequests, type OidcRequest, sessions } from "../db/schema";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { Metrics } from "../lib/metrics";
import { NO_TEAM_EVENTS, type TeamEventSink } from "../lib/events";
import { BoundedCache } from "../lib/bounded-cache";

export type LoginRequestRow = typeof loginRequests.$inferSelect;

/** The OpenID Connect grant an approval creates with it (same id as the request); the rest comes from the request. */
export interface NewGrant {
  codeHash: string;
  codeExpiresAt: Date;
  accessTokenHash: string;
}

/** The session an approval creates with it; the rest of its row comes from the request. */
export interface NewSession {
  id: string;
  tokenHash: string;
  expiresAt: Date;
}

export interface TransitionResult {
  row: LoginRequestRow;
  /** Whether the event itself was applied (false when refused, or when expiry came first). */
  applied: boolean;
}

const MAX_ATTEMPTS = 5;

/**
 * The one owner of `login_requests`: load -> apply a machine event (pure) -> persist with an
 * optimistic version check. Callers hand back the row they already hold, so a flow reads each
 * request once; it is read again only when another instance changed it in between.
 */
export class LoginRequestStore {
  private readonly byId;
  private readonly byIdWithSession;
  private readonly insertQuery;
  private readonly updateQuery;
  private readonly approveQuery;
  private readonly insertWithCodeQuery;
  private readonly grantQuery;
  private readonly written: ((row: LoginRequestRow, sessionId: string | null) => void)[] = [];
  /** Rows as this instance last wrote them: see `loadForSend`. */
  private readonly recent: BoundedCache<string, LoginRequestRow>;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly metrics: Metrics | null = null,
    private readonly events: TeamEventSink = NO_TEAM_EVENTS,
    recent: { maxEntries: number; ttlMs: number } = { maxEntries: 10_000, ttlMs: 10 * 60_000 },
    /**
     * This process is the database's only writer (the embedded database): a row it created or
     * last wrote is the stored one, so `loadCurrent` answers from it too (see `loadForSend`).
     */
    private readonly ownsDatabase = false,
  ) {
    this.recent = new BoundedCache(recent.maxEntries, recent.ttlMs, () => clock.now());
    this.byId = db
      .select()
      .from(loginRequests)
      .where(eq(loginRequests.id, sql.placeholder("id")))
      .limit(1)
      .prepare("login_request_by_id");
    this.byIdWithSession = db
      .select({ row: loginRequests, sessionId: sessions.id })
      .from(loginRequests)
      .leftJoin(sessions, eq(sessions.loginRequestId, loginRequests.id))
      .where(eq(loginRequests.id, sql.placeholder("id")))
      .limit(1)
      .prepare("login_request_with_session");
    this.insertQuery = db
      .insert(loginRequests)
      .values({
        id: sql.placeholder("id"),
        clientId: sql.placeholder("clientId"),
        status: "pending",
        context: {},
        expiresAt: sql.placeholder("expiresAt"),
        clientState: sql.placeholder("clientState"),
        flow: sql.placeholder("flow"),
        oidc: sql`${sql.placeholder("oidc")}::jsonb`,
      })
      .returning()
      .prepare("login_request_insert");
    this.updateQuery = db
      .update(loginRequests)
      // Raw placeholders (update's set does not take typed ones): the values go as text and are cast here.
      .set({
        status: sql`${sql.placeholder("status")}`,
        context: sql`${sql.placeholder("context")}::jsonb`,
        version: sql`${sql.placeholder("nextVersion")}`,
        updatedAt: sql`${sql.placeholder("updatedAt")}::timestamptz`,
        browserHash: sql`${sql.placeholder("browserHash")}`,
        identityProvider: sql`${sql.placeholder("identityProvider")}`,
      })
      .where(and(eq(loginRequests.id, sql.placeholder("id")), eq(loginRequests.version, sql.placeholder("version"))))
      .returning({ id: loginRequests.id })
      .prepare("login_request_update");
    // `writeWithSession`'s statement, prepared: PostgreSQL parses and plans it once per
    // connection instead of on every approval (most of what the statement cost it).
    const p = (name: string) => sql.placeholder(name);
    const updated = db.$with("u", { id: sql<string>`id`.as("id") }).as(sql`
      update login_requests
         set status = ${p("status")}, context = ${p("context")}::jsonb,
             version = ${p("nextVersion")}, updated_at = ${p("updatedAt")}::timestamptz
       where id = ${p("id")} and version = ${p("version")}
      returning id, client_id, identity_provider`);
    const session = db.$with("s", { id: sql<string>`id`.as("id") }).as(sql`
      insert into sessions (id, token_hash, client_id, login_request_id, mc_uuid, mc_username, expires_at,
                            identity_provider, textures)
      select ${p("sessionId")}, ${p("tokenHash")}, u.client_id, u.id, ${p("mcUuid")}, ${p("mcUsername")},
             ${p("expiresAt")}::timestamptz, coalesce(u.identity_provider, 'microsoft'), ${p("textures")}::jsonb
        from u
      returning id`);
    // A device-flow request and its user code in ONE statement (the code's foreign key is checked
    // at the statement's end, when the request is there). A code still held by a live request
    // is not taken over: then the request is made without one (`coded` 0) and the caller draws again.
    const created = db.$with("r", { id: sql<string>`id`.as("id") }).as(sql`
      insert into login_requests (id, client_id, status, context, expires_at, client_state, flow)
      values (${p("id")}, ${p("clientId")}, 'pending', '{}'::jsonb, ${p("expiresAt")}::timestamptz,
              ${p("clientState")}, 'device')
      returning id, expires_at`);
    const coded = db.$with("c", { id: sql<string>`login_request_id`.as("login_request_id") }).as(sql`
      insert into device_codes (code_hash, login_request_id, expires_at)
      select ${p("codeHash")}, r.id, r.expires_at from r
      on conflict (code_hash) do update set login_request_id = excluded.login_request_id, expires_at = excluded.expires_at
       where device_codes.expires_at <= ${p("now")}::timestamptz
      returning login_request_id`);
    this.insertWithCodeQuery = db
      .with(created, coded)
      .select({ coded: sql<number>`(select count(*) from c)::int` })
      .from(created)
      .prepare("login_request_insert_with_code");
    this.approveQuery = db
      .with(updated, session)
      .select({ id: session.id })
      .from(session)
      .prepare("login_request_update_with_session");
    // The same for an OpenID Connect request: the grant instead of a session, from what the
    // authorization request asked for (kept on the request).
    const updatedOidc = db.$with("u", { id: sql<string>`id`.as("id") }).as(sql`
      update login_requests
         set status = ${p("status")}, context = ${p("context")}::jsonb,
             version = ${p("nextVersion")}, updated_at = ${p("updatedAt")}::timestamptz
       where id = ${p("id")} and version = ${p("version")} and oidc is not null
      returning id, client_id, identity_provider, oidc`);
    const grant = db.$with("g", { id: sql<string>`id`.as("id") }).as(sql`
      insert into oidc_grants (id, client_id, mc_uuid, mc_username, code_hash, code_expires_at, access_token_hash,
                               redirect_uri, code_challenge, nonce, scope, identity_provider)
      select u.id, u.client_id, ${p("mcUuid")}, ${p("mcUsername")}, ${p("codeHash")},
             ${p("codeExpiresAt")}::timestamptz, ${p("accessTokenHash")}, u.oidc->>'redirectUri',
             u.oidc->>'codeChallenge', u.oidc->>'nonce', u.oidc->>'scope', coalesce(u.identity_provider, 'microsoft')
        from u
      returning id`);
    this.grantQuery = db
      .with(updatedOidc, grant)
      .select({ id: grant.id })
      .from(grant)
      .prepare("login_request_update_with_grant");
  }

  async create(values: {
    id: string;
    clientId: string;
    ttlSeconds: number;
    clientState: string | null;
    flow?: "browser" | "device";
    oidc?: OidcRequest;
  }) {
    const [row] = await this.insertQuery.execute({
      id: values.id,
      clientId: values.clientId,
      expiresAt: new Date(this.clock.now() + values.ttlSeconds * 1000),
      clientState: values.clientState,
      flow: values.flow ?? "browser",
      oidc: values.oidc ? JSON.stringify(values.oidc) : null,
    });
    if (this.ownsDatabase) this.recent.set(row!.id, row!, this.recent.epoch);
    return row!;
  }

  /**
   * A new device-flow request with its user code (given as its SHA-256). `coded` is false when
   * the code was taken by a live request: the request exists, without a code.
   */
  async createWithCode(
    values: { id: string; clientId: string; ttlSeconds: number; clientState: string | null },
    codeHash: string,
  ): Promise<{ row: LoginRequestRow; coded: boolean }> {
    const now = this.clock.date();
    const expiresAt = new Date(now.getTime() + values.ttlSeconds * 1000);
    const [r] = await this.insertWithCodeQuery.execute({
      id: values.id,
      clientId: values.clientId,
      expiresAt: expiresAt.toISOString(),
      clientState: values.clientState,
      codeHash,
      now: now.toISOString(),
    });
    // The row as inserted: nothing of it needs reading back.
    const row: LoginRequestRow = {
      id: values.id,
      clientId: values.clientId,
      status: "pending",
      context: {},
      version: 0,
      expiresAt,
      clientState: values.clientState,
      browserHash: null,
      identityProvider: null,
      flow: "device",
      oidc: null,
      createdAt: now,
      updatedAt: now,
    };
    if (this.ownsDatabase) this.recent.set(row.id, row, this.recent.epoch);
    return { row, coded: Number(r?.coded ?? 0) === 1 };
  }

  /**
   * Loads a request, first expiring it if its deadline has passed. On a database this process
   * owns, from the row it created or last wrote when it has one: nothing else writes there (a
   * row deleted meanwhile, with its client or by erasure, is found gone by the next write).
   */
  async loadCurrent(id: string): Promise<LoginRequestRow | null> {
    const row = (this.ownsDatabase ? this.recent.get(id) : undefined) ?? (await this.load(id));
    return row && this.current(row);
  }

  /**
   * Like `loadCurrent`, but from the row this instance last wrote when it has one. Only for a
   * caller whose next step is `send`: if another instance changed the request meanwhile, the
   * version check refuses the write and `send` applies the event to the row read then, so the
   * outcome is the one a fresh read would have given. (Not for the callback: there a stale
   * "pending" would run the chain again on a code already redeemed.)
   */
  async loadForSend(id: string): Promise<LoginRequestRow | null> {
    const row = this.recent.get(id) ?? (await this.load(id));
    return row && this.current(row);
  }

  /** A request and the id of its session (once approved), in one statement; not expired here. */
  async loadWithSession(id: string): Promise<{ row: LoginRequestRow; sessionId: string | null } | null> {
    const [found] = await this.byIdWithSession.execute({ id });
    return found ?? null;
  }

  /** `row`, expired first if its deadline has passed. */
  async current(row: LoginRequestRow): Promise<LoginRequestRow | null> {
    if (!this.overdue(row)) return row;
    return (await this.send(row, { type: "EXPIRE" }))?.row ?? null;
  }

  /** Expires every overdue request: the deadline holds even for requests nobody asks about. */
  async sweep(limit = 500): Promise<number> {
    const due = await this.db
      .select()
      .from(loginRequests)
      .where(
        and(
          inArray(loginRequests.status, ["pending", "authenticated"]),
          lte(loginRequests.expiresAt, this.clock.date()),
        ),
      )
      .limit(limit);
    for (const row of due) await this.send(row, { type: "EXPIRE" });
    return due.length;
  }

  /**
   * Applies `event` to `row` and persists it. The update only lands if the version is still
   * the one read; otherwise another instance moved first, and the event is retried on its
   * result. An overdue request takes EXPIRE instead of the event asked for. Null when the
   * request has been deleted meanwhile (its client was).
   */
  async send(
    row: LoginRequestRow,
    event: LoginEvent,
    patch: Partial<Pick<LoginRequestRow, "browserHash" | "identityProvider">> = {},
    session?: NewSession | NewGrant,
  ): Promise<TransitionResult | null> {
    let current: LoginRequestRow | null = row;
    for (let attempt = 0; attempt < MAX_ATTEMPTS && current; attempt++) {
      const seen: LoginRequestRow = current;
      const effective: LoginEvent = this.overdue(seen) && event.type !== "EXPIRE" ? { type: "EXPIRE" } : event;
      const next = applyLoginEvent(
        { status: seen.status as LoginStatus, context: seen.context } satisfies LoginState,
        effective,
      );
      if (!next) return { row: seen, applied: false };
      const own = effective === event;
      // The version check proves the stored row was `seen` (every write passes here and bumps
      // it), so the written row is `seen` with what was set: nothing needs to be read back.
      const updated: LoginRequestRow = {
        ...seen,
        status: next.status,
        context: next.context,
        version: seen.version + 1,
        updatedAt: this.clock.date(),
        ...(own ? patch : {}),
      };
      const landed = !(own && session)
        ? await this.write(seen, updated)
        : "codeHash" in session
          ? await this.writeWithGrant(seen, updated, session)
          : await this.writeWithSession(seen, updated, session);
      if (landed) {
        // Counted by the instance whose write ended the request: once per request.
        if (this.metrics && FINAL_STATUSES.includes(next.status))
          this.metrics.loginOutcome(
            next.status,
            next.status === "authorized" ? null : (next.context.error ?? next.status),
          );
        if (own) this.announce(updated);
        if (FINAL_STATUSES.includes(next.status)) this.recent.delete(updated.id);
        else this.recent.set(updated.id, updated, this.recent.epoch);
        const sessionId = own && session && "id" in session ? session.id : null;
        for (const listener of this.written) listener(updated, sessionId);
        return { row: updated, applied: own };
      }
      current = await this.load(seen.id);
    }
    if (!current) return null;
    throw new AppError("conflict", "The login request is changing too fast; try again.");
  }

  /** One prepared UPDATE, atomic on its own; false when the version moved (or the row is gone). */
  private async write(seen: LoginRequestRow, updated: LoginRequestRow): Promise<boolean> {
    const rows = await this.updateQuery.execute({
      id: seen.id,
      version: seen.version,
      status: updated.status,
      context: JSON.stringify(updated.context),
      nextVersion: updated.version,
      updatedAt: updated.updatedAt.toISOString(),
      browserHash: updated.browserHash,
      identityProvider: updated.identityProvider,
    });
    return rows.length === 1;
  }

  /**
   * The status change and the session it authorizes in ONE statement (a data-modifying CTE):
   * both land or neither does, without a transaction's three extra round trips. The session
   * is inserted only from the updated row, so a lost version race writes no session.
   */
  private async writeWithSession(seen: LoginRequestRow, updated: LoginRequestRow, s: NewSession): Promise<boolean> {
    const ctx = updated.context as LoginContext;
    const rows = await this.approveQuery.execute({
      status: updated.status,
      context: JSON.stringify(updated.context),
      nextVersion: updated.version,
      updatedAt: updated.updatedAt.toISOString(),
      id: seen.id,
      version: seen.version,
      sessionId: s.id,
      tokenHash: s.tokenHash,
      mcUuid: ctx.mcUuid ?? null,
      mcUsername: ctx.mcUsername ?? null,
      expiresAt: s.expiresAt.toISOString(),
      textures: ctx.textures ? JSON.stringify(ctx.textures) : null,
    });
    return rows.length === 1;
  }

  /** `writeWithSession` for an OpenID Connect request: the status change and its grant in one statement. */
  private async writeWithGrant(seen: LoginRequestRow, updated: LoginRequestRow, g: NewGrant): Promise<boolean> {
    const ctx = updated.context as LoginContext;
    const rows = await this.grantQuery.execute({
      status: updated.status,
      context: JSON.stringify(updated.context),
      nextVersion: updated.version,
      updatedAt: updated.updatedAt.toISOString(),
      id: seen.id,
      version: seen.version,
      mcUuid: ctx.mcUuid ?? null,
      mcUsername: ctx.mcUsername ?? null,
      codeHash: g.codeHash,
      codeExpiresAt: g.codeExpiresAt.toISOString(),
      accessTokenHash: g.accessTokenHash,
    });
    return rows.length === 1;
  }

  /**
   * Calls `listener` with every row this instance writes (and the session it created with it,
   * if any), after the write: a poll's answer for a final status is known without reading it.
   */
  onWritten(listener: (row: LoginRequestRow, sessionId: string | null) => void) {
    this.written.push(listener);
  }

  /** A sign-in's outcome for the client's team: authorized (who) or denied (why). */
  private announce(row: LoginRequestRow) {
    const ctx = row.context as LoginContext;
    if (row.status === "authorized")
      this.events.emit({ clientId: row.clientId }, "login.authorized", {
        auth_request_id: row.id,
        mc_uuid: ctx.mcUuid ?? null,
        mc_username: ctx.mcUsername ?? null,
      });
    else if (row.status === "denied")
      this.events.emit({ clientId: row.clientId }, "login.denied", {
        auth_request_id: row.id,
        error: ctx.error ?? null,
      });
  }

  private load(id: string): Promise<LoginRequestRow | null> {
    return this.byId.execute({ id }).then((r) => r[0] ?? null);
  }

  private overdue(row: LoginRequestRow) {
    return !FINAL_STATUSES.includes(row.status as LoginStatus) && row.expiresAt.getTime() <= this.clock.now();
  }
}
