import { describe, expect, test } from "bun:test";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { decodeProtectedHeader, jwtVerify } from "jose";
import { createLogger } from "../src/lib/log";
import { IdTokenSigner } from "../src/oidc/signer";

/** The ID token signer's own thread against signing in place: the same tokens, verifiable with the public key. */
const log = createLogger("error");
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ed = generateKeyPairSync("ed25519");
const keys = [
  { kid: "rsa-1", alg: "RS256", key: rsa.privateKey, pub: createPublicKey(rsa.privateKey) },
  { kid: "ed-1", alg: "EdDSA", key: ed.privateKey, pub: createPublicKey(ed.privateKey) },
];
const claims = (n: number) => ({
  iss: "https://mc.example.test",
  sub: "069a79f4-44e9-4726-a5be-fca90e38aaf5",
  aud: "client-1",
  iat: 1_800_000_000,
  exp: 1_800_000_300,
  nonce: `n-${n}`,
  preferred_username: "Notch",
});

describe("ID token signer", () => {
  test("on its thread, many at once, RS256 and EdDSA: each token verifies with its public key and carries its own claims", async () => {
    const signer = new IdTokenSigner(log);
    try {
      const jobs = Array.from({ length: 40 }, (_, i) => ({ key: keys[i % 2]!, c: claims(i) }));
      const jwts = await Promise.all(jobs.map((j) => signer.sign(j.key, j.c)));
      for (const [i, jwt] of jwts.entries()) {
        const { key, c } = jobs[i]!;
        expect(decodeProtectedHeader(jwt)).toEqual({ alg: key.alg, kid: key.kid, typ: "JWT" });
        const { payload } = await jwtVerify(jwt, key.pub, {
          issuer: c.iss,
          audience: c.aud,
          currentDate: new Date(c.iat * 1000),
        });
        expect(payload).toEqual(c);
      }
    } finally {
      signer.close();
    }
  });

  test("in place (no thread) the tokens are the same; after close, signing starts a new thread", async () => {
    const inline = new IdTokenSigner(log, true);
    const threaded = new IdTokenSigner(log);
    try {
      const a = await inline.sign(keys[1]!, claims(1));
      const b = await threaded.sign(keys[1]!, claims(1));
      // EdDSA is deterministic: the same key and claims make the same token on either path.
      expect(b).toBe(a);
      threaded.close();
      const c = await threaded.sign(keys[1]!, claims(1));
      expect(c).toBe(a);
    } finally {
      threaded.close();
    }
  });
});
