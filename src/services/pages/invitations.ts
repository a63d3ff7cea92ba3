// /settings/invitations: where workspace admins bring people in. The invite form, the open
// invitations (each withdrawable), and the workspace's shared invite link. As the other admin
// settings pages, anyone in the workspace may open it, but only admins see what is on it: the
// addresses invited are theirs to know. Everyone else (agents included) reads one line saying
// so, and its actions refuse them whatever the surface (actions/invitations.ts).
import { plural } from "../../lib/plural.ts";
import { type PendingInvitation, pendingInvitations } from "../accounts/invitations.ts";
import { currentJoinLink } from "../accounts/join-link.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import { type Block, definePage, type Scope } from "../registry/types.ts";
import { home, when } from "./format.ts";

type JoinLink = Awaited<ReturnType<typeof currentJoinLink>>;

/** The open invitations as a table: pure, tested with plain rows. */
export function invitationsTable(invitations: PendingInvitation[]): string {
  if (!invitations.length) return "_No invitation is waiting to be accepted._";
  const rows = invitations.map(
    (invitation) =>
      `| ${mdEscape(invitation.email)} | ${invitation.role} | ${mdEscape(invitation.studios.join(", ")) || "none"} | ${mdEscape(invitation.sentBy)}, ${when(invitation.createdAt)} | ${when(invitation.expiresAt)} | ${code(invitation.id)} |`,
  );
  return ["| address | role | studios | sent by | expires | id |", "|---|---|---|---|---|---|", ...rows].join(
    "\n",
  );
}

/** What the shared link is doing now, in words: pure. */
export function joinLinkText(link: JoinLink): string {
  if (!link)
    return "**Off.** Turn it on to get one link to share with your team instead of inviting each address.";
  const who = link.domains.length ? `addresses at ${link.domains.join(", ")}` : "any address";
  const studios = link.studioNames.length ? `, in ${link.studioNames.join(", ")}` : "";
  return `**On** since ${when(link.createdAt)}${link.createdBy ? `, by @${link.createdBy.handle}` : ""}: open to ${mdEscape(who)}, who join as members${mdEscape(studios)}. Only a hash of the link is kept, so it cannot be shown again: turn it on again for a new one (the old one then stops working).`;
}

export const invitationsPage = definePage({
  pattern: "/settings/invitations",
  actions: ["invite_people", "revoke_invitation", "set_invite_link"],
  resolve: async (): Promise<Scope> => ({}),
  async render(ctx) {
    const breadcrumb = [home, { label: "People", path: "/settings/people" }, { label: "Invitations" }];
    if (!ctx.actor.tenantAdmin)
      return {
        title: "Invitations",
        breadcrumb,
        blocks: [{ md: "_Only workspace admins invite people and see the invitations: ask one of them._" }],
      };
    const [invitations, joinLink, studios] = await Promise.all([
      pendingInvitations(ctx.db, ctx.tenant.id),
      currentJoinLink(ctx.db, ctx.tenant.id),
      ctx.db.studio.findMany({
        where: { tenantId: ctx.tenant.id },
        select: { handle: true, name: true },
        orderBy: { name: "asc" },
        take: 200,
      }),
    ]);
    const studioList = studios
      .map((studio) => `${code(studio.handle)} (${mdEscape(studio.name)})`)
      .join(", ");
    const revokeForms: Block[] = invitations.map((invitation) => ({
      form: {
        action: "revoke_invitation",
        fixed: { id: invitation.id },
        label: `Withdraw the invitation to ${invitation.email}`,
      },
    }));
    return {
      title: "Invitations",
      breadcrumb,
      blocks: [
        {
          md: `## Invite people\n\nEach address gets a mail with a link that works once, for 7 days: they choose their name and a password and are signed in, with the role and studios chosen here. An address already in the workspace is not invited; inviting an address again sends a new link and stops the old one.\n\nStudios: ${studioList || "_none yet_"}.`,
        },
        { form: { action: "invite_people", fixed: {}, label: "Send invitations", style: "block" } },
        {
          md: `## Waiting to be accepted\n\n${invitations.length ? `${plural(invitations.length, "invitation")}, newest first.\n\n` : ""}${invitationsTable(invitations)}`,
        },
        ...revokeForms,
        { md: `## The workspace's invite link\n\n${joinLinkText(joinLink)}` },
        {
          form: {
            action: "set_invite_link",
            fixed: { link: "on" },
            label: joinLink ? "Make a new invite link" : "Turn the invite link on",
            style: "block",
            values: { allowed_domains: joinLink?.domains.join(", ") ?? "" },
          },
        },
        ...(joinLink
          ? [
              {
                form: {
                  action: "set_invite_link",
                  fixed: { link: "off" },
                  fields: [],
                  label: "Turn the invite link off",
                },
              },
            ]
          : []),
      ],
    };
  },
});
