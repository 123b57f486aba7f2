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
import { loginRequests, sessions } from "../db/schema";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { Metrics } from "../lib/metrics";
import { NO_TEAM_EVENTS, type TeamEventSink } from "../lib/events";

export type LoginRequestRow = typeof loginRequests.$inferSelect;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

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

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly metrics: Metrics | null = null,
    private readonly events: TeamEventSink = NO_TEAM_EVENTS,
  ) {
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
  }

  async create(values: { id: string; clientId: string; ttlSeconds: number; clientState: string | null }) {
    const [row] = await this.db
      .insert(loginRequests)
      .values({
        id: values.id,
        clientId: values.clientId,
        status: "pending",
        context: {},
        expiresAt: new Date(this.clock.now() + values.ttlSeconds * 1000),
        clientState: values.clientState,
      })
      .returning();
    return row!;
  }

  /** Loads a request, first expiring it if its deadline has passed. */
  async loadCurrent(id: string): Promise<LoginRequestRow | null> {
    const row = await this.load(id);
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
    patch: Partial<Pick<LoginRequestRow, "browserHash">> = {},
    inTx?: (tx: Tx, updated: LoginRequestRow) => Promise<void>,
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
      const write = async (q: Db | Tx) => {
        const [u] = await q
          .update(loginRequests)
          .set({
            status: next.status,
            context: next.context,
            version: seen.version + 1,
            updatedAt: this.clock.date(),
            ...(own ? patch : {}),
          })
          .where(and(eq(loginRequests.id, seen.id), eq(loginRequests.version, seen.version)))
          .returning();
        if (u && own && inTx) await inTx(q as Tx, u);
        return u;
      };
      // One UPDATE is atomic on its own; a transaction (three more round trips) only when
      // something must be written with it.
      const updated = own && inTx ? await this.db.transaction(write) : await write(this.db);
      if (updated) {
        // Counted by the instance whose write ended the request: once per request.
        if (this.metrics && FINAL_STATUSES.includes(next.status))
          this.metrics.loginOutcome(
            next.status,
            next.status === "authorized" ? null : (next.context.error ?? next.status),
          );
        if (own) this.announce(updated);
        return { row: updated, applied: own };
      }
      current = await this.load(seen.id);
    }
    if (!current) return null;
    throw new AppError("conflict", "The login request is changing too fast; try again.");
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
