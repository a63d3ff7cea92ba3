// Reads an action's zod schema to describe, render and coerce its params, so the
// markdown signature, the HTML form, the JSON schema and validation share one source.
import { z } from "zod";
import { type Issue, ValidationError } from "../../lib/errors.ts";
import { textProblem } from "../../lib/text.ts";

/** `list` and `object` params take JSON arrays and objects; a form repeats a `list` field. */
export type FieldType = "string" | "number" | "boolean" | "enum" | "list" | "object";

export interface Field {
  name: string;
  type: FieldType;
  required: boolean;
  options?: string[];
  description?: string;
  multiline: boolean;
  /**
   * Text where an `@handle` mentions someone (a note, a comment, a decision's context): its
   * form offers the people and agents the writer may mention as they type (public/mentions.js).
   */
  mentions: boolean;
  /** A password or API key: a password input, never prefilled or echoed back. */
  secret: boolean;
  /** The form's label when the param name reads badly ("Monthly limit (USD)"). */
  label?: string;
  /** Display text for enum values in a form's select. */
  optionLabels?: Record<string, string>;
  defaultValue?: unknown;
  /**
   * Chosen on the page (a button beside each item, a select filled from the data), never typed
   * into the side panel. Meta `pickedBeside: true`: the action lives only beside its items;
   * `"field"`: only this field does (a reply's comment), and the action's panel form leaves it out.
   */
  pickedBeside: boolean;
  /** The action is used only beside items (`pickedBeside: true`): it has no panel form. */
  besideOnly: boolean;
  /** An edit's optional field a form may empty to clear the value (the model: back to the default). */
  clears: boolean;
  /** Fields of one group sit together in a form under this heading (capabilities by subject). */
  group?: string;
  /** The most characters a text param takes (its schema's `max`): a form says it before it bites. */
  maxLength?: number;
  /**
   * The name this param had before names were made one per idea (`webhook_id` is now `id`):
   * still accepted from a caller that sends it, never shown (docs/markdown-api.md lists them).
   */
  formerly?: string;
  /**
   * Meaningful only while another field of the form has one of these values (a candidate's
   * model, when it tries a model): a browser shows it then (public/forms.js), and shows every
   * field without the script. A caller may send it always; the action ignores it otherwise.
   */
  shownWith?: { field: string; values: string[] };
  /** A number's range and whether it is whole (its schema's `min`, `max`, `int`): a form carries them as `min`, `max`, `step`. */
  min?: number;
  max?: number;
  whole?: boolean;
}

const ACRONYMS: Record<string, string> = { api: "API", url: "URL", usd: "USD", id: "ID" };

/** `add_api_key` → "Add API key": a param or action name as a label. */
export function humanize(name: string): string {
  const label = name
    .split("_")
    .map((w) => ACRONYMS[w] ?? w)
    .join(" ");
  return label.charAt(0).toUpperCase() + label.slice(1);
}

/** What a person sees a param called: its label, else its name made readable. */
export function labelOf(field: Pick<Field, "name" | "label">): string {
  return field.label ?? humanize(field.name);
}

type AnyZod = z.ZodType & { _zod: { def: Record<string, unknown> & { type: string } } };

