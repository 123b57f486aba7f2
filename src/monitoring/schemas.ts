import { z } from "zod";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { METRIC_NAMES, METRICS_WINDOWS, type MetricName } from "./stats";

const windows = Object.keys(METRICS_WINDOWS) as [keyof typeof METRICS_WINDOWS, ...(keyof typeof METRICS_WINDOWS)[]];
const name = `(${METRIC_NAMES.join("|")})`;

export const ZMetricsQuery = z.object({
  window: z
    .enum(windows)
    .default("24h")
    .meta({
      description:
        "1h and 24h come from the one-minute tier (1 and 5 minute buckets); 7d, 30d and 90d from the hourly tier (1 h, 6 h, 1 day)",
      examples: ["24h"],
    }),
  metrics: z
    .string()
    .max(200)
    .regex(new RegExp(`^${name}(,${name})*$`), `a comma-separated list of ${METRIC_NAMES.join(", ")}`)
    .optional()
    .meta({
      description: "Which series to return; all when absent. `memory` brings `memory_max` along",
      examples: ["players,tps"],
    }),
});

/** The metric names a `metrics` parameter asks for, each once; all of them when absent. */
export const wantedMetrics = (param: string | undefined): MetricName[] =>
  param ? [...new Set(param.split(",") as MetricName[])] : [...METRIC_NAMES];

const ZNullable = z.number().nullable();
export const ZStat = z.object({ min: ZNullable, avg: ZNullable, max: ZNullable });
export const ZPoint = ZStat.extend({ ts: ZTimestamp.meta({ description: "Start of the bucket" }) });
const ZSeries = z.array(ZPoint).max(300);

const point = (ts: string, min: number, avg: number, max: number) => ({ ts, min, avg, max });
export const ZMetrics = z
  .object({
    server_id: ZUuid,
    window: z.enum(windows),
    from: ZTimestamp,
    to: ZTimestamp,
    bucket_seconds: z.number().int(),
    tier: z.enum(["minute", "hour"]).meta({ description: "Which stored resolution the buckets were summed from" }),
    metrics: z
      .object({
        players: ZSeries.optional().meta({ description: "Players online (agent heartbeats and pings)" }),
        tps: ZSeries.optional(),
        mspt: ZSeries.optional(),
        memory: ZSeries.optional().meta({ description: "Memory used, MB" }),
        memory_max: ZSeries.optional().meta({ description: "Memory the server may use, MB" }),
        latency: ZSeries.optional().meta({ description: "Server List Ping round trip, ms" }),
        online: ZSeries.optional().meta({ description: "1 up, 0 down per ping: avg is the uptime share" }),
      })
      .meta({ description: "One aligned series per requested metric; min/avg/max are null in a bucket without data" }),
  })
  .meta({
    examples: [
      {
        server_id: "0b8e3c1e-6f1a-4c3e-9a51-2f7d7c7e1a10",
        window: "1h",
        from: "2026-11-22T09:00:12.000Z",
        to: "2026-11-22T10:00:12.000Z",
        bucket_seconds: 60,
        tier: "minute",
        metrics: {
          players: [point("2026-11-22T09:00:00.000Z", 12, 13.5, 15), point("2026-11-22T09:01:00.000Z", 15, 15, 15)],
          tps: [point("2026-11-22T09:00:00.000Z", 19.2, 19.85, 20), point("2026-11-22T09:01:00.000Z", 20, 20, 20)],
        },
      },
    ],
  });

/** The `metrics` socket message's data: one closed one-minute bucket. */
export const ZMetricsMessage = z.object({
  bucket_seconds: z.literal(60),
  start: ZTimestamp,
  players: ZStat,
  tps: ZStat,
  mspt: ZStat,
  memory: ZStat,
  memory_max: ZStat,
  latency: ZStat,
  online: ZStat,
});
