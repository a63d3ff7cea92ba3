// Review links and account links (set-up, invitation, reset, sign-up: services/accounts/)
// carry their token in the path (a mail can only link): a request's URL is
// logged with it cut out, here and after a login's `next=` (services/reach/review-links.ts).
const TOKEN_IN_PATH =
  /((?:review|setup|invite|join|reset|reset-password|signup)(?:\/|%2F))[A-Za-z0-9_-]{16,}/gi;

// An identity provider sends its authorization code (and state) back in the query of
// /login/sso/callback; a provider answering in another mode could send tokens there too.
const SECRET_IN_QUERY = /([?&](?:code|state|id_token|access_token|refresh_token|session_state)=)[^&#]*/gi;

export const redactUrl = (url: string) =>
  url.replace(TOKEN_IN_PATH, "$1[token]").replace(SECRET_IN_QUERY, "$1[redacted]");
