import fc from "fast-check";

export type JsonSchema = Record<string, any>;
export type Doc = Record<string, any>;

export function deref(doc: Doc, schema: JsonSchema | undefined): JsonSchema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 20; i++) {
    s = (s.$ref as string)
      .replace(/^#\//, "")
      .split("/")
      .reduce((node: any, key) => node?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
  }
  return s ?? {};
}

/** Values a field of this name should mostly take: real ids and credentials from the fixture. */
export type Hints = Record<string, readonly string[]>;

const hinted = (values: readonly string[] | undefined, generated: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  values?.length
    ? fc.oneof({ arbitrary: fc.constantFrom(...values), weight: 4 }, { arbitrary: generated, weight: 1 })
    : generated;

const LOCAL = fc.stringMatching(/^[a-z0-9][a-z0-9.]{0,15}$/);

function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 40, Math.max(min, 40));
  if (s.format === "uuid") return fc.uuid();
  if (s.format === "date-time")
    return fc
      .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
      .map((d) => d.toISOString());
  if (s.format === "email") return LOCAL.map((l) => `${l}@example.test`);
  if (s.format === "uri") return LOCAL.map((l) => `https://${l.replace(/\./g, "") || "x"}.example.com/cb`);
  if (s.pattern) {
    const re = new RegExp(s.pattern);
    return fc.stringMatching(re).filter((v) => v.length >= min && v.length <= (s.maxLength ?? Infinity));
  }
  return fc.string({ minLength: min, maxLength: max, unit: "grapheme" });
}

function numberArb(s: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const lo = Math.max(
    s.minimum ?? -1e6,
    s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + (integer ? 1 : 1e-6) : -Infinity,
    -1e9,
  );
  const hi = Math.min(
    s.maximum ?? 1e6,
    s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - (integer ? 1 : 1e-6) : Infinity,
    1e9,
  );
  return integer
    ? fc.integer({ min: Math.ceil(lo), max: Math.floor(hi) })
    : fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true });
}

/** An arbitrary of values that satisfy the schema (the subset of JSON Schema the document uses). */
export function valueArb(
  doc: Doc,
  schema: JsonSchema | undefined,
  hints: Hints = {},
  depth = 0,
): fc.Arbitrary<unknown> {
  const s = deref(doc, schema);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...(alternatives as JsonSchema[]).map((a) => valueArb(doc, a, hints, depth + 1)));
  if (Array.isArray(s.type))
    return fc.oneof(...(s.type as string[]).map((type) => valueArb(doc, { ...s, type }, hints, depth + 1)));
  const type = s.type ?? (s.properties ? "object" : s.items ? "array" : undefined);
  switch (type) {
    case "string":
      return stringArb(s);
    case "integer":
      return numberArb(s, true);
    case "number":
      return numberArb(s, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(valueArb(doc, s.items, hints, depth + 1), {
        minLength: s.minItems ?? 0,
        maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 4, 4)),
      });
    case "object": {
      const props = (s.properties ?? {}) as Record<string, JsonSchema>;
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, p] of Object.entries(props))
        model[name] = hinted(hints[name], valueArb(doc, p, hints, depth + 1));
      return fc.record(model, { requiredKeys: (s.required ?? []).filter((k: string) => k in model) });
    }
    default:
      return depth > 3 ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 });
  }
}

export { hinted };
