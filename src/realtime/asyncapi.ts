import pkg from "../../package.json";
import { CLOSE } from "./socket";

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
    player_join: envelope("player_join", player, "A player joined (reported by the agent)."),
    player_leave: envelope("player_leave", player, "A player left (reported by the agent)."),
    status: envelope(
      "status",
      obj({
        online: { type: "boolean" },
        latency_ms: nullable("integer"),
        players_online: nullable("integer"),
        players_max: nullable("integer"),
        version: nullable("string"),
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
  const inbound = {
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
