import { beforeAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { users } from "../src/db/schema";
import { createLogger, type Logger } from "../src/lib/log";
import { newSecret } from "../src/lib/secrets";
import { sharedServer } from "./harness";
import { newUser } from "./helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

/** The real logger writing into an array instead of stdout/stderr. */
function captured(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger("debug", {}, { write: (_level, line) => lines.push(line) }), lines };
}

const HASH = "$argon2id$v=19$m=4096,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA";

describe("log redaction", () => {
  test("a database error carrying an email and an argon2 hash is logged without its parameters", async () => {
    const taken = await newUser(server, "dup");
    let thrown: unknown;
    try {
      await server.services.database.db.insert(users).values({ email: taken.email, passwordHash: HASH });
    } catch (err) {
      thrown = err;
    }
    // What the driver throws does carry both: the log line must not.
    const raw = `${(thrown as Error).message} ${String((thrown as Error).cause && JSON.stringify((thrown as Error).cause))}`;
    expect(raw).toContain(taken.email);
    expect(raw).toContain("$argon2id$");

    const { log, lines } = captured();
    log.error("unhandled error", { request_id: "r1", err: thrown });
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).not.toContain(taken.email);
    expect(line).not.toContain(taken.email.split("@")[0]!);
    expect(line).not.toContain("argon2");
    expect(line).not.toContain("c2FsdHNhbHRzYWx0");
    const entry = JSON.parse(line);
    // Still useful: the statement (placeholders only) and the SQLSTATE of the cause.
    expect(entry.err.message).toStartWith('Failed query: insert into "users"');
    expect(entry.err.cause.code).toBe("23505");
    expect(entry.err.stack).not.toContain("params:");
  });

  test("secrets are redacted by shape in messages, strings and nested values, and by field name", () => {
    const apiKey = newSecret("api_key");
    const refresh = newSecret("refresh");
    const jwt = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlc2lnbmF0dXJl";
    const { log, lines } = captured();
    log.warn(`lookup failed for ${apiKey}`, {
      note: `authorization was Bearer ${jwt}`,
      list: [refresh, { deeper: { still: { deeper: { value: jwt } } } }],
      who: "steve@example.com",
      stored: HASH,
      password_hash: "x",
      email: "plain-field",
      client_secret: "abc",
      path: "/teams",
    });
    const line = lines[0]!;
    for (const secret of [apiKey, refresh, jwt, "steve@example.com", "argon2", "plain-field", '"abc"']) {
      expect(line).not.toContain(secret);
    }
    const entry = JSON.parse(line);
    expect(entry.msg).toBe("lookup failed for [redacted]");
    expect(entry.note).toBe("authorization was [redacted]");
    expect(entry.path).toBe("/teams");
    expect(entry.password_hash).toBe("[redacted]");
  });

  test("values nested past the depth limit are dropped, not logged raw", () => {
    const { log, lines } = captured();
    log.info("deep", {
      a: { b: { c: { d: { e: { f: { secret_ish: "mcp_key_notscrubbedbyname", note: "keep" } } } } } },
    });
    expect(lines[0]).not.toContain("mcp_key_");
    expect(lines[0]).toContain("[truncated]");
  });
});
