import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { paths } from "./generated/openapi";
import { type Credential, resolveCredential } from "./trpc";

export interface RestClientOptions {
  /** The service's base URL, e.g. `https://mc.example.com`. */
  baseUrl: string;
  /** A user access token or a team API key, or a function returning the current one (called per request). */
  token?: Credential;
  fetch?: typeof fetch;
  /** Headers sent on every request (selectors may also be given per call: `params.header`). */
  headers?: Record<string, string>;
}

export type PlatformRestClient = Client<paths>;

/**
 * An openapi-fetch client typed from the service's OpenAPI document: paths, parameters (the
 * `x-team-id` / `x-server-id` headers among them), bodies and responses, error envelope included.
 */
export function createRestClient(options: RestClientOptions): PlatformRestClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    ...(options.fetch && { fetch: options.fetch }),
    ...(options.headers && { headers: options.headers }),
  });
  if (options.token !== undefined) {
    const auth: Middleware = {
      async onRequest({ request }) {
        const token = await resolveCredential(options.token);
        if (token && !request.headers.has("authorization")) request.headers.set("authorization", `Bearer ${token}`);
        return request;
      },
    };
    client.use(auth);
  }
  return client;
}
