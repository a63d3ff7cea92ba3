// Passkey ceremonies in the browser, with the bundled @simplewebauthn/browser
// (window.SimpleWebAuthnBrowser, loaded before this file). A form marked `data-passkey`
// stays hidden unless this browser makes passkeys; on submit it asks the server for
// options (`data-options`), hands them to the authenticator, posts the answer as JSON to
// the form's action and follows the `location` it is given. The CSRF token is the page's
// own (every page's forms carry it); refusals are shown in the form's status line.
(() => {
  const webauthn = window.SimpleWebAuthnBrowser;
  if (!webauthn?.browserSupportsWebAuthn()) return;

  const csrf = () => document.querySelector('input[name="_csrf"]')?.value ?? "";

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json", "x-csrf-token": csrf() },
      body: JSON.stringify(body),
    });
    // A sign-in answers with a redirect (http/sign-in.ts), which fetch has followed asking for
    // JSON; the page it lands on may answer only HTML (406), which is no refusal: go there.
    if (response.redirected) return { location: response.url };
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.error?.message ?? `The server answered ${response.status}.`);
    return answer;
  }

  /** What the authenticator step needs, by the form's kind: a new passkey, or one to sign in with. */
  async function ceremony(form) {
    const fields = Object.fromEntries(new FormData(form));
    delete fields._csrf;
    const optionsJSON = await post(form.dataset.options, {});
    const response =
      form.dataset.passkey === "register"
        ? await webauthn.startRegistration({ optionsJSON })
        : await webauthn.startAuthentication({ optionsJSON });
    return post(form.action, { ...fields, response });
  }

  /** The browser's own refusals, in words a person can act on. */
  function reason(error) {
    if (error?.name === "NotAllowedError")
      return "Cancelled, or the passkey did not answer in time: try again.";
    if (error?.name === "InvalidStateError")
      return "This authenticator holds a passkey for your account already.";
    return error?.message || "That did not work: try again.";
  }

  for (const form of document.querySelectorAll("form[data-passkey]")) {
    form.hidden = false;
    for (const note of document.querySelectorAll("[data-passkey-unsupported]")) note.hidden = true;
    const status = form.querySelector("[data-passkey-status]");
    const button = form.querySelector('button[type="submit"]');
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      button.disabled = true;
      if (status) status.textContent = "Waiting for your passkey…";
      try {
        const done = await ceremony(form);
        window.location.assign(done.location);
      } catch (error) {
        if (status) status.textContent = reason(error);
        button.disabled = false;
      }
    });
  }
})();
