// How guessable a new password is, by zxcvbn-ts (dictionaries of common passwords, names and
// English words, keyboard patterns, l33t). The estimator and its dictionaries are built once,
// on first use: building them costs a few hundred milliseconds, a check a few.
import { ZxcvbnFactory } from "@zxcvbn-ts/core";
import * as common from "@zxcvbn-ts/language-common";
import * as english from "@zxcvbn-ts/language-en";

/** zxcvbn's 0–4 score: 3 is "safely unguessable" against an online attack with throttling. */
export const MIN_SCORE = 3;
export const MIN_LENGTH = 10;
export const MAX_LENGTH = 200;

let estimator: ZxcvbnFactory | undefined;
function loaded(): ZxcvbnFactory {
  estimator ??= new ZxcvbnFactory({
    translations: english.translations,
    graphs: common.adjacencyGraphs,
    dictionary: { ...common.dictionary, ...english.dictionary },
  });
  return estimator;
}

export type Strength = { ok: true; score: number } | { ok: false; score: number; reason: string };

/**
 * Whether `password` is strong enough, and if not why, in words a person can act on.
 * `related` are the person's own words (name, email, handle, workspace): a password made of
 * them is weak whatever its length.
 */
export function checkPasswordStrength(password: string, related: string[] = []): Strength {
  if (password.length < MIN_LENGTH)
    return {
      ok: false,
      score: 0,
      reason: `Use at least ${MIN_LENGTH} characters; a few words together work well.`,
    };
  if (password.length > MAX_LENGTH)
    return { ok: false, score: 0, reason: `Use at most ${MAX_LENGTH} characters.` };
  const inputs = related
    .flatMap((word) => word.toLowerCase().split(/[^a-z0-9]+/))
    .filter((word) => word.length > 2);
  const result = loaded().check(password, inputs);
  if (result.score >= MIN_SCORE) return { ok: true, score: result.score };
  const { warning, suggestions } = result.feedback;
  const words = [warning, ...suggestions].filter((line): line is string => Boolean(line));
  const reason = words.length ? words.join(" ") : "This password is easy to guess: add another word or two.";
  return { ok: false, score: result.score, reason: `Too easy to guess. ${reason}` };
}
