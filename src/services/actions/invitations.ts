// Bringing people in, from /settings/invitations: a workspace admin invites addresses by mail,
// withdraws an invitation, and turns the workspace's shared invite link on or off. Each is one
// transaction with its mails (services/accounts/). Invitations open the workspace to someone,
// so these are credentials: a token needs `manage`, and agents never have them.
import { z } from "zod";
import { plural } from "../../lib/plural.ts";
import { invitePeople, revokeInvitation } from "../accounts/invitations.ts";
import { joinPath, turnJoinLinkOff, turnJoinLinkOn } from "../accounts/join-link.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type Ctx, defineAction } from "../registry/types.ts";
import { idSchema } from "../validation.ts";

export const invitationsPath = "/settings/invitations";

const adminsOnly = (ctx: Ctx) => (ctx.actor.tenantAdmin ? null : "only workspace admins invite people");

/** The workspace's address for links in mails: the one the admin's request reached. */
const originOf = (ctx: Ctx) => ctx.origin ?? "";

const studiosParam = z.string().max(2000).optional().meta({
  label: "Studios to join",
  description: "studio handles, separated by commas or spaces (the page lists them); left empty, none",
});

export const invitePeopleAction = defineAction({
  name: "invite_people",
  description:
    "Invite people by email: each address gets a mail with a single-use link (7 days) to choose their name and password. An address already in the workspace is not invited; one invited before gets a new link and the old one stops working.",
  params: z.object({
    emails: z.string().max(10_000).meta({
      label: "Email addresses",
      multiline: true,
      description: "separated by commas, spaces or lines",
    }),
    role: z
      .enum(["member", "admin"])
      .default("member")
      .meta({ label: "Role", optionLabels: { member: "Member", admin: "Workspace admin" } }),
    studios: studiosParam,
  }),
  writes: true,
  manage: true,
  audience: toWorkspace("invitation"),
  available: adminsOnly,
  async execute(ctx, params) {
    const outcome = await invitePeople(ctx.tx, {
      tenant: ctx.tenant,
      inviter: ctx.actor,
      origin: originOf(ctx),
      emails: params.emails,
      role: params.role,
      studios: params.studios,
    });
    const sent = [
      outcome.invited.length ? `Invited ${outcome.invited.join(", ")}.` : "",
      outcome.renewed.length
        ? `Invited again: ${outcome.renewed.join(", ")} (a new link was mailed; the old one no longer works).`
        : "",
      outcome.members.length ? `Not invited: ${outcome.members.join("; ")}.` : "",
    ];
    const none = !outcome.invited.length && !outcome.renewed.length;
    return {
      status: none ? 200 : 201,
      location: invitationsPath,
      notice: sent.filter(Boolean).join(" "),
      ...(none && { warning: true }),
    };
  },
});

export const revokeInvitationAction = defineAction({
  name: "revoke_invitation",
  description: "Withdraw an invitation that is still open: the link in its mail stops working",
  params: z.object({
    id: idSchema.meta({ description: "the invitation's id", pickedBeside: true, formerly: "invitation" }),
  }),
  writes: true,
  manage: true,
  audience: toWorkspace("invitation"),
  destructive: "The link in their mail stops working; invite them again to send a new one.",
  available: adminsOnly,
  async execute(ctx, params) {
    const email = await revokeInvitation(ctx.tx, ctx.tenant.id, params.id);
    return { status: 200, location: invitationsPath, notice: `Withdrew the invitation to ${email}.` };
  },
});

export const setInviteLinkAction = defineAction({
  name: "set_invite_link",
  description:
    "Turn the workspace's shared invite link on (a new link, shown once; the old one stops working) or off. Whoever opens it types their address and is mailed a link to confirm it; they join as members of the studios named.",
  params: z.object({
    link: z
      .enum(["on", "off"])
      .meta({ label: "Invite link", optionLabels: { on: "On: make a new link", off: "Off" } }),
    allowed_domains: z.string().max(2000).optional().meta({
      label: "Allowed email domains",
      description: "like acme.com, separated by commas or spaces; left empty, any address may ask",
    }),
    studios: studiosParam,
  }),
  writes: true,
  confirmRecent: true,
  manage: true,
  audience: toWorkspace("invite link"),
  available: adminsOnly,
  async execute(ctx, params) {
    if (params.link === "off") {
      const withdrawn = await turnJoinLinkOff(ctx.tx, ctx.tenant.id);
      return {
        status: 200,
        location: invitationsPath,
        notice: withdrawn
          ? "The invite link is off: it no longer works, nor do the confirmations it mailed that were not used yet."
          : "The invite link was already off.",
      };
    }
    const made = await turnJoinLinkOn(ctx.tx, {
      tenantId: ctx.tenant.id,
      createdById: ctx.actor.id,
      allowedDomains: params.allowed_domains,
      studios: params.studios,
    });
    const who = made.domains.length ? `addresses at ${made.domains.join(", ")}` : "any address";
    const studios = made.studioNames.length
      ? ` in ${plural(made.studioNames.length, "studio")} (${made.studioNames.join(", ")})`
      : "";
    return {
      status: 201,
      location: invitationsPath,
      notice: `The invite link is on, for ${who}: they join as members${studios}.`,
      secret: `${originOf(ctx)}${joinPath(made.token)}`,
      secretLabel: "The workspace's invite link",
      secretHelp:
        "Copy it now and share it with your team: it is shown this once (only a hash of it is kept). Whoever opens it is mailed a link to confirm their address before an account is made. Turning the link on again makes a new one; turning it off stops it.",
    };
  },
});
