import { z } from "zod";

const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");

const ConfigSchema = z
  .object({
    NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default("0.0.0.0"),
    PUBLIC_URL: z.url().optional(),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
      .optional(),
    DATA_DIR: z.string().min(1).default(".data"),
    LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
    /** PEM (PKCS#8) Ed25519 private key for access tokens; generated into DATA_DIR when unset. */
    JWT_PRIVATE_KEY: z.string().includes("PRIVATE KEY").optional(),
    ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(900),
    REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(300).default(30 * 86_400),
    /** argon2id cost; lower it only for tests. */
    PASSWORD_MEMORY_KIB: z.coerce.number().int().min(1024).max(1_048_576).default(65_536),
    PASSWORD_TIME_COST: z.coerce.number().int().min(1).max(10).default(2),
    MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(10 * 1024 * 1024).default(64 * 1024),
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
    TRUST_PROXY: bool.default(false),
  })
  .transform((c) => ({
    ...c,
    PUBLIC_URL: (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ""),
  }));

export type Config = z.infer<typeof ConfigSchema>;

export class ConfigError extends Error {}

/** Parses an environment once. Every problem is reported, each naming its variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = ConfigSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".") || "(config)"}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return result.data;
}

/** The process's configuration: the only place that reads process.env. */
export function loadConfig(overrides: Record<string, string | undefined> = {}): Config {
  return parseConfig({ ...process.env, ...overrides });
}
