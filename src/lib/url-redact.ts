// Review links and account links (set-up, invitation, reset, sign-up: services/accounts/)
// carry their token in the path (a mail can only link): a request's URL is
// logged with it cut out, here and after a login's `next=` (services/reach/review-links.ts).
const TOKEN_IN_PATH =
  /((?:review|setup|invite|join|reset|reset-password|signup)(?:\/|%2F))[A-Za-z0-9_-]{16,}/gi;

export const redactUrl = (url: string) => url.replace(TOKEN_IN_PATH, "$1[token]");
