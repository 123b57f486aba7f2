/**
 * The one message shape on the analytics stream and on the bus between instances:
 * `{type, server_id, ts, data}`. docs/realtime.md and /asyncapi.json describe each type.
 */
export { SERVER_EVENT_TYPES, type ServerEvent, type ServerEventType } from "../../machines/events";
import type { ServerEventType } from "../../machines/events";

/** Where services report changes to a server; the realtime layer carries them everywhere. */
export interface ServerEventSink {
  publish(serverId: string, type: ServerEventType, data: Record<string, unknown>, ts?: Date): void;
}

/** For code paths (and tests) with no realtime layer. */
export const NO_EVENTS: ServerEventSink = { publish() {} };

/**
 * Resolves on the event loop's next turn. Bun sends what was published to a topic only when
 * the loop turns, so a handler that publishes and then runs synchronous work (a PGlite query
 * runs on this thread) holds every subscriber's copy until that work ends; awaiting this
 * between the two lets the sends go first.
 */
export const afterSends = () => new Promise<void>((resolve) => setImmediate(resolve));
