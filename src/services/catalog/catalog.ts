// Every page and action of the workspace, in one list: the registry is built from it.

import { sessionStepUp } from "../accounts/step-up.ts";
import { clearAgentLabel } from "../actions/agent-label.ts";
import { muteAgentMentions, unmuteAgentMentions } from "../actions/agent-mention-mutes.ts";
import { setMemberRuns, transferSubagent } from "../actions/agent-ownership.ts";
import { addRule, removeRule, setCapabilities, tryRule } from "../actions/agent-settings.ts";
import { restoreAgentVersion } from "../actions/agent-versions.ts";
import { createApiTokenAction, revokeApiToken } from "../actions/api-tokens.ts";
import { approveAction, approveFromLink, rejectAction, rejectFromLink } from "../actions/approvals.ts";
import { addComment } from "../actions/comments.ts";
import { createCommitment, joinCommitment } from "../actions/commitments.ts";
import { deactivatePerson, reactivatePerson } from "../actions/deactivation.ts";
import { addOption, createDecision, vote } from "../actions/decisions.ts";
import { startExperimentAction } from "../actions/experiments.ts";
import { addHostname, removeHostname } from "../actions/hostnames.ts";
import { invitePeopleAction, revokeInvitationAction, setInviteLinkAction } from "../actions/invitations.ts";
import {
  addApiKey,
  removeModelPrice,
  revokeApiKey,
  setAgentApiKey,
  setCostLimit,
  setModelPrice,
  testApiKey,
} from "../actions/money.ts";
import { confirmRead, createNote, pinNote, unpinNote, updateNote } from "../actions/notes.ts";
import { setNotifications } from "../actions/notification-settings.ts";
import { dismiss, dismissAll } from "../actions/notifications.ts";
import {
  confirmOutgoingWebhook,
  createOutgoingWebhook,
  deleteOutgoingWebhook,
  disableOutgoingWebhook,
  enableOutgoingWebhook,
  testOutgoingWebhook,
} from "../actions/outgoing-webhooks.ts";
import { removePasskey, renamePasskey } from "../actions/passkeys.ts";
import { changePassword } from "../actions/passwords.ts";
import { updateProfile } from "../actions/profile.ts";
import { replayRun } from "../actions/replay.ts";
import { pauseRun, resumeRun } from "../actions/run-pause.ts";
import { answerQuestion, retryRun, runTask, stopRun } from "../actions/runs.ts";
import {
  addSchedule,
  pauseSchedule,
  removeSchedule,
  resumeSchedule,
  updateSchedule,
} from "../actions/schedules.ts";
import { clearScratchpad, editScratchpad, updateScratchpad } from "../actions/scratchpad.ts";
import { searchAction } from "../actions/search.ts";
import { endOtherSessions, endSession } from "../actions/sessions.ts";
import {
  createStudio,
  joinStudio,
  removeMember,
  updateMemberRole,
  updateStudio,
} from "../actions/studios.ts";
import {
  addToStudio,
  archiveSubagent,
  createSubagent,
  pauseSubagent,
  removeFromStudio,
  resumeSubagent,
  unarchiveSubagent,
  updateSubagent,
} from "../actions/subagents.ts";
import {
  pauseSubscription,
  removeSubscription,
  resumeSubscription,
  subscribe,
  unsubscribe,
} from "../actions/subscriptions.ts";
import { deleteTestCase, saveTestCase, updateTestCaseExpectations } from "../actions/test-cases.ts";
import { callToolAction } from "../actions/tool-calls.ts";
import {
  acceptToolChangeAction,
  addToolConnection,
  disconnectToolConnection,
  signInToolConnection,
  testToolConnection,
} from "../actions/tool-connections.ts";
import { setToolLevel } from "../actions/tool-grants.ts";
import { setToolHosts } from "../actions/tool-hosts.ts";
import {
  confirmTwoFactor,
  renewRecoveryCodesAction,
  startTwoFactor,
  turnOffTwoFactor,
} from "../actions/two-factor.ts";
import { setTwoFactorPolicy } from "../actions/two-factor-policy.ts";
import { sendTestDelivery } from "../actions/webhook-test.ts";
import {
  createWebhook,
  deleteWebhook,
  disableWebhook,
  enableWebhook,
  rotateWebhookSecret,
  setWebhookSignature,
} from "../actions/webhooks.ts";
import {
  refreshModels,
  setAgentLimits,
  setAgentsEnabled,
  setDefaultCapabilities,
} from "../actions/workspace-agent-settings.ts";
import { setHumanOnly } from "../actions/workspace-agents.ts";
import { changeRole } from "../actions/workspace-roles.ts";
import { removeSsoProvider, setSsoProvider } from "../actions/workspace-sso.ts";
import { agentGuard, agentPolicy } from "../agents/policy/policy.ts";
import { agentExperimentPage, agentExperimentsPage } from "../pages/agent-experiments.ts";
import { agentMemoryPage } from "../pages/agent-memory.ts";
import { agentSettingsPage } from "../pages/agent-settings.ts";
import { agentVersionPage, agentVersionsPage } from "../pages/agent-versions.ts";
import { agentsDirectoryPage } from "../pages/agents-directory.ts";
import { apiTokenPage } from "../pages/api-token.ts";
import { agentPendingPage, approvalsPage, pendingPage } from "../pages/approvals.ts";
import { commitmentPage, commitmentsPage } from "../pages/commitments.ts";
import { decisionPage, decisionsPage } from "../pages/decisions.ts";
import { hostnamesPage } from "../pages/hostnames.ts";
import { invitationsPage } from "../pages/invitations.ts";
import { mentionablePage } from "../pages/mentionable.ts";
import { notePage, notesPage } from "../pages/notes.ts";
import {
  notificationSettingsPage,
  outgoingWebhookPage,
  outgoingWebhooksPage,
} from "../pages/notification-settings.ts";
import { notificationsPage } from "../pages/notifications.ts";
import { profilePage, searchPage, whoamiPage } from "../pages/people.ts";
import { personAccessPage } from "../pages/person-access.ts";
import { providerKeysPage, studioProviderKeysPage } from "../pages/provider-keys.ts";
import { reviewLinkPage } from "../pages/review-link.ts";
import { runPage } from "../pages/run-page.ts";
import { runStepPage } from "../pages/run-step.ts";
import { runFormPage, runsPage } from "../pages/runs.ts";
import { runsInboxPage } from "../pages/runs-inbox.ts";
import { schedulesPage } from "../pages/schedules.ts";
import { securityPage } from "../pages/security.ts";
import { settingsPage, tokensPage } from "../pages/settings.ts";
import { homePage, membersPage, studioPage, studiosPage } from "../pages/studios.ts";
import { subagentPage, subagentsPage } from "../pages/subagents.ts";
import { subscriptionsPage } from "../pages/subscriptions.ts";
import { testCasePage, testCasesPage } from "../pages/test-cases.ts";
import {
  studioToolChangesPage,
  studioToolConnectionPage,
  studioToolConnectionsPage,
  toolChangesPage,
  toolConnectionPage,
  toolConnectionsPage,
} from "../pages/tool-connections.ts";
import { toolHostsPage } from "../pages/tool-hosts.ts";
import { toolsPage } from "../pages/tools.ts";
import { agentUsagePage, pricingPage, studioUsagePage, usagePage } from "../pages/usage.ts";
import { webhooksPage } from "../pages/webhooks.ts";
import { workspaceAgentsPage } from "../pages/workspace-agents.ts";
import { peoplePage } from "../pages/workspace-people.ts";
import { workspaceSignInPage } from "../pages/workspace-sign-in.ts";
import { workspaceSsoPage } from "../pages/workspace-sso.ts";
import { createRegistry } from "../registry/registry.ts";
import type { ActionDef } from "../registry/types.ts";

