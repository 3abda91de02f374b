/**
 * Turns the JSON Schemas generated from Python (plugin/src/generated/tools.ts) into the zod shapes
 * OpenCode's `tool()` wants, so the parameter shapes have one source of truth: the Python side.
 *
 * Only the subset the generator emits is handled (scalars, enums, arrays, nested objects, bounds,
 * defaults, descriptions); anything else degrades to an unchecked value rather than failing the load.
 */
// zod itself, not `tool.schema` from @opencode-ai/plugin: the plugin package is needed for types only, so a
// user install resolves nothing but zod at run time (`tool.schema` is this same zod 4).
import { z } from "zod";

type ZodType = import("zod").ZodType;

export type JsonSchema = Record<string, unknown>;

function isRecord(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function scalarType(schema: JsonSchema): { type: string | undefined; nullable: boolean } {
  const raw = schema.type;
  if (Array.isArray(raw)) {
    const types = raw.filter((t): t is string => typeof t === "string");
    const nonNull = types.filter((t) => t !== "null");
    return { type: nonNull.length === 1 ? nonNull[0] : undefined, nullable: types.includes("null") };
  }
  return { type: typeof raw === "string" ? raw : undefined, nullable: false };
}

function anyOfNullable(schema: JsonSchema): JsonSchema | undefined {
  const variants = schema.anyOf ?? schema.oneOf;
  if (!Array.isArray(variants)) return undefined;
  const nonNull = variants.filter((v) => isRecord(v) && v.type !== "null");
  if (nonNull.length === 1 && nonNull.length < variants.length && isRecord(nonNull[0])) {
    const { anyOf: _a, oneOf: _o, ...rest } = schema;
    return { ...rest, ...nonNull[0] };
  }
  return undefined;
}

/** The zod type for one JSON Schema node (without optionality, description or default). */
export function zodFor(schema: unknown): ZodType {
  if (!isRecord(schema)) return z.any();
  const collapsed = anyOfNullable(schema);
  if (collapsed) return zodFor(collapsed).nullable();

  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    const values = schema.enum;
    if (values.every((v): v is string => typeof v === "string")) return z.enum(values as [string, ...string[]]);
    const literals = values.map((v) => z.literal(v as string | number | boolean));
    return literals.length === 1 ? (literals[0] as ZodType) : z.union(literals as unknown as [ZodType, ZodType, ...ZodType[]]);
  }
  if ("const" in schema) return z.literal(schema.const as string | number | boolean);

  const { type, nullable } = scalarType(schema);
  let out: ZodType;
  switch (type) {
    case "string": {
      let s = z.string();
      const min = num(schema.minLength);
      const max = num(schema.maxLength);
      if (min !== undefined) s = s.min(min);
      if (max !== undefined) s = s.max(max);
      out = s;
      break;
    }
    case "integer":
    case "number": {
      let n = type === "integer" ? z.number().int() : z.number();
      const min = num(schema.minimum);
      const max = num(schema.maximum);
      const xmin = num(schema.exclusiveMinimum);
      const xmax = num(schema.exclusiveMaximum);
      if (min !== undefined) n = n.min(min);
      if (max !== undefined) n = n.max(max);
      if (xmin !== undefined) n = n.gt(xmin);
      if (xmax !== undefined) n = n.lt(xmax);
      out = n;
      break;
    }
    case "boolean":
      out = z.boolean();
      break;
    case "array": {
      let a = z.array(zodFor(schema.items));
      const min = num(schema.minItems);
      const max = num(schema.maxItems);
      if (min !== undefined) a = a.min(min);
      if (max !== undefined) a = a.max(max);
      out = a;
      break;
    }
    case "object":
      out = isRecord(schema.properties) ? z.object(argsShape(schema)) : z.record(z.string(), z.any());
      break;
    default:
      out = z.any();
  }
  return nullable ? out.nullable() : out;
}

/** The zod raw shape for an object schema: one entry per property, optional unless listed in `required`. */
export function argsShape(schema: unknown): Record<string, ZodType> {
  const shape: Record<string, ZodType> = {};
  if (!isRecord(schema) || !isRecord(schema.properties)) return shape;
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []);
  for (const [name, prop] of Object.entries(schema.properties)) {
    let field = zodFor(prop);
    if (!required.has(name)) field = field.optional();
    if (isRecord(prop)) {
      // The sidecar applies defaults itself; the schema only advertises them to the model.
      if ("default" in prop) field = field.meta({ default: prop.default });
      if (typeof prop.description === "string") field = field.describe(prop.description);
    }
    shape[name] = field;
  }
  return shape;
}
