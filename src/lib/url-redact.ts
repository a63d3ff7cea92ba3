// Review and password-reset links carry their token in the path (a mail can only link): a
// request's URL is logged with it cut out, here and after a login's `next=`
// (services/reach/review-links.ts, services/accounts/password-reset.ts).
const TOKEN_IN_PATH = /((?:review|reset-password)(?:\/|%2F))[A-Za-z0-9_-]{16,}/gi;

export const redactUrl = (url: string) => url.replace(TOKEN_IN_PATH, "$1[token]");
