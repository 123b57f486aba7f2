import { parse, type PGlite, protocol } from "@electric-sql/pglite";

type QueryFn = PGlite["query"];
type QueryOptions = NonNullable<Parameters<QueryFn>[2]>;
type Message = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number];

/** The members of PGlite's base class that its own `query` uses (public at run time, not typed). */
interface PgliteInternals {
  _checkReady(): Promise<void>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
  serializers: Record<number, (v: unknown) => string>;
}

interface Statement {
  name: string;
  paramTypes: number[];
  /** The statement's RowDescription from its Describe, or null when it returns no rows. */
  rows: Message | null;
}

/** Texts seen once are remembered (up to this many) so that a text seen again is prepared. */
const SEEN_LIMIT = 4096;
/** Each named statement keeps its plan in the WASM heap, which never shrinks: a fixed budget. */
const STATEMENT_LIMIT = 256;
/** PostgreSQL's answers that a named statement no longer fits: re-prepared once, on the plain path. */
const STALE = new Set(["0A000", "26000"]);

/**
 * PGlite's `query` parses, plans and describes every statement on every call (six protocol
 * round trips into the WASM instance). Repeated statements with parameters are here prepared
 * once under a name, as PostgreSQL drivers do with a server, and each call is one Bind, Describe,
 * Execute and Sync in one round trip; measured 5x cheaper per statement in a bare PGlite.
 * Transactions keep PGlite's own path; a text seen once, or past the budget, also does.
 * Results, parsers, serializers, errors and the sync to the file system are PGlite's own.
 */
export function withNamedStatements(client: PGlite, plain: QueryFn): QueryFn {
  const pg = client as unknown as PgliteInternals & PGlite;
  const seen = new Set<string>();
  const statements = new Map<string, Statement>();
  const { serialize } = protocol;
  const noSync = { syncToFs: false } as const;
  let made = 0;

  const prepare = async (text: string): Promise<Statement> => {
    const name = `mcp_s${made++}`;
    const described = await pg.execProtocolStream(
      concat(serialize.parse({ name, text, types: [] }), serialize.describe({ type: "S", name }), serialize.sync()),
      noSync,
    );
    // The row description is the statement's, the same at every execution (the results are
    // text): kept, it spares each execution a Describe, as drivers do with a server.
    const rows = described.find((m) => m.name === "rowDescription") ?? null;
    const st = { name, paramTypes: parse.parseDescribeStatementResults(described), rows };
    statements.set(text, st);
    return st;
  };

  return (async (text: string, params?: unknown[], options?: QueryOptions) => {
    if (!params?.length || options?.blob || options?.paramTypes || options?.serializers) {
      return plain(text, params, options);
    }
    let st = statements.get(text);
    if (!st) {
      if (statements.size >= STATEMENT_LIMIT || !seen.has(text)) {
        if (seen.size >= SEEN_LIMIT) seen.clear();
        seen.add(text);
        return plain(text, params, options);
      }
    }
    await pg._checkReady();
    try {
      return await pg._runExclusiveTransaction(() =>
        pg._runExclusiveQuery(async () => {
          st ??= statements.get(text) ?? (await prepare(text));
          const values = params.map((v, i) => {
            if (v === null || v === undefined) return null;
            const ser = pg.serializers[st!.paramTypes[i]!];
            return ser ? ser(v) : String(v);
          });
          let messages: Awaited<ReturnType<PGlite["execProtocolStream"]>>;
          try {
            messages = await pg.execProtocolStream(
              concat(serialize.bind({ statement: st.name, values }), serialize.execute({}), serialize.sync()),
              noSync,
            );
          } catch (e) {
            throw Object.assign(e as Error, { query: text, params, queryOptions: options });
          }
          // No sync to the file system: the service's PGlite writes through Node's file system,
          // whose sync is nothing (it is for the browser's IndexedDB and OPFS), and it would
          // take the instance's lock once more per statement.
          // The instance's parsers only: drizzle sends its own with every query (the same ones,
          // installed on the instance at startup), and PGlite would merge the two into a fresh
          // object per query, a copy of every type's parser (16% of the service's CPU on a run
          // of token requests).
          return parse.parseResults(
            st.rows ? [st.rows, ...messages] : messages,
            pg.parsers,
            options?.rowMode ? { rowMode: options.rowMode } : undefined,
          )[0];
        }),
      );
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code && STALE.has(code) && statements.has(text)) {
        statements.delete(text);
        return plain(text, params, options);
      }
      throw e;
    }
  }) as QueryFn;
}

function concat(...parts: Uint8Array[]) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
