import { RedisClient } from "bun";

/** The Redis the Redis tests use: TEST_REDIS_URL, or this machine's default port. */
export const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** Whether that Redis answers; the Redis tests are skipped (saying why) when it does not. */
export async function redisReachable(): Promise<boolean> {
  const client = new RedisClient(redisUrl, { connectionTimeout: 1000, maxRetries: 0, enableOfflineQueue: false });
  try {
    await client.connect();
    return (await client.send("PING", [])) === "PONG";
  } catch {
    return false;
  } finally {
    client.close();
  }
}

export const REDIS_SKIP_REASON = `Redis is not reachable at ${redisUrl} (set TEST_REDIS_URL): the Redis rate-limit tests are skipped`;

/** A private redis-server on a free port that a test can stop and start again; null without the binary. */
export async function ownRedis(port: number) {
  const bin = Bun.which("redis-server");
  if (!bin) return null;
  let proc: ReturnType<typeof Bun.spawn> | undefined;
  const start = async () => {
    proc = Bun.spawn([bin, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdout: "ignore",
      stderr: "ignore",
    });
    for (let i = 0; i < 50; i++) {
      const up = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
        (s) => {
          s.end();
          return true;
        },
        () => false,
      );
      if (up) return;
      await Bun.sleep(50);
    }
    throw new Error("redis-server did not start");
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      proc?.kill();
      await proc?.exited;
    },
  };
}
