import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { devIdp, startTestServer } from "./harness";
import { api, newApiKey, newTeam } from "./helpers";
import { decide, newClient, poll, signIn, start } from "./ms-auth-helpers";
import { agentApi, eventId, newServer } from "./servers-fixture";
import { enableTotp } from "./two-factor-helpers";

/** Every row of every table in the public schema (and drizzle's), as text. */
async function dumpAll(db: Parameters<typeof rows>[0]): Promise<Record<string, string>> {
  const tables = await rows(
    db,
    sql`select table_schema, table_name from information_schema.tables where table_schema in ('public', 'drizzle') and table_type = 'BASE TABLE'`,
  );
  const out: Record<string, string> = {};
  for (const t of tables as { table_schema: string; table_name: string }[]) {
    out[`${t.table_schema}.${t.table_name}`] = JSON.stringify(
      await rows(db, sql.raw(`select * from "${t.table_schema}"."${t.table_name}"`)),
    );
  }
  return out;
}

async function rows(db: { execute(q: unknown): Promise<unknown> }, q: unknown): Promise<unknown[]> {
  const r = (await db.execute(q)) as { rows?: unknown[] } | unknown[];
  return Array.isArray(r) ? r : (r.rows ?? []);
}

describe("secrets at rest", () => {
  test("after full flows, no table holds a secret, token or key in plain text", async () => {
    const idp = await devIdp();
    // A server of its own, so the dump holds only what this test made.
    const srv = await startTestServer({ DEV_IDP_URL: idp.url });
    const secrets: Record<string, string> = {};

    // Accounts: a password, access and refresh tokens (rotated once).
    const password = "plain text password 123";
    await api(srv, "POST", "/auth/signup", { body: { email: "rest@example.test", password } });
    const login = await api(srv, "POST", "/auth/login", { body: { email: "rest@example.test", password } });
    const refreshed = await api(srv, "POST", "/auth/refresh", { body: { refresh_token: login.body.refresh_token } });
    Object.assign(secrets, {
      password,
      access: login.body.access_token,
      refresh1: login.body.refresh_token,
      refresh2: refreshed.body.refresh_token,
    });
    const owner = {
      id: "",
      email: "rest@example.test",
      password,
      token: refreshed.body.access_token,
      refresh: refreshed.body.refresh_token,
    };

    // A team API key.
    const teamId = await newTeam(srv, owner);
    secrets.apiKey = (await newApiKey(srv, owner, teamId, "admin")).key;

    // A client: its first secret, a rotated one, and a whole login with its session token.
    const c = await newClient(srv, { owner });
    secrets.clientSecret1 = c.secret;
    // Sent with an Idempotency-Key, so its answer (the new secret) is also kept for replay, sealed.
    const rotated = await api(srv, "POST", `/client/apps/${c.clientId}/secret`, {
      token: owner.token,
      headers: { "idempotency-key": "rotate-client-secret" },
    });
    c.secret = secrets.clientSecret2 = rotated.body.client_secret;
    const started = await start(srv, c, "state-at-rest");
    const s = await signIn(srv, started.auth_url, { username: "AtRest" });
    const cookie = s.cookie!;
    secrets.browserCookie = cookie.split("=")[1]!;
    secrets.csrf = /name="csrf_token" value="([^"]+)"/.exec(s.html)![1]!;
    await decide(srv, s, "approve");
    secrets.session = (await poll(srv, c, started.auth_request_id)).body.svc_session_token;
    const authUrl = new URL(started.auth_url);
    secrets.oauthState = authUrl.searchParams.get("state")!;

    // A server: its agent token, rotated once, used by the agent.
    const f = await newServer(srv, {}, owner);
    secrets.agent1 = f.agentToken;
    const newAgent = await api(srv, "POST", `/server/servers/${f.serverId}/agent-token`, {
      token: owner.token,
      headers: { "idempotency-key": "rotate-agent-token" },
    });
    const agent2: string = newAgent.body.agent_token;
    secrets.agent2 = agent2;
    await agentApi(srv, agent2, "POST", "/agent/heartbeat", { tps: 20 });
    await agentApi(srv, agent2, "POST", "/agent/events", {
      events: [{ event_id: eventId(), type: "join", uuid: "44444444-4444-4444-8444-444444444444", name: "Rester" }],
    });
    // A webhook endpoint: its signing secret, rotated with an overlap (so two are kept, sealed),
    // and a delivery signed with both.
    const hook = await api(srv, "POST", `/teams/${teamId}/webhooks`, {
      token: owner.token,
      body: { url: "https://hooks.invalid/in" },
    });
    secrets.webhookSecret1 = hook.body.secret;
    const hookPath = `/teams/${teamId}/webhooks/${hook.body.endpoint.endpoint_id}`;
    const rotatedHook = await api(srv, "POST", `${hookPath}/secret`, {
      token: owner.token,
      body: { overlap_seconds: 600 },
    });
    secrets.webhookSecret2 = rotatedHook.body.secret;
    // The key bytes themselves, without the whsec_ prefix, must not be there either.
    secrets.webhookKey1 = secrets.webhookSecret1!.slice("whsec_".length);
    secrets.webhookKey2 = secrets.webhookSecret2!.slice("whsec_".length);
    expect((await api(srv, "POST", `${hookPath}/test`, { token: owner.token })).status).toBe(200);

    // Two-factor sign-in: an authenticator app's secret (sealed), recovery codes (hashed), and a
    // sign-in challenge token (hashed) used with one of them.
    const totp = await enableTotp(srv, { ...owner, id: "" });
    secrets.totpSecret = totp.secret;
    totp.recoveryCodes.forEach((code, i) => {
      secrets[`recoveryCode${i}`] = code;
      secrets[`recoveryCodeBare${i}`] = code.replace("-", "");
    });
    const challenged = await api(srv, "POST", "/auth/login", { body: { email: owner.email, password } });
    secrets.challenge = challenged.body.challenge_token;
    const completed = await api(srv, "POST", "/auth/login/second-factor", {
      body: { challenge_token: secrets.challenge, recovery_code: totp.recoveryCodes[0] },
    });
    expect(completed.status).toBe(200);
    secrets.refresh3 = completed.body.refresh_token;

    for (const [k, v] of Object.entries(secrets))
      expect(`${k}: ${typeof v === "string" && v.length > 8}`).toBe(`${k}: true`);

    const dump = await dumpAll(srv.services.database.db as never);
    expect(Object.keys(dump)).toEqual(
      expect.arrayContaining([
        "public.users",
        "public.refresh_tokens",
        "public.api_keys",
        "public.client_apps",
        "public.sessions",
        "public.login_requests",
        "public.servers",
        "public.webhook_endpoints",
        "public.totp_factors",
        "public.recovery_codes",
        "public.two_factor_challenges",
      ]),
    );
    const everything = Object.values(dump).join("\n");
    for (const [name, value] of Object.entries(secrets)) {
      const found = Object.entries(dump)
        .filter(([, text]) => text.includes(value))
        .map(([table]) => table);
      expect(`${name} found in: [${found.join(", ")}]`).toBe(`${name} found in: []`);
    }
    // Nothing that even looks like one of our secrets or an upstream identity token is stored:
    // ours all carry a type prefix, the development provider's tokens a dev_ prefix, JWTs eyJ.
    // (A key's display label, prefix plus four characters, is not the key and is allowed.)
    for (const prefix of [
      "mcp_key_",
      "mcp_rt_",
      "mcp_cs_",
      "mcp_sess_",
      "mcp_agent_",
      "mcp_2fa_",
      "whsec_",
      "dev_code_",
      "dev_ms_",
      "dev_xbl_",
      "dev_xsts_",
      "dev_mc_",
      "dev_rt_",
      "eyJ",
    ]) {
      // At the start of a value, not inside another base64 run: on PostgreSQL the run's database
      // holds every file's users, and an argon2 salt or hash contains "eyJ" now and then.
      const token = new RegExp(`(?<![A-Za-z0-9+/_-])${prefix}[A-Za-z0-9_-]{16,}`);
      const found = Object.entries(dump)
        .filter(([, text]) => token.test(text))
        .map(([table]) => table);
      expect(`${prefix} found in: [${found.join(", ")}]`).toBe(`${prefix} found in: []`);
    }
    expect(everything).not.toContain("XBL3.0");
    // Both webhook secrets are stored sealed (AES-256-GCM), current and previous.
    expect(dump["public.webhook_endpoints"]).toMatch(/"secret_sealed":"v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"/);
    expect(dump["public.webhook_endpoints"]).toMatch(/"previous_secret_sealed":"v1\./);
    // The hashes are there (so the check above is looking at the right rows).
    expect(everything).toContain(new Bun.CryptoHasher("sha256").update(secrets.apiKey!).digest("hex"));
    expect(everything).toContain(new Bun.CryptoHasher("sha256").update(secrets.session!).digest("hex"));
  });
});
