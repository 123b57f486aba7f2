import { assign, setup, transition, type SnapshotFrom } from "xstate";
import type { DenialCode } from "./denials";

/**
 * A login request's lifecycle. The only place a status changes: the login service restores a
 * snapshot from the database, applies one event with the pure `transition`, and persists the
 * result with an optimistic version check. No timers live here: XState does not restore
 * `after` timers from a snapshot, so expiry is an EXPIRE event the service sends when a
 * request past its stored deadline is loaded, and from a periodic sweep.
 */
export interface LoginContext {
  mcUuid?: string;
  mcUsername?: string;
  error?: DenialCode | "expired";
}

export type LoginEvent =
  | { type: "AUTHENTICATE"; mcUuid: string; mcUsername: string }
  | { type: "APPROVE" }
  | { type: "DENY"; error: DenialCode }
  | { type: "EXPIRE" };

export const loginRequestMachine = setup({
  types: { context: {} as LoginContext, events: {} as LoginEvent },
}).createMachine({
  id: "loginRequest",
  initial: "pending",
  context: {},
  states: {
    pending: {
      on: {
        AUTHENTICATE: {
          target: "authenticated",
          actions: assign(({ event }) => ({ mcUuid: event.mcUuid, mcUsername: event.mcUsername })),
        },
        DENY: { target: "denied", actions: assign(({ event }) => ({ error: event.error })) },
        EXPIRE: { target: "expired", actions: assign({ error: "expired" as const }) },
      },
    },
    authenticated: {
      on: {
        APPROVE: { target: "authorized" },
        DENY: { target: "denied", actions: assign(({ event }) => ({ error: event.error })) },
        EXPIRE: { target: "expired", actions: assign({ error: "expired" as const }) },
      },
    },
    authorized: { type: "final" },
    denied: { type: "final" },
    expired: { type: "final" },
  },
});

export type LoginStatus = "pending" | "authenticated" | "authorized" | "denied" | "expired";
export const FINAL_STATUSES: readonly LoginStatus[] = ["authorized", "denied", "expired"];

export interface LoginState {
  status: LoginStatus;
  context: LoginContext;
}

type Snapshot = SnapshotFrom<typeof loginRequestMachine>;

export function initialLoginState(): LoginState {
  return { status: "pending", context: {} };
}

/**
 * Applies one event. Returns the next state, or null when the event is not accepted in the
 * current state (a final state, or an event that state does not handle).
 */
export function applyLoginEvent(state: LoginState, event: LoginEvent): LoginState | null {
  const snapshot = loginRequestMachine.resolveState({ value: state.status, context: state.context }) as Snapshot;
  const [next] = transition(loginRequestMachine, snapshot, event);
  if (next.value === snapshot.value) return null;
  return { status: next.value as LoginStatus, context: next.context };
}