export function fields(schema: z.ZodObject): Field[] {
  return Object.entries(schema.shape).map(([name, raw]) => {
    let zodType = raw as AnyZod;
    let required = true;
    let defaultValue: unknown;
    type Meta = {
      multiline?: boolean;
      mentions?: boolean;
      secret?: boolean;
      description?: string;
      label?: string;
      optionLabels?: Record<string, string>;
      pickedBeside?: boolean | "field";
      clears?: boolean;
      group?: string;
      formerly?: string;
      shownWith?: { field: string; values: string[] };
    };
    const meta = (z.globalRegistry.get(zodType) ?? {}) as Meta;
    while (zodType._zod.def.type === "optional" || zodType._zod.def.type === "default") {
      required = false;
      if (zodType._zod.def.type === "default") {
        const declaredDefault = zodType._zod.def.defaultValue;
        defaultValue =
          typeof declaredDefault === "function" ? (declaredDefault as () => unknown)() : declaredDefault;
      }
      zodType = zodType._zod.def.innerType as AnyZod;
    }
    const inner = (z.globalRegistry.get(zodType) ?? {}) as Meta;
    const listed = listedChoices(zodType);
    const type = listed ? "enum" : fieldType(zodType._zod.def.type);
    return {
      name,
      type,
      required,
      options:
        listed ?? (type === "enum" ? (zodType as unknown as z.ZodEnum).options.map(String) : undefined),
      description: meta.description ?? inner.description ?? raw.description,
      multiline: Boolean(meta.multiline ?? inner.multiline),
      mentions: Boolean(meta.mentions ?? inner.mentions),
      secret: Boolean(meta.secret ?? inner.secret),
      label: meta.label ?? inner.label,
      optionLabels: meta.optionLabels ?? inner.optionLabels,
      defaultValue,
      pickedBeside: Boolean(meta.pickedBeside ?? inner.pickedBeside),
      besideOnly: (meta.pickedBeside ?? inner.pickedBeside) === true,
      clears: Boolean(meta.clears ?? inner.clears),
      group: meta.group ?? inner.group,
      formerly: meta.formerly ?? inner.formerly,
      shownWith: meta.shownWith ?? inner.shownWith,
      ...(type === "number" && numberRange(zodType as unknown as z.ZodNumber)),
      maxLength: type === "string" ? ((zodType as unknown as z.ZodString).maxLength ?? undefined) : undefined,
    };
  });
}

/**
 * A union whose first member is an enum (a rule's action: the workspace's actions, or a
 * connected tool's name) shows as the enum's choices; the rest are for callers that name them.
 */
function listedChoices(zodType: AnyZod): string[] | undefined {
  if (zodType._zod.def.type !== "union") return undefined;
  const first = (zodType._zod.def.options as AnyZod[] | undefined)?.[0];
  return first?._zod.def.type === "enum" ? (first as unknown as z.ZodEnum).options.map(String) : undefined;
}

function numberRange(schema: z.ZodNumber): Pick<Field, "min" | "max" | "whole"> {
  const finite = (value: number | null | undefined) =>
    typeof value === "number" && Number.isFinite(value) && Math.abs(value) < Number.MAX_SAFE_INTEGER
      ? value
      : undefined;
  return { min: finite(schema.minValue), max: finite(schema.maxValue), whole: schema.isInt };
}

function fieldType(kind: string): FieldType {
  if (kind === "number" || kind === "boolean" || kind === "enum") return kind;
  if (kind === "array") return "list";
  if (kind === "object" || kind === "record") return "object";
  return "string";
}

const signatures = new WeakMap<z.ZodObject, string>();

/** `text: string, title?: string, role: admin|member`: every action line of every page shows one, so each schema's is kept. */
export function signature(schema: z.ZodObject): string {
  let described = signatures.get(schema);
  if (described === undefined) {
    described = fields(schema)
      .map((f) => `${f.name}${f.required ? "" : "?"}: ${f.type === "enum" ? f.options!.join("|") : f.type}`)
      .join(", ");
    signatures.set(schema, described);
  }
  return described;
}

const TRUE = new Set(["true", "on", "1", "yes"]);
const FALSE = new Set(["false", "off", "0", "no", ""]);

/** Every string in a param's value, at any depth (keys too), named by its path: `options.2.label`. */
function textIssues(value: unknown, field: string): Issue[] {
  const issues: Issue[] = [];
  // A loop, not recursion: a body nested a hundred thousand levels deep must not overflow the stack.
  const stack: [unknown, string][] = [[value, field]];
  while (stack.length) {
    const [current, path] = stack.pop()!;
    if (typeof current === "string") {
      const problem = textProblem(current);
      if (problem) issues.push({ field: path, message: problem });
    } else if (Array.isArray(current))
      for (const [index, item] of current.entries()) stack.push([item, `${path}.${index}`]);
    else if (current !== null && typeof current === "object")
      for (const [key, item] of Object.entries(current)) {
        const problem = textProblem(key);
        if (problem) issues.push({ field: path, message: `a key ${problem}` });
        else stack.push([item, `${path}.${key}`]);
      }
  }
  return issues;
}

/**
 * The value of one param as sent, before coercion, or an issue. Only a `list` param takes
 * several values: a form repeats its field, JSON sends an array. Any other param given
 * twice is ambiguous (which one did the sender mean?), so it is refused, not guessed.
 */
