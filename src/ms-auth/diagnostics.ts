import { randomBytes } from "node:crypto";
import { and, eq, gte, inArray, sql } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { clientApps, clientModules, loginRequests } from "../db/schema";
import { AADSTS_SECRET_EXPIRED, AADSTS_SECRET_INVALID, aadErrorCodes, identityProviderOf } from "../identity/chain";
import { MS_SCOPE } from "../identity/protocol";
import type { IdentityConfig } from "../identity/types";
import type { Clock } from "../lib/clock";
import type { Principal } from "../auth/principal";
import { requireResourceRole } from "../teams/access";

/**
 * The ms_auth self-test: what can be known about the Microsoft app the service signs players in
 * with (redirect URI, client secret and its expiry, one live probe of the token endpoint) and
 * what recent sign-ins of a client say about the Minecraft API approval. Shared by
 * `GET /client/ms-auth/diagnostics` and `bun scripts/ms-auth-check.ts`.
 */

export type CheckStatus = "ok" | "info" | "warning" | "error";

export interface DiagnosticCheck {
  /** Stable: scripts and tests key on it. */
  id:
    | "identity_provider"
    | "redirect_uri"
    | "client_secret"
    | "client_secret_expiry"
    | "token_endpoint"
    | "minecraft_api_access"
    | "ms_auth_module";
  status: CheckStatus;
  /** What was found, in a sentence. */
  summary: string;
  /** What to do about it; absent when nothing is to be done. */
  action?: string;
}

/** Secrets expiring within this many days are a warning. */
export const SECRET_WARNING_DAYS = 30;
const DAY_MS = 86_400_000;
/** How far back a client's sign-ins are read for the approval check. */
const RECENT_DAYS = 30;

export const MINECRAFT_API_ACCESS_FORM = "https://aka.ms/mce-reviewappid";

const APPROVAL_EXPLAINED =
  "Mojang must allow each new Azure app to call the Minecraft API (login_with_xbox). Until it has, every sign-in passes Microsoft, Xbox Live and XSTS and then gets HTTP 403, which ends the login as `minecraft_api_not_approved`. The approval cannot be tested without a player signing in.";
const APPROVAL_ACTION = `Request access with Microsoft's form (${MINECRAFT_API_ACCESS_FORM}) giving the app's client ID; the review is by hand and can take weeks. Nothing in the service needs to change once it is granted.`;

/** The callback URL Microsoft must have registered for the app, exactly. */
export const callbackUrlOf = (config: Config) => `${config.PUBLIC_URL}/client/ms-auth/callback`;

function isLoopback(host: string) {
  return host === "localhost" || host === "127.0.0.1" || host === "[::1]";
}

/** The checks that need nothing but the configuration, the clock and (for the probe) the network. */
export async function microsoftAppChecks(
  config: Config,
  identity: IdentityConfig,
  now: number,
  opts: { probe: boolean },
): Promise<DiagnosticCheck[]> {
  const checks: DiagnosticCheck[] = [];
  const provider = identityProviderOf(config);
  const callback = callbackUrlOf(config);
  if (provider === "development") {
    checks.push({
      id: "identity_provider",
      status: config.NODE_ENV === "production" ? "warning" : "info",
      summary: `Players sign in with the development identity provider (${config.DEV_IDP_URL ?? `${config.PUBLIC_URL}/dev-idp`}): anyone can sign in as anyone, and no Microsoft app is used.`,
      action:
        "For real accounts, register a Microsoft app (docs/identity.md#production-the-microsoft-app) and set MS_CLIENT_ID and MS_CLIENT_SECRET.",
    });
  } else {
    checks.push({
      id: "identity_provider",
      status: "ok",
      summary: `Players sign in with the Microsoft app ${identity.clientId}.`,
    });
  }

  const url = new URL(callback);
  const plainHttp = url.protocol === "http:" && !isLoopback(url.hostname);
  checks.push(
    plainHttp && provider === "microsoft"
      ? {
          id: "redirect_uri",
          status: "error",
          summary: `The redirect URI ${callback} is plain http on a host other than localhost, which Microsoft refuses to register.`,
          action: "Serve the service over https and set PUBLIC_URL to its https address.",
        }
      : {
          id: "redirect_uri",
          status: "ok",
          summary: `The redirect URI is ${callback} (from PUBLIC_URL).`,
          ...(provider === "microsoft" && {
            action: `It must be registered exactly (Azure portal: Authentication, Web platform, Redirect URIs), with ${config.PUBLIC_URL}/account/apps/callback for the player's apps page; a difference shows players Microsoft's AADSTS50011 page.`,
          }),
        },
  );

  if (provider === "microsoft") {
    checks.push(
      identity.clientSecret
        ? { id: "client_secret", status: "ok", summary: "MS_CLIENT_SECRET is set." }
        : {
            id: "client_secret",
            status: "error",
            summary:
              "MS_CLIENT_SECRET is not set: the Web platform's token endpoint refuses a code redeemed without the secret.",
            action: "Azure portal: Certificates & secrets, New client secret; set MS_CLIENT_SECRET to its value.",
          },
    );
    checks.push(secretExpiryCheck(config.MS_CLIENT_SECRET_EXPIRES_AT, now));
  }
  if (opts.probe) checks.push(await probeTokenEndpoint(identity, callback));
  checks.push({ id: "minecraft_api_access", status: "info", summary: APPROVAL_EXPLAINED, action: APPROVAL_ACTION });
  return checks;
}

