/** The launcher backend and the browser of one ms_auth login, over real HTTP, for the benchmarks. */
import { hiddenFields } from "../../test/shared";

/** One JSON request; a 4xx or 5xx throws with the body. */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
  extra: RequestInit = {},
) {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(body !== undefined && { "content-type": "application/json" }),
      ...(token && { authorization: `Bearer ${token}` }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    ...extra,
  });
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

/** One whole login as launcher backend + browser; returns the session token. */
export async function loginFlow(base: string, creds: { client_id: string; client_secret: string }, name: string) {
  const started = (await (await call(base, "POST", "/client/ms-auth/start", creds)).json()) as {
    auth_request_id: string;
    auth_url: string;
  };
  const page = await (await fetch(started.auth_url)).text();
  const fields = hiddenFields(page);
  const submitted = await fetch(started.auth_url.split("?")[0]!, {
    method: "POST",
    body: new URLSearchParams({ ...fields, username: name, outcome: "success" }),
    redirect: "manual",
  });
  const callback = await fetch(submitted.headers.get("location")!, { redirect: "manual" });
  const consent = await callback.text();
  const cookie = callback.headers.get("set-cookie")!.split(";")[0]!;
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(consent)![1]!;
  const approved = await fetch(`${base}/client/ms-auth/authorize`, {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ auth_request_id: started.auth_request_id, csrf_token: csrf, decision: "approve" }),
    redirect: "manual",
  });
  if (approved.status !== 303) throw new Error(`approve: ${approved.status}`);
  const polled = (await (
    await call(base, "POST", "/client/ms-auth/poll", { ...creds, auth_request_id: started.auth_request_id })
  ).json()) as { status: string; svc_session_token: string };
  if (polled.status !== "authorized") throw new Error(`poll: ${polled.status}`);
  return { token: polled.svc_session_token, requestId: started.auth_request_id };
}

/** An account, its team, and a client application with ms_auth enabled: what a launcher's backend holds. */
export async function launcherClient(base: string, email = "bench@example.test") {
  await call(base, "POST", "/auth/signup", { email, password: "bench password" });
  const { access_token } = (await (
    await call(base, "POST", "/auth/login", { email, password: "bench password" })
  ).json()) as { access_token: string };
  const { team_id } = (await (await call(base, "POST", "/teams", { name: "bench" }, access_token)).json()) as {
    team_id: string;
  };
  const created = (await (
    await call(
      base,
      "POST",
      "/client/apps",
      { team_id, name: "bench", title: "Bench", description: "bench" },
      access_token,
    )
  ).json()) as {
    app: { client_id: string };
    client_secret: string;
  };
  const creds = { client_id: created.app.client_id, client_secret: created.client_secret };
  await call(
    base,
    "POST",
    `/client/apps/${creds.client_id}/modules/ms-auth`,
    { post_login_redirect_uri: "http://127.0.0.1:9/cb" },
    access_token,
  );
  return { accessToken: access_token, teamId: team_id, creds };
}

/**
 * One whole device-flow login: the launcher starts with flow "device"; a phone opens
 * verification_uri, types the code, signs in at the provider and approves; the launcher polls.
 */
export async function deviceLoginFlow(base: string, creds: { client_id: string; client_secret: string }, name: string) {
  const started = (await (await call(base, "POST", "/client/ms-auth/start", { ...creds, flow: "device" })).json()) as {
    auth_request_id: string;
    user_code: string;
    verification_uri: string;
  };
  const page = await fetch(started.verification_uri);
  const deviceCookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const { csrf_token } = hiddenFields(await page.text());
  const entered = await fetch(started.verification_uri, {
    method: "POST",
    headers: { cookie: deviceCookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf_token: csrf_token!, user_code: started.user_code }),
    redirect: "manual",
  });
  if (entered.status !== 303) throw new Error(`device code: ${entered.status}`);
  const authUrl = entered.headers.get("location")!;
  const fields = hiddenFields(await (await fetch(authUrl)).text());
  const submitted = await fetch(authUrl.split("?")[0]!, {
    method: "POST",
    body: new URLSearchParams({ ...fields, username: name, outcome: "success" }),
    redirect: "manual",
  });
  const callback = await fetch(submitted.headers.get("location")!, { redirect: "manual" });
  const consent = await callback.text();
  const cookie = callback.headers.get("set-cookie")!.split(";")[0]!;
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(consent)![1]!;
  const approved = await fetch(`${base}/client/ms-auth/authorize`, {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ auth_request_id: started.auth_request_id, csrf_token: csrf, decision: "approve" }),
    redirect: "manual",
  });
  if (approved.status !== 200) throw new Error(`approve: ${approved.status}`);
  await approved.arrayBuffer();
  const polled = (await (
    await call(base, "POST", "/client/ms-auth/poll", { ...creds, auth_request_id: started.auth_request_id })
  ).json()) as { status: string; svc_session_token: string };
  if (polled.status !== "authorized") throw new Error(`poll: ${polled.status}`);
  return { token: polled.svc_session_token, requestId: started.auth_request_id };
}