function single(field: Field, value: unknown, form: boolean): { value: unknown } | { issues: Issue[] } {
  if (Array.isArray(value) && field.type !== "list") {
    const message = form ? "sent more than once: it takes one value" : "must be a single value, not a list";
    return { issues: [{ field: field.name, message }] };
  }
  const problems = textIssues(value, field.name);
  if (problems.length) return { issues: problems };
  return { value: field.type === "list" && form && typeof value === "string" ? [value] : value };
}

/**
 * A form sends an object param as one field per key (`params.title`, `params.text`: a queued
 * action's params, reviewed field by field); they become the one object the schema reads.
 */
function nestedFromForm(defs: Field[], body: Record<string, unknown>): Record<string, unknown> {
  const objects = new Set(defs.filter((f) => f.type === "object").map((f) => f.name));
  if (!objects.size) return body;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const dot = key.indexOf(".");
    const top = dot > 0 ? key.slice(0, dot) : "";
    if (!objects.has(top)) {
      out[key] = value;
      continue;
    }
    out[top] ??= Object.create(null);
    const nested = out[top];
    if (nested && typeof nested === "object") (nested as Record<string, unknown>)[key.slice(dot + 1)] = value;
  }
  return out;
}

/** A body that names a param by its former name reads as if it used the new one (unless it sent both). */
function formerNames(defs: Field[], body: Record<string, unknown>): Record<string, unknown> {
  const renamed = defs.filter((field) => field.formerly && field.formerly in body && !(field.name in body));
  if (!renamed.length) return body;
  const out = { ...body };
  for (const field of renamed) {
    out[field.name] = out[field.formerly!];
    delete out[field.formerly!];
  }
  return out;
}

/**
 * Validates a body against the schema. Form bodies send every value as a string and
 * leave unchecked boxes out, so strings are coerced to the declared type first.
 * Unknown keys are an error: an agent that misspells a param should hear about it.
 */
export function parseParams<S extends z.ZodObject>(
  schema: S,
  sent: Record<string, unknown>,
  opts: { form: boolean },
): z.infer<S> {
  const defs = fields(schema);
  const known = new Set(defs.map((f) => f.name));
  const body = formerNames(defs, opts.form ? nestedFromForm(defs, sent) : sent);
  const issues: Issue[] = Object.keys(body)
    .filter((k) => !known.has(k))
    .map((k) => ({ field: k, message: `unknown parameter (expected: ${[...known].join(", ") || "none"})` }));
  const input: Record<string, unknown> = {};
  for (const field of defs) {
    const sent = single(field, body[field.name], opts.form);
    if ("issues" in sent) {
      issues.push(...sent.issues);
      continue;
    }
    let value = sent.value;
    if (typeof value === "string") {
      if (field.type === "number") value = value.trim() === "" ? undefined : Number(value);
      else if (field.type === "boolean")
        value = TRUE.has(value.toLowerCase()) ? true : FALSE.has(value.toLowerCase()) ? false : value;
      // An emptied form field means "not given", except where emptying it is how a form clears the value.
      else if (opts.form && value.trim() === "" && !field.required && !field.clears) value = undefined;
    }
    if (value === undefined && opts.form && field.type === "boolean") value = false;
    if (value !== undefined) input[field.name] = value;
  }
  const result = schema.safeParse(input);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const field = issue.path.join(".");
      const missing = issue.path.length === 1 && input[field] === undefined;
      issues.push({ field, message: missing ? "required" : issue.message });
    }
  }
  if (issues.length) {
    const seen = new Set<string>();
    throw labelled(
      schema,
      new ValidationError(issues.filter((i) => !seen.has(i.field) && seen.add(i.field))),
    );
  }
  return result.data as z.infer<S>;
}

/**
 * The same issues, each naming its field the way the form labels it ("Monthly limit (USD)",
 * not `monthly_limit_usd`), whoever raised them: the schema or the action's own checks.
 */
export function labelled(schema: z.ZodObject, err: ValidationError): ValidationError {
  const byName = new Map(fields(schema).map((f) => [f.name, f]));
  const issues = err.issues.map((issue) => {
    if (issue.label || !issue.field) return issue;
    const top = byName.get(issue.field.split(".")[0]!);
    return top ? { ...issue, label: labelOf(top) } : issue;
  });
  return new ValidationError(issues);
}