function secretExpiryCheck(expiresAt: Date | undefined, now: number): DiagnosticCheck {
  if (!expiresAt)
    return {
      id: "client_secret_expiry",
      status: "info",
      summary: "The secret's expiry is not known (Microsoft does not tell it to the secret's holder).",
      action:
        "Set MS_CLIENT_SECRET_EXPIRES_AT to the Expires date Azure shows beside the secret, to be warned 30 days ahead.",
    };
  const days = Math.floor((expiresAt.getTime() - now) / DAY_MS);
  const date = expiresAt.toISOString().slice(0, 10);
  const renew =
    "Azure portal: Certificates & secrets, New client secret; set MS_CLIENT_SECRET and MS_CLIENT_SECRET_EXPIRES_AT to the new one, restart, then delete the old secret.";
  if (expiresAt.getTime() <= now)
    return {
      id: "client_secret_expiry",
      status: "error",
      summary: `The client secret expired on ${date}: every sign-in ends as \`client_secret_expired\`.`,
      action: renew,
    };
  if (days < SECRET_WARNING_DAYS)
    return {
      id: "client_secret_expiry",
      status: "warning",
      summary: `The client secret expires on ${date}, in ${days} day${days === 1 ? "" : "s"}.`,
      action: renew,
    };
  return {
    id: "client_secret_expiry",
    status: "ok",
    summary: `The client secret expires on ${date}, in ${days} days.`,
  };
}

/**
 * Redeems a made-up code at the token endpoint. Microsoft judges the client's credentials first:
 * an expired or wrong secret is named in the answer (AADSTS7000222, AADSTS7000215), an unknown
 * client id too (AADSTS700016); credentials it accepts get `invalid_grant` for the code. Nothing
 * is redeemed and no token comes back.
 */
async function probeTokenEndpoint(identity: IdentityConfig, redirectUri: string): Promise<DiagnosticCheck> {
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: `diagnostics-${randomBytes(16).toString("hex")}`,
    redirect_uri: redirectUri,
    client_id: identity.clientId,
    code_verifier: randomBytes(32).toString("base64url"),
    scope: MS_SCOPE,
  });
  if (identity.clientSecret) form.set("client_secret", identity.clientSecret);
  let status: number;
  let text: string;
  try {
    const res = await (identity.transport ?? fetch)(identity.endpoints.token, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: form.toString(),
      redirect: "manual",
      signal: AbortSignal.timeout(identity.timeoutMs),
    });
    status = res.status;
    text = await res.text();
  } catch {
    return {
      id: "token_endpoint",
      status: "warning",
      summary: `The token endpoint ${identity.endpoints.token} did not answer within ${identity.timeoutMs} ms.`,
      action:
        "Check that this host can reach login.microsoftonline.com (firewall, proxy, DNS), then run the check again.",
    };
  }
  const codes = aadErrorCodes(text);
  let error: string | undefined;
  try {
    const e = (JSON.parse(text) as { error?: unknown }).error;
    error = typeof e === "string" ? e : undefined;
  } catch {
    error = undefined;
  }
  if (codes.includes(AADSTS_SECRET_EXPIRED))
    return {
      id: "token_endpoint",
      status: "error",
      summary: `Microsoft refused the client secret as expired (AADSTS${AADSTS_SECRET_EXPIRED}): every sign-in ends as \`client_secret_expired\`.`,
      action:
        "Azure portal: Certificates & secrets, New client secret; set MS_CLIENT_SECRET (and MS_CLIENT_SECRET_EXPIRES_AT) to the new one and restart.",
    };
  if (codes.includes(AADSTS_SECRET_INVALID))
    return {
      id: "token_endpoint",
      status: "error",
      summary: `Microsoft refused the client secret (AADSTS${AADSTS_SECRET_INVALID}): it is not a secret of this app, or it is the secret's ID rather than its value.`,
      action: "Set MS_CLIENT_SECRET to the secret's Value (shown once, when it is made), not its Secret ID.",
    };
  if (error === "invalid_client" || error === "unauthorized_client" || codes.includes(700016))
    return {
      id: "token_endpoint",
      status: "error",
      summary: `Microsoft refused the app's credentials (HTTP ${status} ${error ?? ""}${codes.length ? ` AADSTS${codes[0]}` : ""}).`,
      action: "Check MS_CLIENT_ID (the Application (client) ID) and that the app allows personal Microsoft accounts.",
    };
  if (error === "invalid_grant")
    return {
      id: "token_endpoint",
      status: "ok",
      summary: "Microsoft accepted the app's client ID and secret (and refused the made-up code, as it should).",
    };
  return {
    id: "token_endpoint",
    status: "warning",
    summary: `The token endpoint answered HTTP ${status}${error ? ` ${error}` : ""}, which says nothing about the secret.`,
    action: "Run the check again; if it persists, compare MS_TOKEN_URL with docs/identity.md.",
  };
}