export const pages = [
  homePage,
  whoamiPage,
  studiosPage,
  studioPage,
  membersPage,
  notesPage,
  notePage,
  decisionsPage,
  decisionPage,
  commitmentsPage,
  commitmentPage,
  notificationsPage,
  searchPage,
  profilePage,
  agentsDirectoryPage,
  mentionablePage,
  settingsPage,
  tokensPage,
  apiTokenPage,
  providerKeysPage,
  studioProviderKeysPage,
  subagentsPage,
  subagentPage,
  runFormPage,
  runsPage,
  runPage,
  runStepPage,
  runsInboxPage,
  subscriptionsPage,
  agentSettingsPage,
  agentMemoryPage,
  agentVersionsPage,
  agentVersionPage,
  testCasesPage,
  testCasePage,
  agentExperimentsPage,
  agentExperimentPage,
  schedulesPage,
  agentPendingPage,
  pendingPage,
  approvalsPage,
  agentUsagePage,
  usagePage,
  studioUsagePage,
  pricingPage,
  webhooksPage,
  workspaceAgentsPage,
  notificationSettingsPage,
  outgoingWebhooksPage,
  outgoingWebhookPage,
  reviewLinkPage,
  securityPage,
  peoplePage,
  personAccessPage,
  hostnamesPage,
  invitationsPage,
  workspaceSsoPage,
  workspaceSignInPage,
  toolsPage,
  toolConnectionsPage,
  toolConnectionPage,
  toolChangesPage,
  studioToolConnectionsPage,
  studioToolConnectionPage,
  studioToolChangesPage,
  toolHostsPage,
];

