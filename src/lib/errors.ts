// Typed errors thrown by services; one error handler maps them to a status and a body
// in the request's format.

export class AppError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /**
     * The refusal rests on what the action found and recorded: its transaction commits
     * what it wrote, then the request fails (a review that finds its approval expired
     * marks it expired, as the sweep would, and answers 409).
     */
    readonly commits = false,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class NotFoundError extends AppError {
  constructor(message = "Not found") {
    super(404, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super(403, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = "Log in, or send `Authorization: Bearer <token>`.") {
    super(401, message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, opts: { commits?: boolean } = {}) {
    super(409, message, opts.commits);
  }
}

export class TooManyRequestsError extends AppError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, message);
  }
}

export class ServiceUnavailableError extends AppError {
  constructor(message: string) {
    super(503, message);
  }
}

export interface Issue {
  /** The param as sent (`options.2.label`); empty for the request as a whole. */
  field: string;
  message: string;
  /** What a person knows the field as (its form label); the message names the field by it. */
  label?: string;
}

/** "Monthly limit (USD): at least 0": the issue as a sentence that names the field by its label. */
export function issueText(issue: Issue): string {
  const name = issue.label ?? issue.field;
  return name ? `${name}: ${issue.message}` : issue.message;
}

export class ValidationError extends AppError {
  constructor(
    readonly issues: Issue[],
    message = "Invalid parameters",
  ) {
    super(400, `${message}: ${issues.map(issueText).join("; ")}`);
  }
}