export interface DiagnosticsReport {
  client_id: string;
  identity_provider: "development" | "microsoft";
  redirect_uri: string;
  checked_at: string;
  /** The worst status among the checks. */
  status: CheckStatus;
  checks: DiagnosticCheck[];
}

const RANK: Record<CheckStatus, number> = { ok: 0, info: 1, warning: 2, error: 3 };
export const worstStatus = (checks: readonly DiagnosticCheck[]): CheckStatus =>
  checks.reduce<CheckStatus>((w, c) => (RANK[c.status] > RANK[w] ? c.status : w), "ok");

/** The endpoint's side: the app checks plus what the client's own recent sign-ins show. */
export class MsAuthDiagnostics {
  constructor(
    private readonly db: Db,
    private readonly config: Config,
    private readonly identity: IdentityConfig,
    private readonly clock: Clock,
  ) {}

  async report(principal: Principal, clientId: string, opts: { probe: boolean }): Promise<DiagnosticsReport> {
    const [app] = await this.db
      .select({ id: clientApps.id, teamId: clientApps.teamId })
      .from(clientApps)
      .where(eq(clientApps.id, clientId))
      .limit(1);
    await requireResourceRole(
      this.db,
      principal,
      app?.teamId,
      "owner",
      "No client application with this client_id in your teams.",
    );
    const now = this.clock.now();
    const checks = await microsoftAppChecks(this.config, this.identity, now, opts);
    const approval = await this.approvalFromSignIns(clientId, now);
    const i = checks.findIndex((c) => c.id === "minecraft_api_access");
    if (approval) checks[i] = approval;
    checks.push(await this.moduleCheck(clientId));
    return {
      client_id: clientId,
      identity_provider: identityProviderOf(this.config),
      redirect_uri: callbackUrlOf(this.config),
      checked_at: new Date(now).toISOString(),
      status: worstStatus(checks),
      checks,
    };
  }

  /** The Minecraft API approval as this client's sign-ins of the last 30 days show it, when they show it. */
  private async approvalFromSignIns(clientId: string, now: number): Promise<DiagnosticCheck | undefined> {
    const rows = await this.db
      .select({
        status: loginRequests.status,
        error: sql<string | null>`${loginRequests.context}->>'error'`,
        n: sql<number>`count(*)::int`,
        last: sql<string>`max(${loginRequests.updatedAt})`,
      })
      .from(loginRequests)
      .where(
        and(
          eq(loginRequests.clientId, clientId),
          inArray(loginRequests.status, ["authenticated", "authorized", "denied"]),
          gte(loginRequests.updatedAt, new Date(now - RECENT_DAYS * DAY_MS)),
        ),
      )
      .groupBy(loginRequests.status, sql`${loginRequests.context}->>'error'`);
    // Past login_with_xbox: the chain got a profile (authenticated, authorized, or denied at consent).
    const passed = rows.filter((r) => r.status !== "denied" || r.error === "consent_denied");
    const refused = rows.find((r) => r.status === "denied" && r.error === "minecraft_api_not_approved");
    const lastPassed = passed.reduce<number>((m, r) => Math.max(m, Date.parse(r.last)), Number.NEGATIVE_INFINITY);
    if (refused && Date.parse(refused.last) > lastPassed)
      return {
        id: "minecraft_api_access",
        status: "error",
        summary: `The latest sign-in that reached the Minecraft API was refused as not approved (${refused.n} in the last ${RECENT_DAYS} days, the latest on ${new Date(refused.last).toISOString()}). ${APPROVAL_EXPLAINED}`,
        action: APPROVAL_ACTION,
      };
    if (passed.length > 0)
      return {
        id: "minecraft_api_access",
        status: "ok",
        summary: `Sign-ins of this client reached the Minecraft profile (the latest on ${new Date(lastPassed).toISOString()}): the app is allowed to use the Minecraft API.`,
      };
    return undefined;
  }

  private async moduleCheck(clientId: string): Promise<DiagnosticCheck> {
    const [m] = await this.db
      .select({ redirect: clientModules.postLoginRedirectUri })
      .from(clientModules)
      .where(and(eq(clientModules.clientId, clientId), eq(clientModules.moduleKey, "ms_auth")))
      .limit(1);
    if (!m?.redirect)
      return {
        id: "ms_auth_module",
        status: "error",
        summary: "The ms_auth module is not enabled for this client: start answers 400.",
        action:
          "Enable it with POST /client/apps/{client_id}/modules/ms-auth and the launcher's post_login_redirect_uri.",
      };
    const u = new URL(m.redirect);
    if (u.protocol === "http:" && !isLoopback(u.hostname))
      return {
        id: "ms_auth_module",
        status: "warning",
        summary: `Players return to ${m.redirect}, plain http on a public host: the redirect can be read or changed on the way.`,
        action: "Use an https address, a loopback address, or the launcher's own URL scheme.",
      };
    return { id: "ms_auth_module", status: "ok", summary: `The ms_auth module returns players to ${m.redirect}.` };
  }
}
