import type { RunningServer } from "../../src/app";
import { api, type TestUser } from "../helpers";
import { enableTotp } from "../two-factor-helpers";

/**
 * Brings a fixture person's second factors to the state a request needs, whatever earlier
 * requests left: the security suite and the matrix send account requests for the same people.
 */
async function status(server: RunningServer, who: TestUser) {
  const res = await api(server, "GET", "/auth/two-factor", { token: who.token });
  if (res.status !== 200) throw new Error(`two-factor status: ${res.status} ${res.text}`);
  return res.body as { enabled: boolean; totp: { enabled: boolean }; passkeys: { passkey_id: string }[] };
}

export async function withoutTotp(server: RunningServer, who: TestUser) {
  if ((await status(server, who)).totp.enabled)
    await api(server, "POST", "/auth/two-factor/totp/remove", { token: who.token, body: { password: who.password } });
}

export async function ensureTotp(server: RunningServer, who: TestUser) {
  if (!(await status(server, who)).totp.enabled) await enableTotp(server, who);
}

export async function ensureFactor(server: RunningServer, who: TestUser) {
  if (!(await status(server, who)).enabled) await enableTotp(server, who);
}

/** No second factor at all, so a password alone signs in. */
export async function withoutFactors(server: RunningServer, who: TestUser) {
  const now = await status(server, who);
  if (now.totp.enabled) await withoutTotp(server, who);
  await removePasskeys(server, who, now.passkeys);
}

async function removePasskeys(server: RunningServer, who: TestUser, list: { passkey_id: string }[]) {
  for (const p of list)
    await api(server, "POST", `/auth/two-factor/passkeys/${p.passkey_id}/remove`, {
      token: who.token,
      body: { password: who.password },
    });
}

/** Room for one more passkey under the per-account limit: the oldest go when it is nearly full. */
export async function roomForPasskey(server: RunningServer, who: TestUser) {
  const { passkeys } = await status(server, who);
  await removePasskeys(server, who, passkeys.slice(0, Math.max(0, passkeys.length - 5)));
}
