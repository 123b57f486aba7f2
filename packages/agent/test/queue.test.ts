import { expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../../test/harness";
import { createLogger } from "../src/log";
import { DiskQueue } from "../src/store";

const event = (n: number) => ({
  event_id: `e.${n}`,
  type: "unban" as const,
  uuid: "853c80ef-3c37-49fd-aa49-938b674adae6",
});

test("the on-disk queue keeps order across a reopen, stops at its bound with one clear log line, and empties when drained", () => {
  const dir = tempDir();
  const lines: any[] = [];
  const log = createLogger("info", (l) => lines.push(JSON.parse(l)));
  const q = new DiskQueue(dir, 4096, log);
  for (let i = 0; i < 100; i++) q.append([event(i)]);
  const full = lines.filter((l) => l.msg === "queue_full");
  expect(full).toHaveLength(1);
  expect(full[0]).toMatchObject({ level: "error", max_bytes: 4096 });
  expect(q.dropped).toBeGreaterThan(0);
  expect(statSync(join(dir, "queue.jsonl")).size).toBeLessThanOrEqual(4096);

  const first = q.peek(10, 48 * 1024);
  expect(first.events.map((e) => e.event_id)).toEqual(Array.from({ length: 10 }, (_, i) => `e.${i}`));
  q.ack(first.end);
  // A restart resumes after the last acknowledged batch.
  const reopened = new DiskQueue(dir, 4096, log);
  const kept = 100 - q.dropped;
  const rest = reopened.peek(500, 48 * 1024);
  expect(rest.events.map((e) => e.event_id)).toEqual(Array.from({ length: kept - 10 }, (_, i) => `e.${i + 10}`));
  reopened.ack(rest.end);
  expect(reopened.pendingBytes).toBe(0);
  expect(statSync(join(dir, "queue.jsonl")).size).toBe(0);
});
