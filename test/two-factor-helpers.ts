import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";

type Cbor = Parameters<typeof isoCBOR.encode>[0];
import { Secret, TOTP } from "otpauth";
import type { RunningServer } from "../src/app";
import { api, type TestUser } from "./helpers";

const b64u = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");
const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest();

/**
 * A software authenticator speaking WebAuthn's JSON forms, for tests that run without a browser:
 * P-256 keys, "none" attestation, a signature counter. The browser tests use Chromium's virtual
 * authenticator instead; this one lets the API, matrix and fuzz tests hold real passkeys.
 */
export class SoftAuthenticator {
  private creds = new Map<string, { key: KeyObject; counter: number }>();

  constructor(
    readonly origin: string,
    readonly rpId = new URL(origin).hostname,
  ) {}

  create(options: { challenge: string }) {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const jwk = publicKey.export({ format: "jwk" });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, new Uint8Array(Buffer.from(jwk.x!, "base64url"))],
        [-3, new Uint8Array(Buffer.from(jwk.y!, "base64url"))],
      ]),
    );
    const id = randomBytes(16);
    const idLen = Buffer.alloc(2);
    idLen.writeUInt16BE(id.length);
    // flags: user present, user verified, attested credential data
    const authData = Buffer.concat([
      sha(this.rpId),
      Buffer.from([0x45]),
      Buffer.alloc(4),
      Buffer.alloc(16),
      idLen,
      id,
      cose,
    ]);
    const clientData = JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin: this.origin });
    const attestation = isoCBOR.encode(
      new Map<string, Cbor>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", new Uint8Array(authData)],
      ]),
    );
    this.creds.set(b64u(id), { key: privateKey, counter: 0 });
    return {
      id: b64u(id),
      rawId: b64u(id),
      type: "public-key" as const,
      response: { clientDataJSON: b64u(clientData), attestationObject: b64u(attestation), transports: ["usb"] },
      clientExtensionResults: {},
    };
  }

  /** An assertion with the first allowed credential this authenticator holds. */
  get(options: { challenge: string; allowCredentials?: { id: string }[] }, opts: { origin?: string } = {}) {
    const id = (options.allowCredentials ?? []).map((c) => c.id).find((c) => this.creds.has(c));
    if (!id) throw new Error("this authenticator holds none of the allowed credentials");
    const cred = this.creds.get(id)!;
    cred.counter++;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(cred.counter);
    const authData = Buffer.concat([sha(this.rpId), Buffer.from([0x05]), counter]);
    const clientData = JSON.stringify({
      type: "webauthn.get",
      challenge: options.challenge,
      origin: opts.origin ?? this.origin,
    });
    const signature = sign("sha256", Buffer.concat([authData, sha(clientData)]), cred.key);
    return {
      id,
      rawId: id,
      type: "public-key" as const,
      response: { clientDataJSON: b64u(clientData), authenticatorData: b64u(authData), signature: b64u(signature) },
      clientExtensionResults: {},
    };
  }
}

/**
 * The code of a time step relative to the current one. Waits out the last second of a step
 * first, so the step the code is made for is still the one the server compares against.
 */
export async function totpCode(secret: string, offsetSteps = 0): Promise<string> {
  if (TOTP.remaining({ period: 30 }) < 1500) await Bun.sleep(TOTP.remaining({ period: 30 }) + 50);
  const step = TOTP.counter({ period: 30 }) + offsetSteps;
  return TOTP.generate({ secret: Secret.fromBase32(secret), period: 30, timestamp: step * 30_000 + 1 });
}

async function ok(res: { status: number; text: string; body: any }, what: string) {
  if (res.status !== 200) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * Turns an authenticator app on for the account; answers the secret and the recovery codes.
 * The code confirming it is one step old, so the current and next steps stay free for sign-ins.
 */
export async function enableTotp(server: RunningServer, user: TestUser) {
  const setup = await ok(
    await api(server, "POST", "/auth/two-factor/totp", { token: user.token, body: { password: user.password } }),
    "TOTP set-up",
  );
  const confirmed = await ok(
    await api(server, "POST", "/auth/two-factor/totp/confirm", {
      token: user.token,
      body: { code: await totpCode(setup.secret, -1) },
    }),
    "TOTP confirm",
  );
  return { secret: setup.secret as string, recoveryCodes: confirmed.recovery_codes as string[] };
}

/** Registers a passkey held by a software authenticator; answers both. */
export async function addPasskey(
  server: RunningServer,
  user: TestUser,
  authenticator = new SoftAuthenticator(server.url),
) {
  const { options } = await ok(
    await api(server, "POST", "/auth/two-factor/passkeys/options", {
      token: user.token,
      body: { password: user.password },
    }),
    "passkey options",
  );
  const added = await ok(
    await api(server, "POST", "/auth/two-factor/passkeys", {
      token: user.token,
      body: { name: "Test key", response: authenticator.create(options) },
    }),
    "passkey registration",
  );
  return {
    authenticator,
    passkeyId: added.passkey.passkey_id as string,
    recoveryCodes: added.recovery_codes as string[],
  };
}
