import { expect } from "bun:test";
import { createTRPCClient, httpLink } from "@trpc/client";
import type { RunningServer } from "../src/app";
import type { AppRouter } from "../src/trpc/router";

export interface ApiResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface ApiOptions {
  token?: string;
  body?: unknown;
  /** Sent as is, no JSON encoding and no content-type added. */
  rawBody?: BodyInit;
  headers?: Record<string, string>;
}

/** One real HTTP request to the server, body parsed as JSON when it is JSON. */
export async function api<T = any>(
  server: RunningServer,
  method: string,
  path: string,
  opts: ApiOptions = {},
): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: BodyInit | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(server.url + path, { method, headers, body, redirect: "manual" });
  const text = await res.text();
  let parsed: unknown = text;
  if (res.headers.get("content-type")?.includes("json")) parsed = text ? JSON.parse(text) : null;
  return { status: res.status, body: parsed as T, headers: res.headers, text };
}

/** Asserts the common error envelope, its status and code, and returns the error. */
export function expectError(res: ApiResult, status: number, code?: string) {
  // Explicit checks: the body is read again by callers, so it must not be handed to matchers.
  expect(`${res.status} ${res.text}`).toStartWith(`${status} {"error":`);
  const error = res.body.error;
  expect(typeof error.message).toBe("string");
  expect(typeof error.request_id).toBe("string");
  if (code) expect(error.code).toBe(code);
  expect(error.request_id).toBe(res.headers.get("x-request-id")!);
  expect(res.text).not.toMatch(/\bat .+:\d+:\d+|stack/i);
  return res.body.error as { code: string; message: string; details?: any; request_id: string };
}

let seq = 0;
export const uniqueEmail = (tag = "user") =>
  `${tag}-${Date.now().toString(36)}-${(seq++).toString(36)}-${Math.random().toString(36).slice(2, 6)}@example.test`;

export interface TestUser {
  id: string;
  email: string;
  password: string;
  token: string;
  refresh: string;
}

export async function newUser(server: RunningServer, tag?: string): Promise<TestUser> {
  const email = uniqueEmail(tag);
  const password = "correct horse battery";
  const signup = await api(server, "POST", "/auth/signup", { body: { email, password } });
  expect(`${signup.status} ${signup.text}`).toStartWith("201");
  const login = await api(server, "POST", "/auth/login", { body: { email, password } });
  expect(`${login.status} ${login.text}`).toStartWith("200");
  return { id: signup.body.id, email, password, token: login.body.access_token, refresh: login.body.refresh_token };
}

export async function newTeam(server: RunningServer, owner: TestUser, name = `Team ${seq++}`): Promise<string> {
  const res = await api(server, "POST", "/teams", { token: owner.token, body: { name } });
  expect(res.status).toBe(201);
  return res.body.team_id;
}

/** An invitation from `inviter` to `email`, answered 201; returns its id. */
export async function invite(
  server: RunningServer,
  inviter: TestUser,
  teamId: string,
  email: string,
  role: "admin" | "moderator" | "viewer",
): Promise<string> {
  const res = await api(server, "POST", `/teams/${teamId}/members`, { token: inviter.token, body: { email, role } });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return res.body.invitation_id;
}

/** Makes `member` a member as the service allows it: `owner` invites them, and they accept. */
export async function addMember(
  server: RunningServer,
  owner: TestUser,
  teamId: string,
  member: TestUser,
  role: "admin" | "moderator" | "viewer",
) {
  const invitationId = await invite(server, owner, teamId, member.email, role);
  const res = await api(server, "POST", `/invitations/${invitationId}/accept`, { token: member.token });
  expect(`${res.status} ${res.text}`).toStartWith("200");
}

export async function newApiKey(
  server: RunningServer,
  owner: TestUser,
  teamId: string,
  role: "admin" | "moderator" | "viewer" | { scopes: string[]; server_ids?: string[]; expires_at?: string },
): Promise<{ key: string; id: string }> {
  const grant = typeof role === "string" ? { role } : role;
  const res = await api(server, "POST", `/teams/${teamId}/api-keys`, {
    token: owner.token,
    body: { name: typeof role === "string" ? `${role} key` : "scoped key", ...grant },
  });
  expect(res.status).toBe(201);
  return { key: res.body.key, id: res.body.api_key.key_id };
}

/** The typed door, as a TypeScript launcher would use it. */
export function trpcClient(server: RunningServer, token?: string, headers: Record<string, string> = {}) {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${server.url}/trpc`,
        headers: () => ({ ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) }),
      }),
    ],
  });
}