export const actions = [
  createStudio,
  joinStudio,
  updateStudio,
  updateMemberRole,
  removeMember,
  createNote,
  updateNote,
  pinNote,
  unpinNote,
  confirmRead,
  addComment,
  createDecision,
  addOption,
  vote,
  createCommitment,
  joinCommitment,
  subscribe,
  unsubscribe,
  pauseSubscription,
  resumeSubscription,
  removeSubscription,
  dismiss,
  dismissAll,
  searchAction,
  updateProfile,
  createApiTokenAction,
  revokeApiToken,
  updateScratchpad,
  editScratchpad,
  clearScratchpad,
  clearAgentLabel,
  createSubagent,
  updateSubagent,
  addToStudio,
  removeFromStudio,
  pauseSubagent,
  resumeSubagent,
  archiveSubagent,
  unarchiveSubagent,
  transferSubagent,
  setMemberRuns,
  runTask,
  stopRun,
  pauseRun,
  resumeRun,
  retryRun,
  replayRun,
  answerQuestion,
  setCapabilities,
  setToolLevel,
  addRule,
  tryRule,
  removeRule,
  restoreAgentVersion,
  saveTestCase,
  updateTestCaseExpectations,
  deleteTestCase,
  startExperimentAction,
  addSchedule,
  updateSchedule,
  pauseSchedule,
  resumeSchedule,
  removeSchedule,
  approveAction,
  rejectAction,
  addApiKey,
  testApiKey,
  revokeApiKey,
  setAgentApiKey,
  setCostLimit,
  setModelPrice,
  removeModelPrice,
  createWebhook,
  rotateWebhookSecret,
  setWebhookSignature,
  sendTestDelivery,
  disableWebhook,
  enableWebhook,
  deleteWebhook,
  setHumanOnly,
  setNotifications,
  muteAgentMentions,
  unmuteAgentMentions,
  createOutgoingWebhook,
  enableOutgoingWebhook,
  disableOutgoingWebhook,
  deleteOutgoingWebhook,
  testOutgoingWebhook,
  confirmOutgoingWebhook,
  approveFromLink,
  rejectFromLink,
  setAgentsEnabled,
  setAgentLimits,
  setDefaultCapabilities,
  refreshModels,
  changePassword,
  renamePasskey,
  removePasskey,
  startTwoFactor,
  confirmTwoFactor,
  renewRecoveryCodesAction,
  turnOffTwoFactor,
  endSession,
  endOtherSessions,
  deactivatePerson,
  reactivatePerson,
  changeRole,
  addHostname,
  removeHostname,
  invitePeopleAction,
  revokeInvitationAction,
  setInviteLinkAction,
  setSsoProvider,
  removeSsoProvider,
  setTwoFactorPolicy,
  callToolAction,
  addToolConnection,
  testToolConnection,
  acceptToolChangeAction,
  signInToolConnection,
  disconnectToolConnection,
  setToolHosts,
];

/**
 * The actions, those more pages offer first (ties as defined): the order an agent's typed
 * tools (capabilities.ts runActions) and MCP's tool list take them in, so when its tools'
 * share of the prompt is full, what it can do in the most places is typed.
 */
function byReach(all: ActionDef[]): ActionDef[] {
  const reach = new Map<string, number>();
  for (const p of pages) for (const name of p.actions) reach.set(name, (reach.get(name) ?? 0) + 1);
  return all
    .map((a, i) => ({ a, i, n: reach.get(a.name) ?? 0 }))
    .sort((x, y) => y.n - x.n || x.i - y.i)
    .map((x) => x.a);
}

export const registry = createRegistry(pages, byReach(actions), {
  guard: agentGuard,
  policy: agentPolicy,
  stepUp: sessionStepUp,
});
