import pkg from "../../package.json";
import { CLOSE } from "./socket";
import { DOWN_REASONS } from "../monitoring/down-reason";

type Json = Record<string, unknown>;

const nullable = (type: string, extra: Json = {}) => ({ type: [type, "null"], ...extra });
const envelope = (type: string, data: Json, description: string) => ({
  name: type,
  title: type,
  summary: description,
  contentType: "application/json",
  payload: {
    type: "object",
    required: ["type", "server_id", "ts", "data"],
    additionalProperties: false,
    properties: {
      type: { const: type },
      server_id: { type: "string", format: "uuid" },
      ts: { type: "string", format: "date-time", description: "When the change happened" },
      data,
    },
  },
});
const obj = (properties: Json, required: string[] = []) => ({ type: "object", properties, required });

const SERVER_ID = "5b0e1c1e-3f7d-4a55-9c43-8f0f4f1f2a10";
const NOTCH = { uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5", name: "Notch" };
const AT = "2026-03-14T10:02:11.204Z";
const stat = (min: number | null, avg: number | null, max: number | null) => ({ min, avg, max });

/** The `data` of one realistic message of each type the stream sends. */
const EVENT_EXAMPLES: Record<string, Json> = {
  auth_ok: { expires_at: "2026-03-14T10:17:11.000Z" },
  snapshot: {
    status: "up",
    online: true,
    latency_ms: 23,
    players_online: 1,
    players_max: 200,
    players: [NOTCH],
    version: "Paper 1.21.4",
    motd: "Blockworks Survival",
    checked_at: "2026-03-14T10:02:00.118Z",
    tps: 19.97,
    mspt: 18.4,
    memory_used_mb: 5120,
    memory_max_mb: 8192,
    last_heartbeat_at: "2026-03-14T10:02:05.730Z",
  },
  heartbeat: { tps: 19.97, mspt: 18.4, players_online: 41, memory_used_mb: 5120, memory_max_mb: 8192 },
  player_join: NOTCH,
  player_leave: NOTCH,
  status: {
    online: true,
    latency_ms: 23,
    players_online: 41,
    players_max: 200,
    version: "Paper 1.21.4",
    changed: false,
  },
  ban_added: {
    uuid: "853c80ef-3c37-49fd-aa49-938b674adae6",
    name: "jeb_",
    reason: "Griefing spawn",
    source: "dashboard",
    expires_at: null,
  },
  ban_lifted: { uuid: "853c80ef-3c37-49fd-aa49-938b674adae6" },
  ranks_changed: {
    action: "created",
    rank: {
      name: "vip",
      display_name: "VIP",
      weight: 10,
      prefix: "[VIP] ",
      suffix: null,
      permissions: ["essentials.fly"],
      parents: ["default"],
      created_at: AT,
      updated_at: AT,
    },
  },
  announcements_changed: {
    action: "updated",
    announcement: {
      announcement_id: "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f",
      message: "Vote for us daily at blockworks.example/vote",
      interval_seconds: 600,
      schedule: null,
      active: false,
      starts_at: null,
      ends_at: null,
      created_at: "2026-03-14T09:26:53.589Z",
      updated_at: AT,
    },
  },
  metrics: {
    bucket_seconds: 60,
    start: "2026-03-14T10:01:00.000Z",
    players: stat(40, 40.5, 41),
    tps: stat(19.8, 19.95, 20),
    mspt: stat(16.1, 18.4, 22.7),
    memory: stat(5010, 5102, 5120),
    memory_max: stat(8192, 8192, 8192),
    latency: stat(21, 23, 25),
    online: stat(1, 1, 1),
  },
  token_expiring: { expires_at: "2026-03-14T10:17:11.000Z" },
  pong: {},
};

/** Puts one example on each message: a whole envelope for events, the payload itself for controls. */
function withExamples(messages: Record<string, Json>, inbound: Record<string, Json>) {
  for (const [type, message] of Object.entries(messages)) {
    const ts = type === "metrics" ? "2026-03-14T10:01:00.000Z" : AT;
    message.examples = [{ name: type, payload: { type, server_id: SERVER_ID, ts, data: EVENT_EXAMPLES[type] } }];
  }
  inbound.auth!.examples = [
    {
      name: "auth",
      summary: "A fresh access token or a team API key",
      payload: { type: "auth", token: "mcp_key_7Hq2wE9rT4yU6iO8pA1sD3fG5hJ7kL9zX2cV4bN6" },
    },
  ];
  inbound.ping!.examples = [{ name: "ping", payload: { type: "ping" } }];
}

/**
 * The analytics stream, as an AsyncAPI 3.0 document served at /asyncapi.json beside
 * /openapi.json. Every message has the shape `{type, server_id, ts, data}`.
 */
export function buildAsyncApiDocument(publicUrl: string) {
  const url = new URL(publicUrl);
  const player = obj({ uuid: { type: "string", format: "uuid" }, name: { type: "string", maxLength: 16 } }, [
    "uuid",
    "name",
  ]);
  const messages: Record<string, Json> = {
    auth_ok: envelope(
      "auth_ok",
      obj({ expires_at: nullable("string", { format: "date-time" }) }),
      "The credential was accepted (on connect, and after each re-authentication). `expires_at` is null for API keys.",
    ),
    snapshot: envelope(
      "snapshot",
      obj({
        status: { enum: ["up", "down", "unknown"] },
        online: nullable("boolean"),
        latency_ms: nullable("integer"),
        players_online: { type: "integer" },
        players_max: nullable("integer"),
        players: { type: "array", items: player, maxItems: 100000 },
        version: nullable("string"),
        motd: nullable("string"),
        checked_at: nullable("string", { format: "date-time" }),
        tps: nullable("number"),
        mspt: nullable("number"),
        memory_used_mb: nullable("integer"),
        memory_max_mb: nullable("integer"),
        last_heartbeat_at: nullable("string", { format: "date-time" }),
      }),
      "Sent once after authentication, before any event: the server's current state.",
    ),
    heartbeat: envelope(
      "heartbeat",
      obj({
        tps: { type: "number" },
        mspt: { type: "number" },
        players_online: { type: "integer" },
        memory_used_mb: { type: "integer" },
        memory_max_mb: { type: "integer" },
      }),
      "The server agent reported its performance.",
    ),
    player_join: envelope(
      "player_join",
      player,
      "A player joined: reported by the agent, or, on a server with no agent running, listed by a ping with no session open.",
    ),
    player_leave: envelope(
      "player_leave",
      player,
      "A player left: reported by the agent, missing from a complete ping sample, the server found down, or a session nobody vouched for within the timeout.",
    ),
    status: envelope(
      "status",
      obj({
        online: { type: "boolean" },
        latency_ms: nullable("integer"),
        players_online: nullable("integer"),
        players_max: nullable("integer"),
        version: nullable("string"),
        down_reason: nullable("string", {
          enum: [...DOWN_REASONS, null],
          description:
            "Why the check found the server down (as the server record's `status.down_reason`); null when up",
        }),
        changed: { type: "boolean", description: "True when up/down differs from the previous check" },
      }),
      "A Server List Ping by the platform's pinger.",
    ),
    ban_added: envelope(
      "ban_added",
      obj({
        uuid: { type: "string" },
        name: { type: "string" },
        reason: { type: "string" },
        source: { type: "string" },
        expires_at: nullable("string", { format: "date-time" }),
      }),
      "A ban was added, in game or from the dashboard.",
    ),
    ban_lifted: envelope("ban_lifted", obj({ uuid: { type: "string" } }), "A ban was lifted."),
    ranks_changed: envelope(
      "ranks_changed",
      obj({ action: { enum: ["created", "updated", "deleted"] }, rank: { type: "object" } }),
      "A rank was created, updated or deleted.",
    ),
    announcements_changed: envelope(
      "announcements_changed",
      obj({ action: { enum: ["created", "updated", "deleted"] }, announcement: { type: "object" } }),
      "An announcement was created, updated or deleted.",
    ),
    metrics: envelope(
      "metrics",
      obj(
        {
          bucket_seconds: { const: 60 },
          start: { type: "string", format: "date-time", description: "Start of the minute that closed" },
          ...Object.fromEntries(
            ["players", "tps", "mspt", "memory", "memory_max", "latency", "online"].map((k) => [
              k,
              obj({ min: nullable("number"), avg: nullable("number"), max: nullable("number") }, ["min", "avg", "max"]),
            ]),
          ),
        },
        ["bucket_seconds", "start", "players", "tps", "mspt", "memory", "memory_max", "latency", "online"],
      ),
      "A one-minute bucket of the server's metric history closed (the first sample of the next minute arrived): the same figures `GET /server/metrics?window=1h` returns for that minute, so a chart appends it without refetching. `online` is 1 up / 0 down per ping, its avg the share up.",
    ),
    token_expiring: envelope(
      "token_expiring",
      obj({ expires_at: { type: "string", format: "date-time" } }),
      "The access token expires soon: send an `auth` message with a fresh one to keep the stream, or it closes with 4011 at expiry.",
    ),
    pong: envelope("pong", obj({}), "Answer to a `ping` message."),
  };
  const inbound: Record<string, Json> = {
    auth: {
      name: "auth",
      contentType: "application/json",
      summary: "Authenticate (browsers, as the first message within 5 s) or re-authenticate with a fresh token.",
      payload: obj({ type: { const: "auth" }, token: { type: "string", maxLength: 2048 } }, ["type", "token"]),
    },
    ping: {
      name: "ping",
      contentType: "application/json",
      summary: "Application-level ping; answered with `pong`.",
      payload: obj({ type: { const: "ping" } }, ["type"]),
    },
  };
  withExamples(messages, inbound);
  const closeCodes = Object.entries(CLOSE)
    .map(([k, v]) => `${v} ${k}`)
    .join(", ");
  return {
    asyncapi: "3.0.0",
    info: {
      title: "Server analytics stream",
      version: pkg.version,
      description:
        "Live events of one game server over a WebSocket. Authenticate with `authorization: Bearer <access token or team API key>` on the upgrade, " +
        'or send `{"type":"auth","token":...}` first (browsers). Viewer role or higher in the server\'s team. You receive `auth_ok`, one `snapshot`, then events in order. ' +
        `Close codes: ${closeCodes}; 1008/1013-style closes from the server at the backpressure limit mean the client read too slowly. ` +
        "A server outside your teams closes with the same code as an unknown one (4004).",
    },
    servers: {
      service: {
        host: url.host,
        protocol: url.protocol === "https:" ? "wss" : "ws",
        security: [{ $ref: "#/components/securitySchemes/bearer" }],
      },
    },
    channels: {
      analytics: {
        address: "/ws/server/{server_id}/analytics",
        parameters: { server_id: { description: "The server's id (uuid)" } },
        messages: Object.fromEntries(
          [...Object.keys(messages), ...Object.keys(inbound)].map((k) => [k, { $ref: `#/components/messages/${k}` }]),
        ),
      },
    },
    operations: {
      receiveServerEvents: {
        action: "receive",
        channel: { $ref: "#/channels/analytics" },
        messages: Object.keys(messages).map((k) => ({ $ref: `#/channels/analytics/messages/${k}` })),
      },
      sendControl: {
        action: "send",
        channel: { $ref: "#/channels/analytics" },
        messages: Object.keys(inbound).map((k) => ({ $ref: `#/channels/analytics/messages/${k}` })),
      },
    },
    components: {
      messages: { ...messages, ...inbound },
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "User access token (JWT) or team API key" },
      },
    },
  };
}
