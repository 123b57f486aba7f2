/**
 * Whether the service can be reached. A request that cannot reach it (no answer, or a gateway's
 * 502/504) puts the page in the "reconnecting" state: `/health` is asked with backoff until it
 * answers, then listeners hear the service is back (queries are read again, live sockets
 * reconnect at once), so the page recovers by itself, without a reload.
 */

type Listener = (reachable: boolean) => void;

let reachable = true;
let probing = false;
const listeners = new Set<Listener>();

function set(value: boolean) {
  if (reachable === value) return;
  reachable = value;
  for (const l of listeners) l(value);
}

async function healthy(): Promise<boolean> {
  try {
    return (await fetch("/health", { cache: "no-store" })).ok;
  } catch {
    return false;
  }
}

async function probe() {
  if (probing) return;
  probing = true;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5_000)) {
    await new Promise((r) => setTimeout(r, delay));
    if (await healthy()) break;
  }
  probing = false;
  set(true);
}

export const connection = {
  reachable: () => reachable,
  subscribe(l: Listener) {
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  },
  /** A request could not reach the service. */
  lost() {
    set(false);
    void probe();
  },
  /** Something looked wrong (a socket dropped, a 503): ask once, and say so only if that fails too. */
  verify() {
    if (reachable) void healthy().then((ok) => !ok && connection.lost());
  },
  /** Resolves once the service is reachable again (after a short pause if it is reachable now). */
  back(): Promise<void> {
    if (reachable) return new Promise((r) => setTimeout(r, 2_000));
    return new Promise((resolve) => {
      const off = connection.subscribe((ok) => {
        if (!ok) return;
        off();
        resolve();
      });
    });
  },
};

/** `fetch`, telling `connection` when the answer shows the service is out of reach. */
export async function watchedFetch(input: URL | RequestInfo, init?: RequestInit): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(input, init);
  } catch (err) {
    if (!init?.signal?.aborted) connection.lost();
    throw err;
  }
  if (res.status === 502 || res.status === 504) connection.lost();
  else if (res.status === 503) connection.verify();
  return res;
}
