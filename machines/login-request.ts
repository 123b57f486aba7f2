import { assign, createActor, setup, type SnapshotFrom } from "xstate";
import type { DenialCode } from "./denials";

/**
 * A login request's lifecycle. The only place a status changes: the login service restores a
 * snapshot from the database, applies one event with the pure `transition`, and persists the
 * result with an optimistic version check. No timers live here: XState does not restore
 * `after` timers from a snapshot, so expiry is an EXPIRE event the service sends when a
 * request past its stored deadline is loaded, and from a periodic sweep.
 */
/** The player's active skin and cape, as the Minecraft profile showed them at sign-in. */
export interface PlayerTextures {
  /** The ACTIVE skin: its texture URL (textures.minecraft.net) and model. */
  skin: { url: string; variant: "CLASSIC" | "SLIM" } | null;
  /** The ACTIVE cape, if the player wears one: its texture URL and Mojang's name for it. */
  cape: { url: string; alias: string | null } | null;
}

export interface LoginContext {
  mcUuid?: string;
  mcUsername?: string;
  /** Absent on requests authenticated before textures were recorded. */
  textures?: PlayerTextures;
  error?: DenialCode | "expired";
}

export type LoginEvent =
  | { type: "AUTHENTICATE"; mcUuid: string; mcUsername: string; textures?: PlayerTextures }
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
          actions: assign(({ event }) => ({
            mcUuid: event.mcUuid,
            mcUsername: event.mcUsername,
            ...(event.textures && { textures: event.textures }),
          })),
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
 * The actor scope `machine.transition` runs in: what XState's `transition()` builds for every
 * call (an actor and its system, half the cost of a call), built once. The machine has no
 * actions to execute (its only ones are `assign`, applied within the step), no children and
 * no delays, so nothing is ever recorded in it; calls are synchronous, so none can overlap.
 */
let scope: Parameters<typeof loginRequestMachine.transition>[2] | undefined;
function inertScope() {
  if (!scope) {
    const self = createActor(loginRequestMachine);
    scope = {
      self,
      defer: () => {},
      id: "",
      logger: () => {},
      sessionId: "",
      stopChild: () => {},
      system: self.system,
      emit: () => {},
      actionExecutor: () => {},
    };
  }
  return scope;
}

/**
 * Applies one event. Returns the next state, or null when the event is not accepted in the
 * current state (a final state, or an event that state does not handle). The same step as
 * XState's pure `transition(machine, snapshot, event)` (test/login-machine.test.ts holds them
 * equal for every state and event).
 */
export function applyLoginEvent(state: LoginState, event: LoginEvent): LoginState | null {
  const snapshot = loginRequestMachine.resolveState({ value: state.status, context: state.context }) as Snapshot;
  const next = loginRequestMachine.transition(snapshot, event, inertScope());
  if (next.value === snapshot.value) return null;
  return { status: next.value as LoginStatus, context: next.context };
}
