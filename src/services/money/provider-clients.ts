// The SDK clients a BYOK key's provider is reached with: Anthropic's own (`@anthropic-ai/sdk`)
// for `anthropic`, whose Messages API has prompt caching that its OpenAI-compatibility layer
// lacks; the `openai` SDK for the others. Used by the key test and model listing here, and by
// the run's LLM client (agents/runtime/llm-anthropic.ts), so both reach a key's URL alike.
import Anthropic, { APIError as AnthropicApiError } from "@anthropic-ai/sdk";
import OpenAI, { APIError as OpenAiApiError } from "openai";

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * The SDK's base URL from a key's stored one. Anthropic keys store the OpenAI-compatible
 * URL, `https://api.anthropic.com/v1/` (keys.ts PROVIDER_URLS), and the SDK adds `/v1/…`
 * to its base itself: the trailing `/v1` goes, so stored keys need no migration.
 */
export function anthropicBaseUrl(stored: string): string {
  return stored.replace(/\/+$/, "").replace(/\/v1$/, "");
}

export function anthropicClient(
  baseUrl: string,
  apiKey: string,
  opts: { timeoutMs: number; maxRetries: number; fetch?: Fetch },
): Anthropic {
  return new Anthropic({
    baseURL: anthropicBaseUrl(baseUrl),
    apiKey,
    timeout: opts.timeoutMs,
    maxRetries: opts.maxRetries,
    ...(opts.fetch && { fetch: opts.fetch }),
    // Our own `chat` span covers the call (runtime/tracing.ts decides what content leaves);
    // the SDK's would be a second one, reading its settings from the environment.
    openTelemetry: false,
    // The SDK logs to the console otherwise; our callers log what they need, masked.
    logLevel: "off",
  });
}

/** The HTTP status of a provider SDK's error, whichever SDK threw it. */
export function providerStatus(err: unknown): number | undefined {
  if (err instanceof OpenAiApiError || err instanceof AnthropicApiError) return err.status ?? undefined;
  return undefined;
}

/** The model ids the provider lists for the key (`GET /v1/models`); throws as the SDK does. */
export async function providerModels(
  provider: string,
  baseUrl: string,
  apiKey: string,
  timeoutMs: number,
): Promise<string[]> {
  const ids: string[] = [];
  if (provider === "anthropic") {
    const client = anthropicClient(baseUrl, apiKey, { timeoutMs, maxRetries: 0 });
    // Anthropic pages its list (20 a page by default): the largest page, then the next ones.
    for await (const modelInfo of client.models.list({ limit: 1000 })) {
      ids.push(modelInfo.id);
      if (ids.length >= 1000) break;
    }
    return ids;
  }
  const client = new OpenAI({ baseURL: baseUrl, apiKey, timeout: timeoutMs, maxRetries: 0 });
  const page = await client.models.list();
  return page.data.map((m) => m.id);
}
