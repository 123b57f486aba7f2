import type { DevProvider } from "./handlers";

/**
 * The chain's transport when the development provider is mounted in this same process: a
 * request for `<base>/<path>` goes straight to the provider's handler as the Request the
 * chain built, instead of out through a loopback socket and back in through the edge. The
 * handler, the request and the response are the ones HTTP would carry; only the socket, the
 * edge's bookkeeping (request id, limits, access log) and the HTTP parsing are skipped. The
 * timeout holds: the call is given up when the request's signal aborts, as fetch would.
 */
export function inProcessTransport(
  provider: DevProvider,
  base: string,
): (url: string, init: RequestInit) => Promise<Response> {
  const prefix = `${base.replace(/\/+$/, "")}/`;
  return (url, init) => {
    // Anything else (never asked for by the chain) takes the network as before.
    if (!url.startsWith(prefix)) return fetch(url, init);
    // The chain's bodies are strings: their length is declared, as fetch would send it.
    const headers = new Headers(init.headers);
    if (typeof init.body === "string") headers.set("content-length", String(Buffer.byteLength(init.body)));
    const request = new Request(`http://in-process/dev-idp/${url.slice(prefix.length)}`, { ...init, headers });
    const signal = init.signal;
    if (!signal) return provider.fetch(request);
    if (signal.aborted) return Promise.reject(signal.reason);
    return Promise.race([
      provider.fetch(request),
      new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
    ]);
  };
}
