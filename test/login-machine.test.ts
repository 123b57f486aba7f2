import { describe, expect, test } from "bun:test";
import { transition } from "xstate";
import {
  applyLoginEvent,
  initialLoginState,
  type LoginContext,
  type LoginEvent,
  type LoginState,
  type LoginStatus,
  loginRequestMachine,
} from "../machines/login-request";

const run = (...events: LoginEvent[]) =>
  events.reduce<LoginState | null>((s, e) => (s ? applyLoginEvent(s, e) : null), initialLoginState());

describe("login request machine (pure)", () => {
  test("pending -> authenticated -> authorized keeps the profile", () => {
    expect(run({ type: "AUTHENTICATE", mcUuid: "u", mcUsername: "Steve" }, { type: "APPROVE" })).toEqual({
      status: "authorized",
      context: { mcUuid: "u", mcUsername: "Steve" },
    });
  });

  test("denied from pending and from authenticated records the code", () => {
    expect(run({ type: "DENY", error: "no_xbox_profile" })).toEqual({
      status: "denied",
      context: { error: "no_xbox_profile" },
    });
    expect(
      run({ type: "AUTHENTICATE", mcUuid: "u", mcUsername: "Alex" }, { type: "DENY", error: "consent_denied" })?.status,
    ).toBe("denied");
  });

  test("expired from pending and from authenticated", () => {
    expect(run({ type: "EXPIRE" })).toEqual({ status: "expired", context: { error: "expired" } });
    expect(run({ type: "AUTHENTICATE", mcUuid: "u", mcUsername: "Alex" }, { type: "EXPIRE" })?.status).toBe("expired");
  });

  test("final states accept nothing, and approve needs an authenticated player", () => {
    for (const final of [
      run({ type: "EXPIRE" }),
      run({ type: "DENY", error: "account_banned" }),
      run({ type: "AUTHENTICATE", mcUuid: "u", mcUsername: "A" }, { type: "APPROVE" }),
    ]) {
      for (const e of [
        { type: "APPROVE" },
        { type: "EXPIRE" },
        { type: "DENY", error: "consent_denied" },
        { type: "AUTHENTICATE", mcUuid: "x", mcUsername: "y" },
      ] as LoginEvent[]) {
        expect(applyLoginEvent(final!, e)).toBeNull();
      }
    }
    expect(applyLoginEvent(initialLoginState(), { type: "APPROVE" })).toBeNull();
    expect(
      run(
        { type: "AUTHENTICATE", mcUuid: "u", mcUsername: "A" },
        { type: "AUTHENTICATE", mcUuid: "v", mcUsername: "B" },
      ),
    ).toBeNull();
  });

  test("every state and event steps as XState's own transition() does, call after call", () => {
    const statuses: LoginStatus[] = ["pending", "authenticated", "authorized", "denied", "expired"];
    const contexts: LoginContext[] = [
      {},
      { mcUuid: "u", mcUsername: "Steve" },
      { mcUuid: "u", mcUsername: "Steve", error: "expired" },
    ];
    const events: LoginEvent[] = [
      { type: "AUTHENTICATE", mcUuid: "v", mcUsername: "Alex" },
      { type: "APPROVE" },
      { type: "DENY", error: "consent_denied" },
      { type: "DENY", error: "no_minecraft_profile" },
      { type: "EXPIRE" },
    ];
    let steps = 0;
    for (let round = 0; round < 2; round++)
      for (const status of statuses)
        for (const context of contexts)
          for (const event of events) {
            const before = structuredClone(context);
            const snapshot = loginRequestMachine.resolveState({ value: status, context });
            const [next] = transition(loginRequestMachine, snapshot, event);
            const expected = next.value === status ? null : { status: next.value, context: next.context };
            expect(applyLoginEvent({ status, context }, event)).toEqual(expected as LoginState | null);
            // The state it was given is left as it was.
            expect(context).toEqual(before);
            if (expected) steps++;
          }
    // Pending and authenticated take events; the final states take none.
    expect(steps).toBe(2 * 3 * (4 + 4));
  });
});
