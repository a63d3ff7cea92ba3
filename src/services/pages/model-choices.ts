// The workspace's model catalogue as a select's choices (the agent page, the workspace's
// default model) and as markdown (/settings/agents), grouped where it comes from.
import { type CatalogueModel, priceLabel } from "../money/catalogue.ts";
import { code, mdEscape } from "../registry/markdown.ts";

type Choice = { value: string; label: string; group?: string };

/**
 * One choice per model, grouped, its price per million tokens beside it; first the empty
 * choice (`empty`: what no model means there). A model set before the catalogue existed (or
 * since removed from it) stays on offer, marked, so saving the form keeps it rather than
 * silently changing it.
 */
export function modelChoices(catalogue: CatalogueModel[], current: string[], empty: string): Choice[] {
  const out: Choice[] = [{ value: "", label: empty }];
  for (const modelName of current)
    if (modelName && !catalogue.some((m) => m.name === modelName))
      out.push({ value: modelName, label: `${modelName} (not in the catalogue)`, group: "Set now" });
  for (const model of catalogue)
    out.push({ value: model.name, label: `${model.name} — ${priceLabel(model)}`, group: model.group });
  return out;
}

/** The catalogue as markdown: a list per group, each model with its price. */
export function catalogueMarkdown(catalogue: CatalogueModel[]): string {
  const groups = new Map<string, CatalogueModel[]>();
  for (const model of catalogue) groups.set(model.group, [...(groups.get(model.group) ?? []), model]);
  return [...groups]
    .map(([group, list]) =>
      [`### ${mdEscape(group)}`, "", ...list.map((m) => `- ${code(m.name)} — ${priceLabel(m)}`)].join("\n"),
    )
    .join("\n\n");
}
