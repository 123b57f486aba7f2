import { describe, expect, test } from "bun:test";
import { ConfigError, parseConfig } from "../src/config";

describe("config", () => {
  test("defaults describe the embedded setup", () => {
    const c = parseConfig({});
    expect(c.PORT).toBe(3000);
    expect(c.PUBLIC_URL).toBe("http://localhost:3000");
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.DATA_DIR).toBe(".data");
    expect(c.LOG_LEVEL).toBe("info");
    expect(c.NODE_ENV).toBe("development");
  });

  test("PUBLIC_URL follows PORT unless given, without a trailing slash", () => {
    expect(parseConfig({ PORT: "8080" }).PUBLIC_URL).toBe("http://localhost:8080");
    expect(parseConfig({ PUBLIC_URL: "https://mc.example.com/" }).PUBLIC_URL).toBe("https://mc.example.com");
  });

  test("a bad value fails with a message naming each bad variable", () => {
    let err: unknown;
    try {
      parseConfig({ PORT: "seventy", DATABASE_URL: "mysql://x", LOG_LEVEL: "loud" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toContain("PORT");
    expect(msg).toContain("DATABASE_URL");
    expect(msg).toContain("LOG_LEVEL");
  });

  test("the player-session sweep runs at half the timeout, at most each minute, unless PLAYER_SESSION_SWEEP_SECONDS says", () => {
    expect(parseConfig({}).PLAYER_SESSION_SWEEP_SECONDS).toBe(60);
    expect(parseConfig({ PLAYER_SESSION_TIMEOUT_SECONDS: "90" }).PLAYER_SESSION_SWEEP_SECONDS).toBe(45);
    expect(parseConfig({ PLAYER_SESSION_SWEEP_SECONDS: "5" }).PLAYER_SESSION_SWEEP_SECONDS).toBe(5);
    for (const bad of ["0", "-3", "1.5", "soon"])
      expect(() => parseConfig({ PLAYER_SESSION_SWEEP_SECONDS: bad })).toThrow(/PLAYER_SESSION_SWEEP_SECONDS/);
  });

  test("the service refuses to start on bad config and names the variable", async () => {
    const proc = Bun.spawn([process.execPath, "src/main.ts"], {
      env: { ...process.env, PORT: "-1", DATABASE_URL: "" },
      stderr: "pipe",
      stdout: "pipe",
    });
    const code = await proc.exited;
    const stderr = await new Response(proc.stderr).text();
    expect(code).toBe(1);
    expect(stderr).toContain("PORT");
    expect(stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });
});

describe("private outbound targets", () => {
  test("are allowed outside production, so a first run can ping a server on the same machine", () => {
    for (const NODE_ENV of [undefined, "development", "test"]) {
      const c = parseConfig({ NODE_ENV });
      expect(c.OUTBOUND_ALLOW_PRIVATE).toBe(true);
      expect(c.WEBHOOK_ALLOW_PRIVATE).toBe(true);
    }
  });

  test("are refused in production unless OUTBOUND_ALLOW_PRIVATE=true; webhooks follow it unless set on their own", () => {
    const prod = { NODE_ENV: "production", DEV_IDP_ENABLED: "true" };
    expect(parseConfig(prod)).toMatchObject({ OUTBOUND_ALLOW_PRIVATE: false, WEBHOOK_ALLOW_PRIVATE: false });
    expect(parseConfig({ ...prod, OUTBOUND_ALLOW_PRIVATE: "true" })).toMatchObject({
      OUTBOUND_ALLOW_PRIVATE: true,
      WEBHOOK_ALLOW_PRIVATE: true,
    });
    expect(parseConfig({ ...prod, WEBHOOK_ALLOW_PRIVATE: "true" })).toMatchObject({
      OUTBOUND_ALLOW_PRIVATE: false,
      WEBHOOK_ALLOW_PRIVATE: true,
    });
    expect(parseConfig({ OUTBOUND_ALLOW_PRIVATE: "false" })).toMatchObject({
      OUTBOUND_ALLOW_PRIVATE: false,
      WEBHOOK_ALLOW_PRIVATE: false,
    });
  });
});

describe("identity provider configuration", () => {
  test("the development identity provider is on by default outside production", () => {
    expect(parseConfig({}).DEV_IDP_ENABLED).toBe(true);
    expect(parseConfig({ MS_CLIENT_ID: "app", MS_CLIENT_SECRET: "s" }).DEV_IDP_ENABLED).toBe(false);
  });

  test("production refuses to start without a Microsoft app unless the development provider is enabled explicitly", () => {
    expect(() => parseConfig({ NODE_ENV: "production" })).toThrow(/MS_CLIENT_ID/);
    expect(parseConfig({ NODE_ENV: "production", MS_CLIENT_ID: "app" }).DEV_IDP_ENABLED).toBe(false);
    expect(parseConfig({ NODE_ENV: "production", DEV_IDP_ENABLED: "true" }).DEV_IDP_ENABLED).toBe(true);
  });
});
